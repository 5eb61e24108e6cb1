"""MatchGrow and shrink across a 3-level tree of real instance processes over real gRPC."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from fluxlite.errors import BusyError
from tests.hierarchy.helpers import Tree, chain, nodes_jobspec, short_tmpdir, socket_jobspec, start


@pytest.fixture(
    scope="module", params=[("unix", "deferred"), ("tcp", "sync")], ids=["unix-deferred", "tcp-sync"]
)
def tree(request: pytest.FixtureRequest) -> Iterator[Tree]:
    """root (8 nodes) -> mid (4 nodes) -> leaf (2 nodes): Unix sockets with deferred attach, loopback TCP without."""
    transport, attach = request.param
    with short_tmpdir() as d:
        t = start(
            d,
            chain(d, [8, 4, 2]),
            transport=transport,
            extra_args=["--sync-attach"] if attach == "sync" else [],
        )
        t.deferred = attach == "deferred"  # type: ignore[attr-defined]
        request.addfinalizer(t.close)
        yield t


def _free(t: Tree, name: str) -> dict[str, int]:
    return t.client(name).stat()["free"]


def _check_recount(t: Tree) -> None:
    for name in ("root", "mid", "leaf"):
        info = t.info(name)
        assert info["recount_errors"] == [], (name, info["recount_errors"][:5])


def _paths(jgf: bytes) -> set[str]:
    return {n["metadata"]["paths"]["containment"] for n in orjson.loads(jgf)["graph"]["nodes"]}


def test_addresses_match_transport(tree: Tree) -> None:
    """Instances listen on Unix sockets or on 127.0.0.1 only."""
    for name in ("root", "mid", "leaf"):
        addr = tree.address(name)
        assert addr.startswith("unix:/") or addr.startswith("127.0.0.1:")


def test_grow_climbs_to_root_and_back_down(tree: Tree) -> None:
    """A grow the leaf and mid cannot satisfy is matched at the root and allocated at every level."""
    leaf = tree.client("leaf")
    job = leaf.match_allocate(nodes_jobspec(2)).jobid  # the leaf is now full
    free_root0 = _free(tree, "root")
    # 2 nodes: mid has 2 free nodes of its own
    g1 = leaf.match_grow(job, nodes_jobspec(2))
    assert [t.outcome for t in g1.timings] == ["parent", "local"]
    # 1 node: mid is full now, so the root matches
    g2 = leaf.match_grow(job, nodes_jobspec(1))
    assert [t.outcome for t in g2.timings] == ["parent", "parent", "local"]
    assert [t.instance for t in g2.timings] == ["leaf", "mid", "root"]
    assert g2.vertices == 1 + 1 + 2 + 2 * 4 and g2.edges == g2.vertices - 1
    for t in g2.timings[:2]:
        assert t.upstream_s > 0 and t.server_s >= t.upstream_s
    leaf_t, mid_t = g2.timings[:2]
    if tree.deferred:  # type: ignore[attr-defined]
        # mid attached for its child after answering, and the leaf for its client's job (columns from
        # mid); Info waits for that attach and reports its time
        for name, t in (("mid", mid_t), ("leaf", leaf_t)):
            assert t.deferred and t.attach_update_s == 0, name
            assert tree.client(name).info()["last_deferred"]["attach_update_s"] > 0, name
    else:
        assert not mid_t.deferred and mid_t.attach_update_s > 0
        assert not leaf_t.deferred and leaf_t.attach_update_s > 0
    assert g2.rtt_s > g2.timings[0].server_s
    # the new node is in the leaf's job and in mid's lease for the leaf and root's lease for mid
    node = next(p for p in _paths(g2.jgf) if p.count("/") == 2)
    leaf_info = leaf.info(job)
    assert leaf_info["holds"] == {"core": 5 * 8, "socket": 5 * 2}
    for name in ("mid", "root"):
        info = tree.info(name)
        assert node.rsplit("/", 1)[1] in str(tree.client(name).info(graph=True)["jgf"])
        assert info["free"].get("node", 0) == (0 if name == "mid" else free_root0["node"] - 1)
    with pytest.raises(BusyError):
        leaf.match_grow(job, nodes_jobspec(8))
    _check_recount(tree)
    # back down: shrink both grows; what came from above goes back up
    s2 = leaf.shrink(job, jgf=g2.jgf)
    assert s2.returned > 0 and s2.pending == 0 and not s2.job_gone
    assert [t.instance for t in s2.timings] == ["leaf", "mid", "root"]
    s1 = leaf.shrink(job, jgf=g1.jgf)
    assert s1.returned > 0 and [t.instance for t in s1.timings] == ["leaf", "mid"]
    assert _free(tree, "root") == free_root0
    assert _free(tree, "mid") == {"node": 2, "socket": 4, "core": 16}
    assert tree.info("leaf")["vertices"] == 1 + 2 * (1 + 2 + 8)
    _check_recount(tree)
    leaf.release(job)
    _check_recount(tree)


def test_socket_grow_and_partial_shrink(tree: Tree) -> None:
    """Socket-sized grows from the root and a shrink of part of a grown node keep every aggregate exact."""
    leaf, root = tree.client("leaf"), tree.client("root")
    job = leaf.match_allocate(nodes_jobspec(2)).jobid
    free_root0 = _free(tree, "root")
    assert [t.outcome for t in leaf.match_grow(job, nodes_jobspec(2)).timings] == ["parent", "local"]
    big = leaf.match_grow(job, nodes_jobspec(2))  # mid is full: from the root
    assert [t.outcome for t in big.timings] == ["parent", "parent", "local"]
    s = leaf.match_grow(job, socket_jobspec())
    assert [t.outcome for t in s.timings] == ["parent", "parent", "local"]
    assert s.vertices == 1 + 1 + 1 + 4
    _check_recount(tree)
    # release one socket of a node that came whole from the root
    socket = sorted(p for p in _paths(big.jgf) if p.endswith("/socket1") and p.count("/") == 3)[-1]
    out = leaf.shrink(job, paths=[socket])
    assert out.released == 1 + 4 and not out.job_gone
    _check_recount(tree)
    leaf.shrink(job, jgf=s.jgf)
    _check_recount(tree)
    leaf.release(job)
    assert _free(tree, "root") == free_root0
    assert root.info()["origins"] == []
    _check_recount(tree)


def test_shrink_by_path_releases_upwards(tree: Tree) -> None:
    """Shrinking a grown node by its path frees it at every level up to the root that owns it."""
    leaf = tree.client("leaf")
    job = leaf.match_allocate(nodes_jobspec(2)).jobid
    leaf.match_grow(job, nodes_jobspec(2))
    free_root0 = _free(tree, "root")
    g = leaf.match_grow(job, nodes_jobspec(1))
    node = next(p for p in _paths(g.jgf) if p.count("/") == 2)
    assert _free(tree, "root")["node"] == free_root0["node"] - 1
    out = leaf.shrink(job, paths=[node])
    assert out.returned == 1 + 2 + 8
    assert _free(tree, "root") == free_root0
    assert node not in str(tree.client("mid").info(graph=True)["jgf"])
    leaf.release(job)
    _check_recount(tree)


def test_shrink_of_two_grown_nodes_returns_both(tree: Tree) -> None:
    """Both nodes of one grown subgraph go back to the root when the leaf shrinks them together."""
    leaf = tree.client("leaf")
    job = leaf.match_allocate(nodes_jobspec(2)).jobid
    leaf.match_grow(job, nodes_jobspec(2))  # mid's own nodes
    free_root0 = _free(tree, "root")
    g = leaf.match_grow(job, nodes_jobspec(2))  # from the root
    nodes = sorted(p for p in _paths(g.jgf) if p.count("/") == 2)
    assert len(nodes) == 2
    out = leaf.shrink(job, paths=nodes)
    assert out.returned == 2 * (1 + 2 + 8)
    assert _free(tree, "root") == free_root0
    assert leaf.info()["origins"] == [o for o in leaf.info()["origins"] if o["vertices"] != 11]
    leaf.release(job)
    _check_recount(tree)
