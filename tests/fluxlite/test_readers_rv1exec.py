"""Tests of the rv1exec reader, parse_rv1exec and the idset/hostlist codecs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fluxlite.api import Engine
from fluxlite.errors import GraphFormatError
from fluxlite.readers import (
    decode_hostlist,
    decode_idset,
    encode_idset,
    graph_to_jgf,
    load_graph,
    parse_rv1exec,
)
from tests.conftest import RESOURCE, need

RV1 = RESOURCE / "rv1exec"


def r_doc(rlite: list[dict], nodelist: list[str] | None = None, **extra: object) -> bytes:
    ex: dict[str, object] = {"R_lite": rlite, "starttime": 0, "expiration": 100}
    if nodelist is not None:
        ex["nodelist"] = nodelist
    ex.update(extra)
    return orjson.dumps({"version": 1, "execution": ex})


def test_tiny_rv1exec_graph_layout() -> None:
    """cluster0, then per rank a node followed by its cores then gpus, uniq_id in creation order."""
    g = load_graph(need(RV1 / "tiny_rv1exec.json"), format="rv1exec")
    names = [g.v_name[v] for v in g.vertices()]
    assert names[:3] == ["cluster0", "node0", "core0"]
    assert names[17:23] == ["core15", "gpu0", "gpu1", "gpu2", "gpu3", "node1"]
    assert [g.v_uniq[v] for v in g.vertices()] == list(range(len(g)))
    node1 = g.vertex_by_path("/cluster0/node1")
    assert node1 is not None and (g.v_rank[node1], g.v_id[node1], g.v_basename[node1]) == (1, 1, "node")
    gpu = g.vertex_by_path("/cluster0/node1/gpu3")
    assert gpu is not None and (g.v_rank[gpu], g.v_id[gpu], g.v_size[gpu]) == (1, 3, 1)
    assert g.v_rank[g.roots["containment"]] == -1
    assert len(g) == 1 + 2 * (1 + 16 + 4)


def test_rank_to_host_mapping_and_properties() -> None:
    """The i-th smallest rank gets the i-th host; properties land on the nodes of their ranks."""
    text = r_doc(
        [{"rank": "5,9", "children": {"core": "0-1"}}, {"rank": "2", "children": {"gpu": "0"}}],
        ["fluke[10-11]", "login3"],
        properties={"amd": "5", "big": "2,9"},
    )
    r = parse_rv1exec(text)
    assert r.hostnames == {2: "fluke10", 5: "fluke11", 9: "login3"}
    assert list(r.ranks) == [5, 9, 2]
    g = load_graph(text, format="rv1exec")
    assert [g.v_name[v] for v in g.children(g.roots["containment"])] == ["fluke11", "login3", "fluke10"]
    n = g.vertex_by_path("/cluster0/login3")
    assert n is not None and (g.v_id[n], g.v_basename[n], g.properties(n)) == (3, "login", {"big": ""})
    assert g.properties(g.vertex_by_path("/cluster0/fluke11")) == {"amd": ""}  # type: ignore[arg-type]


def test_parse_cancel_documents() -> None:
    """parse_rv1exec gives ranks -> {type: ids}, nodelist, times, without building a graph."""
    r = parse_rv1exec(need(RV1 / "cancel" / "ranks_cancel_crossracks.json").read_bytes())
    assert list(r.ranks) == [17, 18, 19]
    assert r.ranks[18]["gpu"] == (0, 1) and len(r.ranks[18]["core"]) == 36
    assert r.nodelist == ("node17", "node18", "node19")
    assert (r.starttime, r.expiration) == (0.0, 1000000.0)


def test_partial_cancel_needs_no_nodelist() -> None:
    """require_nodelist=False accepts R with only R_lite, as Fluxion's partial cancel does."""
    r = parse_rv1exec(r_doc([{"rank": "3", "children": {"core": "0"}}]), require_nodelist=False)
    assert r.ranks == {3: {"core": (0,)}} and r.hostnames == {}


def test_rv1exec_to_jgf_and_back() -> None:
    """An R-built graph round-trips through JGF."""
    g = load_graph(need(RV1 / "tiny_rv1exec.json"), format="rv1exec")
    g2 = load_graph(graph_to_jgf(g), format="jgf")
    assert [g2.vertex_dict(v) for v in g2.vertices()] == [g.vertex_dict(v) for v in g.vertices()]


BAD = [
    ("malformed json", b'{"version": 1,', "invalid JSON"),
    ("not object", b"[1]", "R: expected an object, got array"),
    ("version 2", orjson.dumps({"version": 2, "execution": {}}), "version: unsupported R version 2"),
    ("no execution", orjson.dumps({"version": 1}), "missing required key 'execution'"),
    (
        "no R_lite",
        orjson.dumps({"version": 1, "execution": {"nodelist": []}}),
        "missing required key 'R_lite'",
    ),
    (
        "negative rank",
        r_doc([{"rank": "-1", "children": {"core": "0"}}], ["n0"]),
        'execution.R_lite[0].rank: invalid idset "-1"',
    ),
    (
        "descending ids",
        r_doc([{"rank": "0", "children": {"core": "3-1"}}], ["n0"]),
        'execution.R_lite[0].children.core: invalid idset "3-1"',
    ),
    (
        "ids not string",
        r_doc([{"rank": "0", "children": {"core": 3}}], ["n0"]),
        "execution.R_lite[0].children.core: expected an idset string, got number",
    ),
    (
        "bad hostlist",
        r_doc([{"rank": "0", "children": {}}], ["n[0-"]),
        'execution.nodelist[0]: invalid hostlist "n[0-"',
    ),
    ("too few hosts", r_doc([{"rank": "0-2", "children": {}}], ["n[0-1]"]), "2 host(s) for 3 rank(s)"),
    (
        "rank twice",
        r_doc([{"rank": "0", "children": {}}, {"rank": "0-1", "children": {}}], ["n[0-1]"]),
        "execution.R_lite[1].rank: rank 0 is listed more than once",
    ),
    ("no nodelist", r_doc([{"rank": "0", "children": {}}]), "missing required key 'nodelist'"),
    (
        # "core1" id 0 and "core" id 10 both name core10: one path twice on rank 0
        "same path on one rank",
        r_doc([{"rank": "0", "children": {"core": "10", "core1": "0"}}], ["n0"]),
        'rank 0, vertex "core10": duplicate vertex: path /cluster0/n0/core10 is already on rank 0',
    ),
    (
        "bad property",
        r_doc([{"rank": "0", "children": {}}], ["n0"], properties={"x": "a"}),
        'execution.properties.x: invalid idset "a"',
    ),
    ("empty", b"  ", "empty document"),
]


@pytest.mark.parametrize(("case", "text", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_r_documents(case: str, text: bytes, expected: str, tmp_path: Path) -> None:
    """Each bad R raises one GraphFormatError line naming the file and element."""
    path = tmp_path / "R.json"
    path.write_bytes(text)
    with pytest.raises(GraphFormatError) as info:
        load_graph(path, format="rv1exec")
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and expected in msg and "\n" not in msg, msg


def test_idset_codec() -> None:
    """idsets decode to sorted distinct ids and encode back compactly."""
    assert decode_idset("") == []
    assert decode_idset("[0-2,5,3]") == [0, 1, 2, 3, 5]
    assert decode_idset("7,7") == [7]
    assert encode_idset([5, 0, 1, 2, 3, 9]) == "0-3,5,9"
    for bad in ("a", "1-", "-1", "3-1", "1,,2"):
        with pytest.raises(ValueError):
            decode_idset(bad)


def test_hostlist_codec() -> None:
    """hostlists expand in order and keep zero padding; malformed ones are rejected."""
    assert decode_hostlist("node[0-2],login1") == ["node0", "node1", "node2", "login1"]
    assert decode_hostlist("n[08-10]x") == ["n08x", "n09x", "n10x"]
    assert decode_hostlist("a[1,3-4]b") == ["a1b", "a3b", "a4b"]
    for bad in ("n[1-", "n]", "n[]", "n[2-1]", "n[a]", "n[[1]]"):
        with pytest.raises(ValueError):
            decode_hostlist(bad)


def test_load_into_graph_with_root_is_refused() -> None:
    """R cannot be loaded into a graph that already has a containment root."""
    text = r_doc([{"rank": "0", "children": {"core": "0"}}], ["n0"])
    g = load_graph(text, format="rv1exec")
    with pytest.raises(GraphFormatError, match="already has a containment root"):
        load_graph(text, format="rv1exec", graph=g)


# --------------------------------------------------------------------------- ranks sharing a host
# `flux start --test-size=4` runs four brokers on one machine: R names one host for ranks 0-3.
# Fluxion's path index holds a vector of vertices per path, and its rv1exec reader keys a vertex
# by (path, rank): each rank gets its own node vertex and subtree, under the same paths.

SLOT2 = """version: 9999
resources:
  - type: node
    count: {nodes}
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: core
            count: 2
attributes:
  system:
    duration: 3600
tasks:
  - command: [app]
    slot: default
    count:
      per_slot: 1
"""


def one_host_r(nodelist: str = "fluke7,fluke7,fluke7,fluke7", ranks: str = "0-3") -> bytes:
    return r_doc([{"rank": ranks, "children": {"core": "0-1"}}], [nodelist], properties={"big": "1,3"})


@pytest.mark.parametrize("nodelist", ["fluke7,fluke7,fluke7,fluke7", "fluke[7,7,7,7]"])
def test_ranks_sharing_a_host_get_one_subtree_each(nodelist: str) -> None:
    """Four node vertices named fluke7 (ranks 0-3), each with its own cores, sharing the paths."""
    g = load_graph(one_host_r(nodelist), format="rv1exec")
    assert len(g) == 1 + 4 * 3
    nodes = g.vertices_by_path("/cluster0/fluke7")
    assert [g.v_rank[v] for v in nodes] == [0, 1, 2, 3]
    assert all((g.v_name[v], g.v_basename[v], g.v_id[v]) == ("fluke7", "fluke", 7) for v in nodes)
    assert [g.properties(v) for v in nodes] == [{}, {"big": ""}, {}, {"big": ""}]
    for n in nodes:  # each node holds the cores of its own rank
        assert [(g.v_name[c], g.v_rank[c]) for c in g.children(n)] == [
            ("core0", g.v_rank[n]),
            ("core1", g.v_rank[n]),
        ]
        assert [g.path(c) for c in g.children(n)] == ["/cluster0/fluke7/core0", "/cluster0/fluke7/core1"]
    assert g.vertex_by_path("/cluster0/fluke7") == nodes[0]
    assert g.vertex_at("/cluster0/fluke7/core1", 2) == g.children(nodes[2])[1]
    assert g.vertex_at("/cluster0/fluke7/core1", 4) is None
    assert len(g.by_path) == 4  # distinct paths: cluster0, fluke7, core0, core1 (Fluxion's by_path count)
    assert [g.v_uniq[v] for v in g.vertices()] == list(range(len(g)))


def test_removing_one_sharer_keeps_the_path_index() -> None:
    """Removing the first vertex of a shared path hands the path to the next; the last one unshares it."""
    g = load_graph(one_host_r("h,h", "0-1"), format="rv1exec")
    a, b = g.vertices_by_path("/cluster0/h")
    g.remove_vertices(g.subtree(a))
    assert g.vertex_by_path("/cluster0/h") == b and g.vertices_by_path("/cluster0/h") == [b]
    assert g.shared == {}
    g.remove_vertices(g.subtree(b))
    assert g.vertices_by_path("/cluster0/h") == [] and g.vertex_by_path("/cluster0/h/core0") is None


def test_shared_paths_round_trip_through_jgf() -> None:
    """The graph written as JGF loads back with the same vertices, ranks and shared paths."""
    g = load_graph(one_host_r(), format="rv1exec")
    g2 = load_graph(graph_to_jgf(g), format="jgf")
    assert [g2.vertex_dict(v) for v in g2.vertices()] == [g.vertex_dict(v) for v in g.vertices()]
    assert g2.shared == g.shared


def test_jgf_refuses_a_path_twice_on_one_rank() -> None:
    """Sharing a path needs distinct ranks: the same path and rank twice stays a duplicate."""
    doc = orjson.loads(graph_to_jgf(load_graph(one_host_r("h,h", "0-1"), format="rv1exec")))
    doc["graph"]["nodes"][4]["metadata"]["rank"] = 0  # rank 1's node claims rank 0
    with pytest.raises(GraphFormatError, match="duplicate path /cluster0/h on rank 0"):
        load_graph(orjson.dumps(doc), format="jgf")


def _engine(**kw: object) -> Engine:
    from fluxlite.readers import load_graph as lg

    return Engine(lg(one_host_r(), format="rv1exec"), **kw)  # type: ignore[arg-type]


def _job_ranks(eng: Engine, jobid: int) -> list[int]:
    g = eng.graph
    return sorted({g.v_rank[v] for v in eng.traverser.job_vertices(jobid) if g.v_type[v] == "node"})


@pytest.mark.parametrize(("policy", "fmt"), [("first", "rv1"), ("low", "rv1_nosched"), ("high", "rv1")])
def test_matching_on_shared_host_and_rv1_round_trip(policy: str, fmt: str) -> None:
    """Matches pick distinct ranks; the R written back names their ranks and the host once per rank,
    and it reads back (rv1exec reader) and re-allocates (update rv1exec) as the same ranks."""
    from fluxlite.jobspec import parse_jobspec

    eng = _engine(policy=policy)
    spec = parse_jobspec(SLOT2.format(nodes=2))
    r1 = eng.match(spec, fmt=fmt)
    first = _job_ranks(eng, r1.jobid)
    assert r1.ok and len(first) == 2
    doc = orjson.loads(r1.text)
    assert doc["execution"]["R_lite"] == [{"rank": encode_idset(first), "children": {"core": "0-1"}}]
    assert doc["execution"]["nodelist"] == ["fluke[7,7]"]
    if fmt == "rv1":  # the scheduling key's JGF names each vertex's own rank
        got = sorted(
            (n["metadata"]["paths"]["containment"], n["metadata"]["rank"])
            for n in doc["scheduling"]["graph"]["nodes"]
        )
        assert got == [("/cluster0", -1)] + [
            (f"/cluster0/fluke7{sfx}", r) for sfx in ("", "/core0", "/core1") for r in first
        ]
    r2 = eng.match(spec, fmt="rv1_nosched")
    assert r2.ok and sorted(first + _job_ranks(eng, r2.jobid)) == [0, 1, 2, 3]
    assert not eng.match(spec).ok  # all four ranks are taken
    # the job's R is a graph of its own: two fluke7 nodes with the job's ranks
    sub = load_graph(r1.text, format="rv1exec")
    assert [sub.v_rank[v] for v in sub.vertices_by_path("/cluster0/fluke7")] == first
    # and allocates exactly those ranks on a fresh engine
    fresh = _engine(policy=policy)
    fresh.update_allocate(7, r1.text, format="rv1exec", fmt=None)
    assert _job_ranks(fresh, 7) == first
    assert fresh.match(spec).ok and not fresh.match(spec).ok


def test_jgf_output_carries_ranks_and_updates_back() -> None:
    """-F jgf names each vertex's rank; `update allocate jgf` and partial cancel find the vertex of that rank."""
    from fluxlite.jobspec import parse_jobspec

    eng = _engine()
    res = eng.match(parse_jobspec(SLOT2.format(nodes=2)), fmt="jgf")
    lo, hi = _job_ranks(eng, res.jobid)
    nodes = orjson.loads(res.text)["graph"]["nodes"]
    got = sorted((n["metadata"]["paths"]["containment"], n["metadata"]["rank"]) for n in nodes)
    assert got == [("/cluster0", -1)] + [
        (f"/cluster0/fluke7{sfx}", r) for sfx in ("", "/core0", "/core1") for r in (lo, hi)
    ]
    fresh = _engine()
    fresh.update_allocate(5, res.text, format="jgf", fmt=None)
    assert _job_ranks(fresh, 5) == [lo, hi]
    before = fresh.save_state()
    restored = Engine.restore_state(before)
    assert _job_ranks(restored, 5) == [lo, hi] and restored.save_state() == before
    # release one rank only: a JGF of that rank's vertices
    part = {"graph": {"nodes": [n for n in nodes if n["metadata"]["rank"] == hi], "edges": []}}
    assert fresh.partial_cancel(5, orjson.dumps(part), "jgf") is False
    assert _job_ranks(fresh, 5) == [lo]


def test_repl_status_property_remove_on_shared_path() -> None:
    """get/set-status and get/set-property act on every rank at the path (one line each), as
    Fluxion's commands loop over its by_path vector; `remove PATH true` removes the last one."""
    from tests.fluxlite.repl_helpers import Session

    s = Session(_engine())
    path = "/cluster0/fluke7"
    assert s.run(f"get-status {path}")[0] == f"{path} is up\n" * 4
    s.run(f"set-status {path} down")
    assert s.run(f"get-status {path}")[0] == f"{path} is down\n" * 4
    assert s.engine.traverser.nodes_up == 0
    s.run(f"set-status {path} up")
    out = s.run(f"get-property {path}")[0]
    assert out.splitlines() == [
        f"No properties were found for {path} (vtx's uniq_id=1).",
        "big=",
        f"No properties were found for {path} (vtx's uniq_id=7).",
        "big=",
    ]
    s.run(f"set-property {path} rack=a")
    # rank 0: rack; rank 1: big, rack; rank 2: rack; rank 3: big, rack
    lines = ["rack=a", "big=", "rack=a", "rack=a", "big=", "rack=a"]
    assert s.run(f"get-property {path}")[0].splitlines() == lines
    out, _, err = s.run(f"remove {path} true")
    assert err == ""
    g = s.engine.graph
    assert [g.v_rank[v] for v in g.vertices_by_path(path)] == [0, 1, 2]
    assert [g.v_rank[v] for v in g.vertices_by_path(path + "/core1")] == [0, 1, 2]


def test_update_rv1exec_takes_node_exclusively_only_when_whole_rank_listed() -> None:
    """Fluxion's rv1exec updater: a rank's node is allocated (x) when every other vertex of the
    rank is listed, shared (s) when only part is; ranks sharing a host are updated separately."""
    eng = _engine()
    whole = r_doc([{"rank": "1", "children": {"core": "0-1"}}], ["fluke7"])
    part = r_doc([{"rank": "2", "children": {"core": "1"}}], ["fluke7"])
    out1 = eng.update_allocate(1, whole, format="rv1exec").text
    out2 = eng.update_allocate(2, part, format="rv1exec").text
    assert "fluke7[1:x]" in out1 and out1.count("core") == 2
    assert "fluke7[1:s]" in out2 and out2.count("core") == 1
    assert (_job_ranks(eng, 1), _job_ranks(eng, 2)) == ([1], [2])


def test_update_rv1exec_unknown_vertex_fails_and_changes_nothing() -> None:
    """A listed vertex the rank does not have (asic0) fails the whole update; state unchanged."""
    from fluxlite.errors import CommandError

    eng = _engine()
    before = eng.save_state()
    bad = r_doc(
        [{"rank": "0", "children": {"core": "0-1"}}, {"rank": "1", "children": {"asic": "0"}}], ["fluke[7,7]"]
    )
    with pytest.raises(CommandError, match="couldn't find vertex in graph for asic0 on rank 1"):
        eng.update_allocate(1, bad, format="rv1exec")
    assert eng.save_state() == before and eng.jobs == {}
