"""Faults with real processes: retries, dead children, dead parents, restarts from the state file."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from hierarchy import InstanceUnavailableError
from hierarchy._launch import owner_credential
from tests.hierarchy.helpers import chain, nodes_jobspec, short_tmpdir, start, wait_for


def _node_paths(jgf: bytes) -> list[str]:
    return [
        p
        for p in (n["metadata"]["paths"]["containment"] for n in orjson.loads(jgf)["graph"]["nodes"])
        if p.count("/") == 2
    ]


def _view(info: dict) -> dict:
    """What must survive a restart: graph size, free resources, jobs and what they hold, origins."""
    return {k: info[k] for k in ("vertices", "edges", "by_type", "free", "jobs", "origins", "returning")}


def test_retried_grow_allocates_once() -> None:
    """A grow repeated with the same request id returns the same subgraph and allocates once."""
    with short_tmpdir() as d:
        t = start(d, chain(d, [8, 4, 2]))
        try:
            leaf, mid, root = t.client("leaf"), t.client("mid"), t.client("root")
            job = leaf.match_allocate(nodes_jobspec(2)).jobid
            mid.match_allocate(nodes_jobspec(2))  # mid is full: grows go to the root
            before = root.stat()["free"]
            first = leaf.match_grow(job, nodes_jobspec(1), request_id="grow-1")
            again = leaf.match_grow(job, nodes_jobspec(1), request_id="grow-1")
            assert not first.replayed and again.replayed
            assert again.jgf == first.jgf and again.timings[0].outcome == "replay"
            assert root.stat()["free"]["node"] == before["node"] - 1
            assert leaf.info(job)["holds"]["socket"] == 3 * 2
            # the same id for a shrink is answered once as well
            s1 = leaf.shrink(job, jgf=first.jgf, request_id="shrink-1")
            s2 = leaf.shrink(job, jgf=first.jgf, request_id="shrink-1")
            assert s2.replayed and (s2.released, s2.returned) == (s1.released, s1.returned)
            assert root.stat()["free"] == before
            for name in ("root", "mid", "leaf"):
                assert t.info(name)["recount_errors"] == []
        finally:
            t.close()


def test_killed_child_resources_return_after_grace() -> None:
    """When the leaf dies, mid frees its allocation after the grace period and hands the grown part to the root."""
    with short_tmpdir() as d:
        t = start(d, chain(d, [8, 4, 2]), child_grace=1.0, heartbeat=0.2)
        try:
            leaf, mid, root = t.client("leaf"), t.client("mid"), t.client("root")
            job = leaf.match_allocate(nodes_jobspec(2)).jobid
            mid.match_allocate(nodes_jobspec(2))
            root_before = root.stat()["free"]
            g = leaf.match_grow(job, nodes_jobspec(1))
            assert [x.outcome for x in g.timings] == ["parent", "parent", "local"]
            assert root.stat()["free"]["node"] == root_before["node"] - 1
            t.kill("leaf")
            wait_for(lambda: len(mid.info()["children"]) == 0, 10.0, "mid to free the dead leaf")
            assert "sent no heartbeat" in t.log("mid")
            assert root.stat()["free"] == root_before
            info = mid.info(recount=True)
            assert info["free"] == {"node": 2, "socket": 4, "core": 16}
            assert info["origins"] == [] and info["recount_errors"] == []
            assert root.info(recount=True)["recount_errors"] == []
        finally:
            t.close()


def test_parent_down_gives_clear_error_and_leaves_child_unchanged() -> None:
    """With the root down, a grow that needs it fails with InstanceUnavailableError and changes nothing below."""
    with short_tmpdir() as d:
        t = start(d, chain(d, [8, 4, 2]), rpc_timeout=1.0)
        try:
            leaf, mid = t.client("leaf"), t.client("mid")
            job = leaf.match_allocate(nodes_jobspec(2)).jobid
            mid.match_allocate(nodes_jobspec(1))
            grown = leaf.match_grow(job, nodes_jobspec(2))  # 1 node from mid is not enough: from the root
            assert [x.outcome for x in grown.timings] == ["parent", "parent", "local"]
            t.kill("root")
            before = {n: _view(t.info(n)) for n in ("mid", "leaf")}
            with pytest.raises(InstanceUnavailableError, match=r"did not answer|unreachable"):
                leaf.match_grow(job, nodes_jobspec(2), timeout=10)
            # shrinking what came from the root needs the root too: refused, nothing released
            with pytest.raises(InstanceUnavailableError):
                leaf.shrink(job, jgf=grown.jgf, timeout=10)
            after = {n: _view(t.info(n)) for n in ("mid", "leaf")}
            assert after == before
            # a grow that mid can serve still works
            assert [x.outcome for x in leaf.match_grow(job, nodes_jobspec(1)).timings] == ["parent", "local"]
        finally:
            t.close()


def test_killed_middle_restarted_with_state_loses_nothing() -> None:
    """mid killed with SIGKILL and restarted from --state keeps its graph, jobs, origins and request ids."""
    with short_tmpdir() as d:
        # the grace is long so that a slow restart on a loaded machine cannot look like a dead child (nothing waits for it)
        t = start(d, chain(d, [8, 4, 2]), child_grace=30.0, heartbeat=0.3, state=True)
        try:
            leaf, root = t.client("leaf"), t.client("root")
            job = leaf.match_allocate(nodes_jobspec(2)).jobid
            local = leaf.match_grow(job, nodes_jobspec(2), request_id="g-local")
            assert [x.outcome for x in local.timings] == ["parent", "local"]
            up = leaf.match_grow(job, nodes_jobspec(1), request_id="g-up")
            assert [x.outcome for x in up.timings] == ["parent", "parent", "local"]
            root_free = root.stat()["free"]
            before = _view(t.info("mid"))
            t.kill("mid")
            with pytest.raises(InstanceUnavailableError):
                leaf.match_grow(job, nodes_jobspec(1), timeout=1.0)
            t.restart("mid", drop=("--from-parent", "--jobspec"))  # the state file knows the parent
            mid = t.client("mid")
            assert _view(mid.info(recount=True)) == before
            assert mid.info(recount=True)["recount_errors"] == []
            # the leaf's retry of its upstream request is answered from mid's restored request table
            lease = orjson.loads((d / "leaf.state").read_bytes())["parent"]
            owner = owner_credential(d).user  # request ids are scoped to the caller
            upstream_id = hashlib.blake2b(
                f"leaf|grow|{job}|{owner}:g-up".encode(), digest_size=16
            ).hexdigest()
            again = mid.match_grow(
                lease["jobid"], nodes_jobspec(1), request_id=upstream_id, lease_token=lease["lease_token"]
            )
            assert again.jgf == up.jgf and [x.outcome for x in again.timings] == ["replay"]
            assert leaf.match_grow(job, nodes_jobspec(1), request_id="g-up").replayed
            assert root.stat()["free"] == root_free
            # the leaf's heartbeats reach the restarted mid, so its lease survives mid's grace period
            wait_for(
                lambda: mid.stat()["counters"].get("heartbeat", 0) > 0, 5.0, "leaf heartbeats at the new mid"
            )
            # and a shrink still climbs through the restarted mid to the root
            out = leaf.shrink(job, paths=_node_paths(up.jgf))
            assert out.returned > 0 and out.pending == 0
            assert root.stat()["free"]["node"] == root_free["node"] + 1
            for name in ("root", "mid", "leaf"):
                assert t.info(name)["recount_errors"] == []
        finally:
            t.close()


def test_pool_provider_serves_a_grow_at_the_top() -> None:
    """When the whole tree is full, the root asks its pool provider; a shrink gives the nodes back to the pool."""
    from tests.hierarchy.helpers import write_pool

    with short_tmpdir() as d:
        nodes = chain(d, [2, 1])
        nodes[0].provider = f"pool:{write_pool(d / 'pool.json', 2, 2)}"
        t = start(d, nodes)
        try:
            child, root = t.client("mid"), t.client("root")
            job = child.match_allocate(nodes_jobspec(1)).jobid
            g = child.match_grow(job, nodes_jobspec(2))
            assert [x.outcome for x in g.timings] == ["parent", "provider"]
            assert sorted(_node_paths(g.jgf)) == ["/cluster0/node2", "/cluster0/node3"]
            assert root.info()["vertices"] == 1 + 4 * 11
            assert child.info(job)["holds"]["socket"] == 3 * 2
            out = child.shrink(job, jgf=g.jgf)
            assert out.returned == 2 * 11 and out.pending == 0
            assert root.info()["vertices"] == 1 + 2 * 11
            # the pool has them again
            g2 = child.match_grow(job, nodes_jobspec(2))
            assert sorted(_node_paths(g2.jgf)) == ["/cluster0/node2", "/cluster0/node3"]
            for name in ("root", "mid"):
                assert t.info(name)["recount_errors"] == []
        finally:
            t.close()
