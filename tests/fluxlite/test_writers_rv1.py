"""rlite / rv1 / rv1_nosched: R_lite grouping, nodelist, properties, layout and quirks."""

from __future__ import annotations

import errno
from collections.abc import Mapping

import pytest

from fluxlite.graph import ResourceGraph
from fluxlite.writers import (
    EmitError,
    JgfWriter,
    MatchWriter,
    RLiteWriter,
    Rv1NoschedWriter,
    Rv1Writer,
    format_find_output,
)
from tests.conftest import RESOURCE, needs

RV1EXEC = RESOURCE / "rv1exec"

NodeSpec = tuple[str, int, list[int], list[int], Mapping[str, str] | None]


def emit_cluster(writers: list[MatchWriter], nodes: list[NodeSpec]) -> ResourceGraph:
    """Build cluster0 -> nodes -> socket0 -> cores/gpus and emit it in post-order to each writer."""
    g = ResourceGraph()
    root = g.add_vertex("cluster", "cluster", "cluster0", 0, paths={"containment": "/cluster0"})
    top_edges = []
    for name, rank, cores, gpus, props in nodes:
        n = g.add_vertex(
            "node",
            "node",
            name,
            int(name.lstrip("node") or 0),
            rank=rank,
            properties=props,
            paths={"containment": f"/cluster0/{name}"},
        )
        s = g.add_vertex(
            "socket", "socket", "socket0", 0, rank=rank, paths={"containment": f"/cluster0/{name}/socket0"}
        )
        leaves = [
            g.add_vertex(
                "core",
                "core",
                f"core{i}",
                i,
                rank=rank,
                paths={"containment": f"/cluster0/{name}/socket0/core{i}"},
            )
            for i in cores
        ]
        leaves += [
            g.add_vertex(
                "gpu",
                "gpu",
                f"gpu{i}",
                i,
                rank=rank,
                paths={"containment": f"/cluster0/{name}/socket0/gpu{i}"},
            )
            for i in gpus
        ]
        for w in writers:
            for leaf in leaves:
                w.emit_vtx("", g, leaf, 1, None, True)
                w.emit_edg("", g, g.add_edge(s, leaf))
            w.emit_vtx("", g, s, 1, None, False)
            w.emit_edg("", g, g.add_edge(n, s))
            w.emit_vtx("", g, n, 1, None, False)
        top_edges.append(g.add_edge(root, n))
    for w in writers:
        for e in top_edges:
            w.emit_edg("", g, e)
        w.emit_vtx("", g, root, 1, None, False)
    return g


TINY_RV1EXEC = (
    '{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-15", "gpu": "0-3"}}], '
    '"nodelist": ["node[0-1]"], "starttime": 0, "expiration": 0}}\n'
)


def test_rv1_nosched_two_identical_nodes() -> None:
    """Two equal nodes share one R_lite entry and one hostlist (tiny_rv1exec.json)."""
    w = Rv1NoschedWriter()
    emit_cluster(
        [w],
        [
            ("node0", 0, list(range(16)), [0, 1, 2, 3], None),
            ("node1", 1, list(range(16)), [0, 1, 2, 3], None),
        ],
    )
    w.emit_tm(0, 0)
    assert w.emit() == TINY_RV1EXEC
    assert w.empty() and w.emit() == ""


@needs(RV1EXEC)
@pytest.mark.parametrize(
    ("fname", "node", "rank", "ncores", "ngpus", "end"),
    [
        ("tiny_rv1exec.json", None, None, 16, 4, 0),
        ("cancel/rank1_cancel.json", "node1", 1, 16, 4, 1000000),
        ("cancel/rank1_cancel_nonexcl.json", "node1", 1, 8, 2, 1000000),
        ("cancel/rank0_cancel_nonexcl.json", "node0", 0, 8, 2, 1000000),
        ("cancel/rank1_cancel_invalid.json", "node1", -1, 16, 4, 1000000),
    ],
)
def test_rv1_nosched_matches_rv1exec_files(
    fname: str, node: str | None, rank: int | None, ncores: int, ngpus: int, end: int
) -> None:
    """rv1_nosched reproduces the R documents of the conformance rv1exec directory byte for byte."""
    if node is None:
        nodes: list[NodeSpec] = [
            (f"node{i}", i, list(range(ncores)), list(range(ngpus)), None) for i in (0, 1)
        ]
    else:
        assert rank is not None
        nodes = [(node, rank, list(range(ncores)), list(range(ngpus)), None)]
    w = Rv1NoschedWriter()
    emit_cluster([w], nodes)
    w.emit_tm(0, end)
    assert w.emit() == (RV1EXEC / fname).read_text()


def test_rlite_groups_by_signature_text() -> None:
    """Entries are ordered by their children text; ranks fold; empty kinds are left out."""
    w = RLiteWriter()
    emit_cluster(
        [w],
        [
            ("node0", 0, [0, 1, 2, 3], [], None),
            ("node1", 1, [0, 1], [0], None),
            ("node2", 2, [3, 2, 1, 0], [], None),
            ("node3", 3, [], [], None),
        ],
    )
    assert w.emit() == (
        '[{"rank": "1", "children": {"core": "0-1", "gpu": "0"}}, {"rank": "0,2", "children": {"core": "0-3"}}]\n'
    )


def test_rv1_nosched_properties_and_nodelist() -> None:
    """properties map "key[=value]" to ranks and sit between nodelist and starttime."""
    w = Rv1NoschedWriter()
    emit_cluster(
        [w],
        [
            ("node5", 5, [0], [], {"arch": "x86"}),
            ("node6", 6, [0], [], {"arch": "x86"}),
            ("node9", 9, [0], [], {"arch": "arm", "fast": ""}),
        ],
    )
    w.emit_tm(100, 3700)
    assert w.emit() == (
        '{"version": 1, "execution": {"R_lite": [{"rank": "5-6,9", "children": {"core": "0"}}], '
        '"nodelist": ["node[5-6,9]"], "properties": {"arch=arm": "9", "arch=x86": "5-6", "fast": "9"}, '
        '"starttime": 100, "expiration": 3700}}\n'
    )


def test_rv1_layout_with_scheduling_and_attributes() -> None:
    """rv1 = version, execution, scheduling (the JGF object), attributes.system.scheduler."""
    w = Rv1Writer()
    j = JgfWriter()
    emit_cluster([w, j], [("node1", 1, [2, 3], [], None)])
    w.emit_tm(0, 3600)
    w.emit_attrs("queue", "batch")
    jgf = j.emit().rstrip("\n")
    assert w.emit() == (
        '{"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "2-3"}}], '
        '"nodelist": ["node1"], "starttime": 0, "expiration": 3600}, "scheduling": ' + jgf + ", "
        '"attributes": {"system": {"scheduler": {"queue": "batch"}}}}\n'
    )


def test_rv1_emit_json_round_trips_text() -> None:
    """emit_json returns the same document emit prints, keys in order."""
    a, b = Rv1Writer(), Rv1Writer()
    emit_cluster([a, b], [("node0", 0, [0], [0], {"p": "1"})])
    obj = b.emit_json()
    assert isinstance(obj, dict) and list(obj) == ["version", "execution", "scheduling"]
    assert list(obj["execution"]) == ["R_lite", "nodelist", "properties", "starttime", "expiration"]
    assert format_find_output(obj) == a.emit()


def test_rlite_without_node_is_einval() -> None:
    """rlite with nothing gathered fails with EINVAL, as Fluxion's emit does."""
    w = RLiteWriter()
    with pytest.raises(EmitError) as exc:
        w.emit()
    assert exc.value.errno == errno.EINVAL and exc.value.strerror == "Invalid argument"
    with pytest.raises(EmitError):
        w.emit_json()


def test_rv1_formats_print_nothing_without_node() -> None:
    """rv1 and rv1_nosched print nothing (no error) when no node was gathered."""
    for w in (Rv1Writer(), Rv1NoschedWriter()):
        assert w.empty() and w.emit() == "" and w.emit_json() is None


def test_unclaimed_cores_carry_over_like_fluxion() -> None:
    """Core ids emitted without a node stay pending and join the next node; reset drops them."""
    g = ResourceGraph()
    stray = g.add_vertex("core", "core", "core7", 7)
    w = RLiteWriter()
    w.emit_vtx("", g, stray, 1, None, True)
    assert w.empty()
    emit_cluster([w], [("node0", 0, [0], [], None)])
    assert w.emit() == '[{"rank": "0", "children": {"core": "0,7"}}]\n'
    w.emit_vtx("", g, stray, 1, None, True)
    w.reset()
    emit_cluster([w], [("node0", 0, [0], [], None)])
    assert w.emit() == '[{"rank": "0", "children": {"core": "0"}}]\n'


def test_rv1_attributes_persist_until_reset() -> None:
    """Attributes stay set across emits (Fluxion never clears them); reset() does."""
    w = Rv1Writer()
    w.emit_attrs("queue", "debug")
    emit_cluster([w], [("node0", 0, [0], [], None)])
    assert '"attributes": {"system": {"scheduler": {"queue": "debug"}}}' in w.emit()
    emit_cluster([w], [("node0", 0, [0], [], None)])
    assert '"queue": "debug"' in w.emit()
    w.reset()
    emit_cluster([w], [("node0", 0, [0], [], None)])
    assert '"attributes"' not in w.emit()
