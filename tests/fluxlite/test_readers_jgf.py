"""Tests of the JGF reader: loading, attaching subgraphs, records, writing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluxlite.errors import GraphFormatError
from fluxlite.graph import DOWN, ResourceGraph
from fluxlite.readers import (
    DuplicateRootError,
    attach_jgf,
    generate_graph,
    graph_to_jgf,
    load_graph,
    locate_vertices,
    read_vertices,
)
from fluxlite.readers.jgf import JgfReader
from tests.conftest import RESOURCE, need

JGFS = RESOURCE / "jgfs"


def snapshot(g: ResourceGraph) -> tuple[Any, ...]:
    """Everything a reader can change, as plain values."""
    return (
        list(g.v_type),
        list(g.v_basename),
        list(g.v_name),
        list(g.v_id),
        list(g.v_uniq),
        list(g.v_rank),
        list(g.v_size),
        list(g.v_unit),
        list(g.v_status),
        {k: dict(v) for k, v in g.v_props.items()},
        {ss: dict(c) for ss, c in g.paths.items()},
        dict(g.by_path),
        {r: list(v) for r, v in g.by_rank.items()},
        dict(g.roots),
        list(g.e_src),
        list(g.e_dst),
        list(g.e_ss),
        list(g.e_rel),
        {ss: [list(x) for x in col] for ss, col in g.out.items()},
        {ss: list(c) for ss, c in g.parent_edge.items()},
        g.rx.num_nodes(),
        g.rx.num_edges(),
        g.next_uniq_id(),
        g.version,
    )


def jnode(key: str, path: str, type: str = "core", **md: Any) -> dict[str, Any]:
    return {"id": key, "metadata": {"type": type, "paths": {"containment": path}, **md}}


def jdoc(nodes: list[dict[str, Any]], edges: list[tuple[str, str]]) -> bytes:
    return orjson.dumps(
        {
            "graph": {
                "nodes": nodes,
                "edges": [
                    {"source": s, "target": t, "metadata": {"subsystem": "containment"}} for s, t in edges
                ],
            }
        }
    )


def test_load_file_order_uniq_ids_and_roots() -> None:
    """Vertices are created in document order with the document's uniq_id; roots come from one-slash paths."""
    g = load_graph(need(JGFS / "elastic" / "node-test.json"), format="jgf")
    assert len(g) == 41
    assert [g.v_uniq[v] for v in list(g.vertices())[:3]] == [221, 222, 223]
    root = g.roots["containment"]
    assert g.path(root) == "/medium0"
    node = g.vertex_by_path("/medium0/rack0/node0")
    assert node is not None
    assert [g.v_name[c] for c in g.children(node)] == ["socket0", "socket1"]


def test_load_power_has_two_subsystems() -> None:
    """A multi-subsystem JGF sets a root and paths for every subsystem."""
    g = load_graph(need(JGFS / "power.json"), format="jgf")
    assert {ss: g.v_name[v] for ss, v in g.roots.items()} == {"containment": "power0", "power": "powerpanel0"}
    node = g.vertex_by_path("/powerpanel0/pdu0/node0")
    assert node == g.vertex_by_path("/power0/rack0/node0")
    assert node is not None and g.v_rank[node] == 0


def test_jgf_round_trip_is_identity() -> None:
    """load -> graph_to_jgf -> load keeps every vertex, edge and the written bytes."""
    g = load_graph(need(JGFS / "tiny.json"), format="jgf")
    out = graph_to_jgf(g)
    g2 = load_graph(out, format="jgf")
    assert snapshot(g2)[:-1] == snapshot(g)[:-1]
    assert graph_to_jgf(g2) == out


def test_properties_and_status_survive_round_trip() -> None:
    """Properties and a down status are written and read back."""
    g = generate_graph(nodes=2, sockets=1, cores=1)
    node = g.vertex_by_path("/cluster0/node1")
    assert node is not None
    g.set_property(node, "arch", "x86")
    g.v_status[node] = DOWN
    g2 = load_graph(graph_to_jgf(g), format="jgf")
    n2 = g2.vertex_by_path("/cluster0/node1")
    assert n2 is not None and g2.properties(n2) == {"arch": "x86"} and g2.v_status[n2] == DOWN


def test_generate_round_trips_through_jgf() -> None:
    """generate -> JGF -> load is equal, for racks, gpus and memory too, except the unit: Fluxion's
    JGF reader fetches ``unit`` but ``add_vertex`` never sets it (resource_reader_jgf.cpp), so a
    JGF-loaded memory vertex has none although the JGF (and the GRUG-generated graph) say GB."""
    g = generate_graph(racks=2, nodes=3, sockets=2, cores=4, gpus=1, memory=2)
    text = graph_to_jgf(g)
    assert b'"unit": "GB"' in text
    g2 = load_graph(text, format="jgf")
    unit = 7  # the v_unit column of snapshot()
    assert snapshot(g2)[:unit] + snapshot(g2)[unit + 1 : -1] == snapshot(g)[:unit] + snapshot(g)[unit + 1 : -1]
    assert "GB" in g.v_unit and set(g2.v_unit) == {""}


def test_attach_reuses_existing_and_adds_new() -> None:
    """attach_jgf reuses vertices by path+rank, creates the rest, and returns them in order."""
    g = load_graph(need(JGFS / "elastic" / "node-test.json"), format="jgf")
    before = len(g)
    new = attach_jgf(g, need(JGFS / "elastic" / "node-add-test.json").read_bytes())
    assert len(new) == 39 and len(g) == before + 39
    assert [g.v_uniq[v] for v in new[:3]] == [329, 330, 331]
    rack = g.vertex_by_path("/medium0/rack0")
    assert rack is not None
    assert [g.v_name[c] for c in g.children(rack)] == ["node0", "node3"]
    snap = snapshot(g)
    assert attach_jgf(g, need(JGFS / "elastic" / "node-test.json").read_bytes()) == []
    assert snapshot(g) == snap


def test_attach_randomized_document_order() -> None:
    """The order of nodes in the subgraph decides creation order; edges decide child order."""
    g = load_graph(need(JGFS / "elastic" / "node-test.json"), format="jgf")
    new = attach_jgf(g, need(JGFS / "elastic" / "node-add-test-random.json").read_bytes())
    assert g.v_uniq[new[0]] == 359
    node3 = g.vertex_by_path("/medium0/rack0/node3")
    assert node3 is not None and g.v_type[node3] == "node"


def test_attach_second_root_reports_fluxion_message() -> None:
    """A subgraph with another containment root fails with Fluxion's message and changes nothing."""
    g = load_graph(need(JGFS / "elastic" / "node-test.json"), format="jgf")
    snap = snapshot(g)
    with pytest.raises(DuplicateRootError) as info:
        attach_jgf(g, need(JGFS / "power.json").read_bytes(), source="power.json")
    assert info.value.fluxion_message == (
        "add_graph_metadata: failed to add root metadata for containment subsystem. Possible duplicate root."
    )
    assert str(info.value).startswith('power.json: nodes[0] (id "0"): add_graph_metadata')
    assert snapshot(g) == snap


def _base() -> ResourceGraph:
    return generate_graph(nodes=2, sockets=1, cores=2)


SOCK0 = "/cluster0/node0/socket0"
GOOD_NODES = [
    jnode("100", SOCK0, "socket", rank=0, name="socket0", id=0),
    jnode("101", SOCK0 + "/gpu0", "gpu", rank=0),
]

ATTACH_BAD = [
    ("malformed json", b'{"graph": {"nodes": [', "invalid JSON"),
    ("dangling edge", jdoc(GOOD_NODES, [("100", "999")]), 'edges[0] ("100" -> "999"): target "999"'),
    (
        "rank conflict",
        jdoc([jnode("100", SOCK0, "socket", rank=7)], []),
        "already belongs to vertex socket0 with rank 0",
    ),
    (
        "duplicate path",
        jdoc([*GOOD_NODES, jnode("102", SOCK0 + "/gpu0", "gpu", rank=0)], []),
        "duplicate path",
    ),
    (
        "late second root",
        jdoc([*GOOD_NODES, jnode("103", "/other0", "cluster")], [("100", "101")]),
        "failed to add root metadata for containment",
    ),
    (
        "bad type late",
        jdoc([*GOOD_NODES, {"id": "104", "metadata": {"type": 3, "paths": {}}}], []),
        'nodes[2] (id "104"): metadata.type: expected a string',
    ),
]


@pytest.mark.parametrize(("case", "text", "expected"), ATTACH_BAD, ids=[a[0] for a in ATTACH_BAD])
def test_failed_attach_changes_nothing(case: str, text: bytes, expected: str) -> None:
    """Every failing attach raises one GraphFormatError line and leaves the graph exactly as it was."""
    g = _base()
    snap = snapshot(g)
    with pytest.raises(GraphFormatError) as info:
        attach_jgf(g, text, source="sub.json")
    assert expected in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("sub.json: ")
    assert snapshot(g) == snap


def test_attach_good_subgraph_adds_edges_touching_new_vertices() -> None:
    """Edges between two existing vertices are skipped; edges to new ones are appended."""
    g = _base()
    sock = g.vertex_by_path(SOCK0)
    assert sock is not None
    before = list(g.children(sock))
    new = attach_jgf(g, jdoc(GOOD_NODES, [("100", "101")]))
    assert len(new) == 1 and g.v_name[new[0]] == "gpu101"
    assert g.children(sock) == [*before, new[0]]
    assert g.parent(new[0]) == sock


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["gpu", "core", "socket"]), st.integers(0, 3), st.integers(-1, 2), st.booleans()
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_attach_is_all_or_nothing(rows: list[tuple[str, int, int, bool]], dangling: bool) -> None:
    """Random subgraphs either attach completely or fail without changing the graph."""
    g = _base()
    snap = snapshot(g)
    nodes = [jnode("s", SOCK0, "socket", rank=0, name="socket0", id=0)]
    edges = []
    for k, (rtype, idx, rank, under_root) in enumerate(rows):
        path = f"/x{idx}" if under_root and k == 0 else f"{SOCK0}/{rtype}{idx}"
        nodes.append(jnode(f"n{k}", path, rtype, rank=rank, uniq_id=1000 + k))
        edges.append(("s", f"n{k}"))
    if dangling:
        edges.append(("s", "missing"))
    try:
        new = attach_jgf(g, jdoc(nodes, edges))
    except GraphFormatError:
        assert snapshot(g) == snap
    else:
        assert len(g) == len(snap[0]) + len(new)
        for v in new:
            assert g.vertex_by_path(g.path(v)) == v


def test_read_vertices_without_building_a_graph() -> None:
    """read_vertices returns records (paths, rank, type, size, uniq_id) and tolerates dangling edges."""
    recs = read_vertices(need(JGFS / "elastic" / "node-1-partial-cancel.json").read_bytes())
    assert recs[0].paths == {"containment": "/tiny0/rack0/node0"}
    assert (recs[0].type, recs[0].rank, recs[0].size, recs[0].uniq_id) == ("node", 0, 1, 2)


def test_locate_vertices_checks_like_fluxion() -> None:
    """locate_vertices finds each record's vertex and rejects a rank or attribute mismatch."""
    g = load_graph(need(JGFS / "elastic" / "tiny-partial-cancel.json"), format="jgf")
    ok = need(JGFS / "elastic" / "node-1-partial-cancel.json").read_bytes()
    vids = locate_vertices(g, ok)
    assert [g.path(v) for v in vids[:2]] == ["/tiny0/rack0/node0", "/tiny0/rack0/node0/socket0"]
    with pytest.raises(GraphFormatError, match="nonexistent path"):
        locate_vertices(g, need(JGFS / "elastic" / "node-1-partial-cancel-invalid.json").read_bytes())


def test_rank_argument_is_refused() -> None:
    """JGF carries its own ranks: load with rank != -1 is an error (Fluxion: ENOTSUP)."""
    with pytest.raises(GraphFormatError, match="rank 3 given"):
        JgfReader().load(jdoc([jnode("0", "/c0", "cluster")], []), rank=3)


BAD_LOAD = [
    ("no root", jdoc([jnode("1", "/c0/a")], []), "graph: no root vertex"),
    (
        "two roots",
        jdoc([jnode("0", "/c0", "cluster"), jnode("1", "/c1", "cluster")], []),
        'nodes[1] (id "1"): add_graph_metadata: failed to add root metadata for containment subsystem',
    ),
    (
        "paths not object",
        orjson.dumps(
            {"graph": {"nodes": [{"id": "12", "metadata": {"type": "core", "paths": "x"}}], "edges": []}}
        ),
        'nodes[0] (id "12"): metadata.paths: expected an object, got string',
    ),
    (
        "dangling source",
        jdoc([jnode("0", "/c0", "cluster")], [("7", "0")]),
        'edges[0] ("7" -> "0"): source "7"',
    ),
    ("duplicate id", jdoc([jnode("0", "/c0", "cluster"), jnode("0", "/c0/x")], []), "duplicate node id"),
]


@pytest.mark.parametrize(("case", "text", "expected"), BAD_LOAD, ids=[b[0] for b in BAD_LOAD])
def test_bad_jgf_files(case: str, text: bytes, expected: str, tmp_path: Path) -> None:
    """Each bad JGF file raises one GraphFormatError line naming the file and element."""
    path = tmp_path / "g.json"
    path.write_bytes(text)
    with pytest.raises(GraphFormatError) as info:
        load_graph(path, format="jgf")
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and expected in msg and "\n" not in msg, msg


def test_fast_writer_matches_generic_layout() -> None:
    """The direct-text JGF writer equals the generic orjson-based Fluxion layout."""
    import jgf

    g = load_graph(need(JGFS / "power.json"), format="jgf")
    node = g.vertex_by_path("/power0/rack0/node0")
    assert node is not None
    g.set_property(node, 'we"ird', "a,b:c\\d")
    g.v_status[node] = DOWN
    g.v_name[node] = 'node"0'
    fast = graph_to_jgf(g)
    assert fast == jgf.dumps(orjson.loads(graph_to_jgf(g, style="compact")))
    assert orjson.loads(graph_to_jgf(g, style="indent")) == orjson.loads(fast)
