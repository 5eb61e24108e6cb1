"""Tests of the standalone jgf package: parsing, validation, defaults, writing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jgf
from tests.conftest import BENCH, RESOURCE, need

BENCH_JGF = BENCH / "jgf"
CONF_JGF = RESOURCE / "jgfs"


def doc(nodes: list[dict[str, Any]], edges: list[dict[str, Any]] | None = None) -> bytes:
    return orjson.dumps({"graph": {"nodes": nodes, "edges": edges or []}})


def node(key: str, **md: Any) -> dict[str, Any]:
    md.setdefault("type", "core")
    md.setdefault("paths", {"containment": f"/c0/{key}"})
    return {"id": key, "metadata": md}


def test_reads_fluxion_bench_file() -> None:
    """The L0 JGF written by Fluxion validates with every field as written."""
    d = jgf.read(need(BENCH_JGF / "L0.json").read_bytes())
    assert len(d.nodes) == 4481 and len(d.edges) == 4480
    n = d.nodes[36]
    assert (n.key, n.type, n.name, n.id, n.uniq_id, n.rank) == ("36", "node", "node1", 1, 36, 1)
    assert n.paths == {"containment": "/cluster0/node1"}
    assert d.edges[0] == jgf.Edge("0", "1", "containment", None, 0)


@pytest.mark.parametrize("name", ["tiny.json", "power.json"])
def test_reads_conformance_files(name: str) -> None:
    """Fluxion's conformance JGF files validate, including multi-subsystem paths."""
    d = jgf.read(need(CONF_JGF / name).read_bytes())
    assert d.nodes and d.edges
    assert all(n.paths for n in d.nodes)


def test_defaults_follow_fluxion() -> None:
    """Absent metadata gets Fluxion's defaults (uniq_id from id, name from basename+id...)."""
    d = jgf.read(doc([node("17", type="core")]))
    n = d.nodes[0]
    assert (n.uniq_id, n.id, n.basename, n.name) == (17, 17, "core", "core17")
    assert (n.rank, n.size, n.unit, n.exclusive, n.status, n.properties) == (-1, 1, "", False, 0, {})


def test_node_id_defaults_to_hostname_suffix() -> None:
    """A node without an id takes the trailing digits of its name."""
    d = jgf.read(doc([node("3", type="node", name="fluke42")]))
    assert (d.nodes[0].id, d.nodes[0].uniq_id) == (42, 3)


def test_unset_markers_count_as_absent() -> None:
    """id -2, uniq_id -1 and size -1 are Fluxion's "unset" values and get defaults."""
    d = jgf.read(doc([node("5", id=-2, uniq_id=-1, size=-1)]))
    n = d.nodes[0]
    assert (n.id, n.uniq_id, n.size) == (5, 5, 1)


def test_uniq_id_inferred_like_stoll() -> None:
    """The node id string is read as C's stoll would (leading digits)."""
    assert jgf.read(doc([node("12abc")])).nodes[0].uniq_id == 12


def test_status_accepts_int_and_words() -> None:
    """status is 0/1, and "up"/"down" are accepted too."""
    d = jgf.read(doc([node("1", status=1), node("2", status="up"), node("3", status="down")]))
    assert [n.status for n in d.nodes] == [1, 0, 1]


def test_edge_forms() -> None:
    """Current edges, edges without metadata and the legacy name form are accepted."""
    nodes = [node("0"), node("1")]
    edges = [
        {"source": "0", "target": "1", "metadata": {"subsystem": "power"}},
        {"source": "0", "target": "1"},
        {"source": "0", "target": "1", "metadata": {"name": {"containment": "contains", "ibnet": "conn"}}},
    ]
    d = jgf.read(doc(nodes, edges))
    assert [(e.subsystem, e.relation, e.index) for e in d.edges] == [
        ("power", None, 0),
        ("containment", None, 1),
        ("containment", "contains", 2),
        ("ibnet", "conn", 2),
    ]


def test_unknown_keys_are_ignored() -> None:
    """Like Fluxion, extra keys in nodes and metadata are not errors."""
    d = jgf.read(doc([{"id": "1", "label": "x", "metadata": {"type": "core", "paths": {}, "color": "red"}}]))
    assert d.nodes[0].type == "core"


def test_free_ranks_and_unchecked_edges() -> None:
    """free_ranks is kept; check_edges=False accepts edges to absent nodes."""
    raw = {"graph": {"nodes": [node("1")], "edges": [{"source": "0", "target": "1"}]}, "free_ranks": "0-3"}
    d = jgf.read(raw, check_edges=False)
    assert d.free_ranks == "0-3"
    with pytest.raises(jgf.JGFError):
        jgf.read(raw)


BAD: list[tuple[str, Any, str]] = [
    ("not json", b'{"graph": ', "invalid JSON at line 1"),
    ("not an object", b"[]", "document: expected an object, got array"),
    ("no graph", b'{"nodes": []}', "missing required key 'graph'"),
    ("no nodes", b'{"graph": {"edges": []}}', "missing required key 'nodes'"),
    ("no edges", b'{"graph": {"nodes": []}}', "missing required key 'edges'"),
    ("nodes not array", b'{"graph": {"nodes": {}, "edges": []}}', "graph.nodes: expected an array"),
    ("node not object", doc([5]), "nodes[0]: expected an object, got integer"),  # type: ignore[list-item]
    ("missing id", doc([{"metadata": {"type": "core", "paths": {}}}]), "nodes[0]: missing required key 'id'"),
    ("id not string", doc([{"id": 1, "metadata": {}}]), "nodes[0]: id: expected a string, got integer"),
    ("missing metadata", doc([{"id": "1"}]), "missing required key 'metadata'"),
    ("missing type", doc([{"id": "1", "metadata": {"paths": {}}}]), "missing required key 'type'"),
    (
        "paths not object",
        doc([node("12", paths="/a")]),
        'nodes[0] (id "12"): metadata.paths: expected an object',
    ),
    ("missing paths", doc([{"id": "1", "metadata": {"type": "core"}}]), "missing required key 'paths'"),
    ("relative path", doc([node("1", paths={"containment": "a/b"})]), "expected an absolute path"),
    (
        "path not string",
        doc([node("1", paths={"containment": 3})]),
        "metadata.paths.containment: expected a string",
    ),
    ("size string", doc([node("1", size="4")]), "metadata.size: expected an integer, got string"),
    ("size float", doc([node("1", size=1.5)]), "metadata.size: expected an integer, got number"),
    ("size negative", doc([node("1", size=-5)]), "metadata.size: must be >= 0"),
    ("rank bool", doc([node("1", rank=True)]), "metadata.rank: expected an integer, got boolean"),
    ("exclusive int", doc([node("1", exclusive=1)]), "metadata.exclusive: expected a boolean"),
    ("bad status", doc([node("1", status=7)]), "metadata.status: expected 0 (up) or 1 (down)"),
    ("properties array", doc([node("1", properties=[])]), "metadata.properties: expected an object or null"),
    ("property value", doc([node("1", properties={"a": 1})]), "metadata.properties.a: expected a string"),
    ("uninferable uniq", doc([node("abc")]), "cannot be inferred from id"),
    ("duplicate id", doc([node("1"), node("1")]), 'nodes[1] (id "1"): duplicate node id'),
    ("edge no source", doc([node("1")], [{"target": "1"}]), "edges[0]: missing required key 'source'"),
    (
        "edge dangling",
        doc([node("1")], [{"source": "1", "target": "2"}]),
        'edges[0] ("1" -> "2"): target "2"',
    ),
    (
        "edge bad subsystem",
        doc([node("1")], [{"source": "1", "target": "1", "metadata": {"subsystem": 3}}]),
        "metadata.subsystem: expected a string",
    ),
    (
        "legacy name not object",
        doc([node("1")], [{"source": "1", "target": "1", "metadata": {"name": "x"}}]),
        "metadata.name: expected an object",
    ),
]


@pytest.mark.parametrize(("case", "data", "expected"), BAD, ids=[b[0] for b in BAD])
def test_errors_name_the_element(case: str, data: Any, expected: str) -> None:
    """Each malformed document raises one JGFError line naming the element at fault."""
    with pytest.raises(jgf.JGFError) as info:
        jgf.read(data)
    msg = str(info.value)
    assert expected in msg, msg
    assert "\n" not in msg
    assert isinstance(info.value, ValueError)


def test_write_reproduces_fluxion_bytes() -> None:
    """Writing the nodes and edges of Fluxion's L4 JGF gives the same bytes."""
    raw = need(BENCH_JGF / "L4.json").read_bytes()
    d = jgf.read(raw)
    assert jgf.write([n.to_dict() for n in d.nodes], [e.to_dict() for e in d.edges]) == raw


def test_fluxion_style_spacing_outside_strings_only() -> None:
    """The Fluxion layout spaces separators but leaves string contents alone."""
    value = {"a": ["x,y:z", 'q"\\,:'], "b": {}}
    out = jgf.dumps(value)
    assert out == b'{"a": ["x,y:z", "q\\"\\\\,:"], "b": {}}'
    assert orjson.loads(out) == value
    assert jgf.dumps(value, style="compact") == orjson.dumps(value)


def test_node_dict_layout() -> None:
    """node_dict uses Fluxion's key order; properties and status only when set."""
    d = jgf.node_dict(uniq_id=3, type="core", name="core1", id=1, paths={"containment": "/c/core1"})
    assert list(d["metadata"]) == [
        "type",
        "basename",
        "name",
        "id",
        "uniq_id",
        "rank",
        "exclusive",
        "unit",
        "size",
        "paths",
    ]
    d2 = jgf.node_dict(uniq_id=3, type="core", name="c", id=1, paths={}, properties={"a": "b"}, status=1)
    assert list(d2["metadata"])[-3:] == ["properties", "paths", "status"]


def test_unserialisable_value_is_jgf_error() -> None:
    """Values JSON cannot hold raise JGFError, not a TypeError."""
    with pytest.raises(jgf.JGFError):
        jgf.dumps({"x": object()})


names = st.text(alphabet='abcxyz,:"\\', min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            names,
            st.integers(-1, 50),
            st.integers(0, 64),
            st.booleans(),
            st.dictionaries(names, names, max_size=2),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_write_read_round_trip(rows: list[tuple[str, int, int, bool, dict[str, str]]]) -> None:
    """Any node list written with node_dict reads back to the same records."""
    nodes = [
        jgf.node_dict(
            uniq_id=k,
            type="t" + name,
            name=name,
            id=k,
            rank=rank,
            size=size,
            exclusive=excl,
            properties=props,
            paths={"containment": f"/r/{k}"},
        )
        for k, (name, rank, size, excl, props) in enumerate(rows)
    ]
    edges = [jgf.edge_dict(0, k) for k in range(1, len(rows))]
    d = jgf.read(jgf.write(nodes, edges))
    assert [(n.name, n.rank, n.size, n.exclusive, n.properties) for n in d.nodes] == rows
    assert [n.to_dict() for n in d.nodes] == nodes
