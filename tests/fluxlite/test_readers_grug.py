"""Tests of the GRUG reader against Fluxion's own graphs and rules."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

import jgf
from fluxlite.errors import GraphFormatError
from fluxlite.graph import ResourceGraph
from fluxlite.readers import graph_to_jgf, load_graph
from fluxlite.readers.grug import GrugReader, parse_recipe
from tests.conftest import BENCH, RESOURCE, need

RES = RESOURCE


def vertex_rows(g: ResourceGraph) -> list[tuple]:
    return [
        (
            g.v_type[v],
            g.v_basename[v],
            g.v_name[v],
            g.v_id[v],
            g.v_uniq[v],
            g.v_rank[v],
            g.v_size[v],
            g.v_unit[v],
            g.vertex_paths(v),
        )
        for v in g.vertices()
    ]


def edge_rows(g: ResourceGraph) -> list[tuple[int, int, str]]:
    return [(g.v_uniq[g.e_src[e]], g.v_uniq[g.e_dst[e]], g.e_ss[e]) for e in g.edges()]


def test_grug_l0_equals_fluxion_jgf_l0() -> None:
    """GRUG L0 builds exactly the vertices (uniq_id, rank, ...) and edges of Fluxion's JGF L0."""
    g = load_graph(need(BENCH / "graphs" / "L0.graphml"))
    d = jgf.read(need(BENCH / "jgf" / "L0.json").read_bytes())
    expected = [
        (n.type, n.basename, n.name, n.id, n.uniq_id, n.rank, n.size, n.unit, n.paths) for n in d.nodes
    ]
    assert vertex_rows(g) == expected
    assert edge_rows(g) == [(int(e.source), int(e.target), e.subsystem) for e in d.edges]


def test_grug_l4_writes_fluxion_jgf_bytes() -> None:
    """graph_to_jgf of GRUG L4 is byte-for-byte Fluxion's L4 JGF."""
    g = load_graph(need(BENCH / "graphs" / "L4.graphml"))
    assert graph_to_jgf(g) == need(BENCH / "jgf" / "L4.json").read_bytes()


@pytest.mark.parametrize("name", ["tiny", "power"])
def test_grug_matches_fluxion_jgf_of_same_recipe(name: str) -> None:
    """Vertices, paths (all subsystems) and per-vertex out-edge order match Fluxion's JGF."""
    g = load_graph(need(RES / "grugs" / f"{name}.graphml"))
    d = jgf.read(need(RES / "jgfs" / f"{name}.json").read_bytes())

    def key(paths: dict[str, str]) -> tuple:
        return tuple(sorted(paths.items()))

    got = {
        key(g.vertex_paths(v)): (g.v_type[v], g.v_name[v], g.v_id[v], g.v_size[v], g.v_unit[v])
        for v in g.vertices()
    }
    exp = {key(n.paths): (n.type, n.name, n.id, n.size, n.unit) for n in d.nodes}
    assert got == exp
    label = {v: min(g.vertex_paths(v).values()) for v in g.vertices()}
    got_out = {
        (label[v], ss): [label[c] for c in g.children(v, ss)]
        for v in g.vertices()
        for ss in g.subsystems()
        if g.children(v, ss)
    }
    by_key = {n.key: min(n.paths.values()) for n in d.nodes}
    exp_out: dict[tuple[str, str], list[str]] = {}
    for e in d.edges:
        exp_out.setdefault((by_key[e.source], e.subsystem), []).append(by_key[e.target])
    assert got_out == exp_out


GRUGS = [
    "tiny",
    "medium",
    "power",
    "resv_test",
    "coarse_iobw",
    "mt-storage/mtl0",
    "mt-storage/mtl1",
    "mt-storage/mtl2",
    "mt-storage/mtl3",
]


@pytest.mark.parametrize("name", GRUGS)
def test_conformance_recipes_load_with_roots_and_paths(name: str) -> None:
    """Every conformance recipe loads; each vertex has a path per subsystem it is in; roots are set."""
    g = load_graph(need(RES / "grugs" / f"{name}.graphml"))
    assert "containment" in g.roots
    root = g.roots["containment"]
    assert g.path(root).count("/") == 1
    for v in g.vertices():
        assert g.vertex_paths(v), g.v_name[v]
        if g.path(v):
            assert g.path(v).startswith(g.path(root))
        for ss in g.subsystems():
            if g.children(v, ss) or g.parent(v, ss) is not None:
                assert g.path(v, ss), (g.v_name[v], ss)
    assert len(g.by_path) == sum(len(col) for col in g.paths.values())


def test_tiny_ids_names_ranks() -> None:
    """id_scope=1 numbers cores per node; nodes get ranks 0,1 and their subtree inherits them."""
    g = load_graph(need(RES / "grugs" / "tiny.graphml"))
    node1 = g.vertex_by_path("/tiny0/rack0/node1")
    assert node1 is not None and g.v_rank[node1] == 1
    cores = [c for s in g.children(node1) for c in g.children(s) if g.v_type[c] == "core"]
    assert [g.v_id[c] for c in cores] == list(range(36))
    assert {g.v_rank[c] for c in cores} == {1}
    mem = g.vertex_by_path("/tiny0/rack0/node0/socket1/memory7")
    assert mem is not None and (g.v_size[mem], g.v_unit[mem]) == (2, "GB")
    assert g.v_rank[g.roots["containment"]] == -1
    # a node's subtree is contiguous in creation order (uniq_id)
    sub = sorted(g.v_uniq[v] for v in g.subtree(node1))
    assert sub == list(range(sub[0], sub[0] + len(sub)))


def test_power_subsystem_paths_and_roots() -> None:
    """ASSOCIATE_IN / ASSOCIATE_BY_PATH_IN link pdus and nodes in the power subsystem."""
    g = load_graph(need(RES / "grugs" / "power.graphml"))
    assert g.v_name[g.roots["power"]] == "powerpanel0"
    node = g.vertex_by_path("/powerpanel0/pdu1/node18")
    assert node is not None and g.path(node) == "/power0/rack1/node18"
    pdu1 = g.parent(node, "power")
    assert pdu1 is not None and g.path(pdu1) == "/power0/rack1/pdu1"
    assert [g.v_name[c] for c in g.children(node, "power")] == ["power0", "power1"]


def test_mtl3_association_reparents_in_containment() -> None:
    """An ASSOCIATE_IN edge in the containment recipe adds a second parent and the new path."""
    g = load_graph(need(RES / "grugs" / "mt-storage" / "mtl3.graphml"))
    unit = g.vertex_by_path("/mtl3-test0/mtl2unit0/mtl1unit1")
    assert unit is not None
    parents = sorted(g.v_name[g.e_src[e]] for e in g.rx.in_edge_indices(unit))
    assert parents == ["mtl2unit0", "rack1"]


def test_grug_round_trips_through_jgf() -> None:
    """GRUG -> JGF -> JGF reader gives the same vertices and edges, but no units (Fluxion's JGF
    reader keeps none: see test_generate_round_trips_through_jgf)."""
    for name in ("tiny", "power"):
        g = load_graph(need(RES / "grugs" / f"{name}.graphml"))
        g2 = load_graph(graph_to_jgf(g), format="jgf")
        unit = 7  # the unit field of vertex_rows()
        assert [r[:unit] + r[unit + 1 :] for r in vertex_rows(g2)] == [r[:unit] + r[unit + 1 :] for r in vertex_rows(g)]
        assert {r[unit] for r in vertex_rows(g2)} == {""}
        assert edge_rows(g2) == edge_rows(g)
        assert {k: g2.v_uniq[v] for k, v in g2.roots.items()} == {k: g.v_uniq[v] for k, v in g.roots.items()}


def test_fixed_rank_and_second_load_reuses_root() -> None:
    """rank>=0 gives every vertex that rank; loading again into the graph reuses the root."""
    text = need(BENCH / "graphs" / "L4.graphml").read_bytes()
    g = GrugReader().load(text, rank=5)
    assert {g.v_rank[v] for v in g.vertices()} == {5}
    with pytest.raises(GraphFormatError, match="duplicate path"):
        GrugReader().load(text, g)


L0_TEXT = (BENCH / "graphs" / "L0.graphml").read_text() if (BENCH / "graphs" / "L0.graphml").exists() else ""

BAD = [
    ("malformed xml", lambda t: t.replace("</graphml>", ""), "line 31, column 1: malformed XML"),
    ("not graphml", lambda t: "<foo/>", "not a GraphML document"),
    (
        "unknown attribute",
        lambda t: t.replace(
            '<key id="root"',
            '<key id="foo" for="node" attr.name="foo" attr.type="int"><default>1</default></key><key id="root"',
        ),
        'key "foo": unknown GRUG attribute "foo"',
    ),
    (
        "undeclared key",
        lambda t: t.replace('<data key="basename">node</data>', '<data key="bogus">x</data>'),
        'node "node": data for undeclared key "bogus"',
    ),
    (
        "bad integer",
        lambda t: t.replace('<data key="multi_scale">128</data>', '<data key="multi_scale">lots</data>'),
        'edge "cluster2node": multi_scale: expected an integer, got "lots"',
    ),
    (
        "int out of range",
        lambda t: t.replace(
            '<data key="multi_scale">128</data>', '<data key="multi_scale">9999999999</data>'
        ),
        'edge "cluster2node": multi_scale: 9999999999 is out of range',
    ),
    (
        "unknown method",
        lambda t: t.replace('<data key="multi_scale">2</data>', '<data key="gen_method">DIVIDE</data>'),
        'edge "node2socket": unknown generation method "DIVIDE"',
    ),
    ("no root", lambda t: t.replace('<data key="root">1</data>', ""), "no root"),
    (
        "unknown target",
        lambda t: t.replace('target="node"', 'target="nodes"'),
        'edge "cluster2node": target "nodes"',
    ),
    (
        "duplicate node",
        lambda t: t.replace('<node id="socket">', '<node id="node">'),
        'node "node": duplicate node id',
    ),
    (
        "duplicate paths",
        lambda t: t.replace(
            '<data key="id_scope">1</data><data key="multi_scale">16</data>',
            '<data key="id_scope">-1</data><data key="multi_scale">16</data>',
        ),
        'edge "socket2core": generates a duplicate path /cluster0/node0/socket0/core',
    ),
    (
        "root with parent",
        lambda t: t.replace(
            '<data key="type">node</data>', '<data key="root">1</data><data key="type">node</data>'
        ),
        'target "node" has root=1',
    ),
    (
        "undirected",
        lambda t: t.replace('edgedefault="directed"', 'edgedefault="undirected"'),
        'edgedefault must be "directed"',
    ),
    (
        "empty type",
        lambda t: t.replace('<data key="type">socket</data>', '<data key="type"></data>'),
        'node "socket": type: must not be empty',
    ),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_recipes_give_one_line_error(case: str, mutate, expected: str, tmp_path: Path) -> None:
    """Each broken recipe raises one GraphFormatError line naming the file and element."""
    need(BENCH / "graphs" / "L0.graphml")
    path = tmp_path / "bad.graphml"
    path.write_text(mutate(L0_TEXT))
    with pytest.raises(GraphFormatError) as info:
        load_graph(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: "), msg
    assert expected in msg, msg
    assert "\n" not in msg


def test_missing_file_is_named() -> None:
    """A missing recipe file is a GraphFormatError naming the path."""
    with pytest.raises(GraphFormatError, match=r"/no/such\.graphml: no such file"):
        load_graph("/no/such.graphml")


def test_parse_recipe_keeps_document_order() -> None:
    """The recipe keeps pools and edges in document order with GraphML defaults."""
    r = parse_recipe(need(BENCH / "graphs" / "L0.graphml").read_bytes())
    assert [p.key for p in r.pools] == ["cluster", "node", "socket", "core"]
    assert [(e.key, e.multi_scale, e.id_scope, e.gen_method) for e in r.edges] == [
        ("cluster2node", 128, 0, "MULTIPLY"),
        ("node2socket", 2, 0, "MULTIPLY"),
        ("socket2core", 16, 1, "MULTIPLY"),
    ]


@pytest.mark.slow
def test_large_grug_load_time_and_memory() -> None:
    """N16384 (573k vertices) loads within 8 s and well under 2 GiB peak RSS."""
    path = need(BENCH / "graphs" / "N16384.graphml")
    t0 = time.process_time()
    g = load_graph(path)
    elapsed = time.process_time() - t0
    assert len(g) == 573_441 and g.num_edges == 573_440
    assert elapsed <= 8.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1536 * 1024
