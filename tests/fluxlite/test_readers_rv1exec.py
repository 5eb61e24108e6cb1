"""Tests of the rv1exec reader, parse_rv1exec and the idset/hostlist codecs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fluxlite.errors import GraphFormatError
from fluxlite.readers import (
    decode_hostlist,
    decode_idset,
    encode_idset,
    graph_to_jgf,
    load_graph,
    parse_rv1exec,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
RV1 = SHARED / "fluxion-conformance" / "data" / "resource" / "rv1exec"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared test data not available: {path}")
    return path


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
    ("duplicate host", r_doc([{"rank": "0-1", "children": {}}], ["n0", "n0"]), "duplicate path /cluster0/n0"),
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
