"""jgf / jgf_shorthand: exact text, key order, find output and error behaviour."""

from __future__ import annotations

import errno
import json

import pytest

from fluxlite.graph import ResourceGraph
from fluxlite.writers import EmitError, JgfShorthandWriter, JgfWriter, create_writer, format_find_output
from tests.conftest import RESOURCE, needs

EXPECTED = RESOURCE / "expected"


def medium() -> tuple[ResourceGraph, int, int, int]:
    """medium0 -> rack0 with the uniq ids of the elastic tests (0 and 1)."""
    g = ResourceGraph()
    c = g.add_vertex("cluster", "medium", "medium0", 0, uniq_id=0, paths={"containment": "/medium0"})
    r = g.add_vertex("rack", "rack", "rack0", 0, uniq_id=1, paths={"containment": "/medium0/rack0"})
    return g, c, r, g.add_edge(c, r)


def test_two_vertex_match_exact_text() -> None:
    """rack0 + medium0 exclusive with one edge (elastic/009) prints exactly."""
    g, c, r, e = medium()
    w = JgfWriter()
    w.emit_vtx("", g, r, 1, None, True)
    w.emit_vtx("", g, c, 1, None, True)
    w.emit_edg("", g, e)
    assert w.emit() == (
        '{"graph": {"nodes": [{"id": "1", "metadata": {"type": "rack", "id": 0, "rank": -1, "exclusive": true, '
        '"paths": {"containment": "/medium0/rack0"}}}, {"id": "0", "metadata": {"type": "cluster", '
        '"basename": "medium", "id": 0, "rank": -1, "exclusive": true, "paths": {"containment": "/medium0"}}}], '
        '"edges": [{"source": "0", "target": "1"}]}}\n'
    )
    assert w.empty() and w.emit() == ""


def test_shared_vertex_has_no_exclusive_key() -> None:
    """A shared vertex omits "exclusive" (elastic/003)."""
    g, c, r, e = medium()
    w = JgfWriter()
    w.emit_vtx("", g, r, 1, None, False)
    w.emit_vtx("", g, c, 1, None, False)
    w.emit_edg("", g, e)
    assert '{"id": "1", "metadata": {"type": "rack", "id": 0, "rank": -1, "paths": ' in w.emit()


def test_size_and_agfilter_positions() -> None:
    """size follows exclusive when needs != 1; agfilter is last, sorted (remove/007, 010)."""
    g = ResourceGraph()
    m = g.add_vertex(
        "memory",
        "memory",
        "memory0",
        0,
        uniq_id=84,
        size=2,
        paths={"containment": "/tiny0/rack0/node0/socket0/memory0"},
    )
    s = g.add_vertex("socket", "socket", "socket0", 0, uniq_id=6, rank=1, paths={"containment": "/t/socket0"})
    e = g.add_edge(s, m)
    w = JgfWriter()
    w.emit_vtx("", g, m, 2, None, True)
    w.emit_vtx("", g, s, 1, {"gpu": "used:1, total:1", "core": "used:9, total:18"}, True)
    w.emit_edg("", g, e)
    assert w.emit() == (
        '{"graph": {"nodes": [{"id": "84", "metadata": {"type": "memory", "id": 0, "rank": -1, "exclusive": true, '
        '"size": 2, "paths": {"containment": "/tiny0/rack0/node0/socket0/memory0"}}}, {"id": "6", "metadata": '
        '{"type": "socket", "id": 0, "rank": 1, "exclusive": true, "paths": {"containment": "/t/socket0"}, '
        '"agfilter": {"core": "used:9, total:18", "gpu": "used:1, total:1"}}}], '
        '"edges": [{"source": "6", "target": "84"}]}}\n'
    )


def test_full_key_order_and_edge_metadata() -> None:
    """All optional keys in Fluxion's order (``emit_vtx_base``'s pack: type, basename, name, id, rank,
    properties, unit if not empty; then exclusive, size); non-containment edges carry their subsystem."""
    g = ResourceGraph()
    n = g.add_vertex(
        "node",
        "node",
        "big-node",
        3,
        uniq_id=7,
        rank=2,
        unit="",
        properties={"zeta": "1", "arch": "x86"},
        paths={"power": "/pdu0/big-node", "containment": "/c0/big-node"},
    )
    mem = g.add_vertex(
        "memory", "mem", "mem0", 0, uniq_id=8, size=16, unit="GB", paths={"containment": "/c0/m"}
    )
    e1 = g.add_edge(n, mem)
    e2 = g.add_edge(mem, n, "power", "supplies_to")
    w = JgfWriter()
    w.emit_vtx("", g, mem, 4, None, False)
    w.emit_vtx("", g, n, 0, None, True, {"label": "default"})
    w.emit_edg("", g, e1)
    w.emit_edg("", g, e2)
    assert w.emit() == (
        '{"graph": {"nodes": [{"id": "8", "metadata": {"type": "memory", "basename": "mem", "id": 0, "rank": -1, '
        '"unit": "GB", "size": 4, "paths": {"containment": "/c0/m"}}}, {"id": "7", "metadata": {"type": "node", '
        '"name": "big-node", "id": 3, "rank": 2, "properties": {"arch": "x86", "zeta": "1"}, "exclusive": true, '
        '"size": 0, "paths": {"containment": "/c0/big-node", "power": "/pdu0/big-node"}, '
        '"ephemeral": {"label": "default"}}}], "edges": [{"source": "7", "target": "8"}, '
        '{"source": "8", "target": "7", "metadata": {"subsystem": "power"}}]}}\n'
    )


def test_find_output_matches_emit_text() -> None:
    """format_find_output(emit_json()) prints the same line as emit()."""
    g, c, r, e = medium()
    w = JgfWriter()
    for _ in range(2):
        w.emit_vtx("", g, r, 1, {"core": "used:0, total:0"}, True)
        w.emit_vtx("", g, c, 1, None, True)
        w.emit_edg("", g, e)
    text = w.emit()
    for _ in range(2):
        w.emit_vtx("", g, r, 1, {"core": "used:0, total:0"}, True)
        w.emit_vtx("", g, c, 1, None, True)
        w.emit_edg("", g, e)
    obj = w.emit_json()
    assert isinstance(obj, dict) and list(obj["graph"]) == ["nodes", "edges"]
    assert format_find_output(obj) == text
    assert w.emit_json() is None


def test_vertices_without_edges_is_enoent_and_keeps_state() -> None:
    """Like Fluxion, JGF refuses a vertex list without edges (ENOENT) and keeps it."""
    g, c, _, e = medium()
    w = JgfWriter()
    w.emit_vtx("", g, c, 1, None, True)
    with pytest.raises(EmitError) as exc:
        w.emit()
    assert exc.value.errno == errno.ENOENT and exc.value.strerror == "No such file or directory"
    with pytest.raises(EmitError):
        w.emit_json()
    assert not w.empty()
    w.emit_edg("", g, e)
    assert w.emit().count('"id": "0"') == 1
    w.emit_vtx("", g, c, 1, None, True)
    w.reset()
    assert w.empty() and w.emit() == ""


def test_shorthand_differs_only_in_traversal_flag() -> None:
    """jgf_shorthand prints JGF and asks the traverser to skip exclusive subtrees."""
    g, c, r, e = medium()
    a, b = JgfWriter(), create_writer("jgf_shorthand")
    assert isinstance(b, JgfShorthandWriter)
    assert a.emit_exclusive_subtrees and not b.emit_exclusive_subtrees
    for w in (a, b):
        w.emit_vtx("", g, c, 1, None, True)
        w.emit_vtx("", g, r, 1, None, False)
        w.emit_edg("", g, e)
    assert a.emit() == b.emit()


def test_control_characters_escaped_like_jansson() -> None:
    """Names go through jansson's escaping (upper-case \\u00XX)."""
    g = ResourceGraph()
    v = g.add_vertex("node", "node", 'a"b\x1fc', 0, uniq_id=0)
    u = g.add_vertex("core", "core", "core0", 0, uniq_id=1)
    e = g.add_edge(v, u)
    w = JgfWriter()
    w.emit_vtx("", g, v, 1, None, False)
    w.emit_edg("", g, e)
    assert '"name": "a\\"b\\u001Fc"' in w.emit()


def graph_from_jgf(obj: dict) -> tuple[ResourceGraph, dict[str, int], list[int]]:
    """Rebuild the vertices and edges one expected JGF line mentions."""
    g = ResourceGraph()
    vids = {}
    for node in obj["graph"]["nodes"]:
        md = node["metadata"]
        base = md.get("basename", md["type"])
        vids[node["id"]] = g.add_vertex(
            md["type"],
            base,
            md.get("name", f"{base}{md['id']}"),
            md["id"],
            uniq_id=int(node["id"]),
            rank=md["rank"],
            unit=md.get("unit", ""),
            properties=md.get("properties"),
            paths=md.get("paths"),
        )
    eids = [
        g.add_edge(
            vids[e["source"]], vids[e["target"]], e.get("metadata", {}).get("subsystem", "containment")
        )
        for e in obj["graph"]["edges"]
    ]
    return g, vids, eids


def replay(w: JgfWriter, obj: dict, g: ResourceGraph, vids: dict[str, int], eids: list[int]) -> None:
    """Emit a JGF line's nodes then edges in their printed order."""
    for node in obj["graph"]["nodes"]:
        md = node["metadata"]
        w.emit_vtx("", g, vids[node["id"]], md.get("size", 1), md.get("agfilter"), md.get("exclusive", False))
    for e in eids:
        w.emit_edg("", g, e)


@needs(EXPECTED)
def test_every_conformance_jgf_line_reproduces() -> None:
    """Every JGF line of the expected outputs (match and find) is reproduced byte for byte."""
    nlines = 0
    for f in sorted(EXPECTED.glob("*/*.R.out")):
        for line in f.read_text().splitlines(keepends=True):
            if not line.startswith('{"graph"'):
                continue
            obj = json.loads(line)
            g, vids, eids = graph_from_jgf(obj)
            w = JgfWriter()
            replay(w, obj, g, vids, eids)
            assert w.emit() == line, f
            replay(w, obj, g, vids, eids)
            assert format_find_output(w.emit_json()) == line, f
            nlines += 1
    assert nlines >= 78
