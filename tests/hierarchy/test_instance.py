"""Instance logic in one process, through an in-process implementation of the Parent interface.

The gRPC client is one implementation of :class:`hierarchy.base.Parent`;
``Direct`` below is another (it calls the parent instance's methods), so
crash and restore paths that are hard to time with processes are tested
here with the real engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from hierarchy import ForeignResourcesError, Instance
from hierarchy._release import release_exact
from hierarchy.base import MatchOutcome, ReleaseOutcome, ShrinkOutcome
from tests.hierarchy.helpers import CORES, nodes_jobspec, socket_jobspec


class Direct:
    """A Parent that calls another Instance in this process."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self.address = f"direct:{inst.name}"

    def match_allocate(self, jobspec: bytes, **kw: Any) -> MatchOutcome:
        kw.pop("timeout", None)
        return self.inst.match_allocate(jobspec, **kw)

    def match_grow(self, jobid: int, jobspec: bytes, **kw: Any) -> MatchOutcome:
        kw.pop("timeout", None)
        return self.inst.match_grow(jobid, jobspec, **kw)

    def shrink(self, jobid: int, **kw: Any) -> ShrinkOutcome:
        kw.pop("timeout", None)
        return self.inst.shrink(jobid, **kw)

    def release(self, jobid: int, **kw: Any) -> ReleaseOutcome:
        kw.pop("timeout", None)
        return self.inst.release(jobid, **kw)

    def heartbeat(self, jobid: int, **kw: Any) -> float:
        return self.inst.heartbeat(jobid, kw.get("lease_token", ""))  # trusted, in process

    def health(self, **kw: Any) -> dict[str, Any]:
        return {"instance": self.inst.name}

    def close(self) -> None:
        pass


def _root(nodes: int = 4, **kw: Any) -> Instance:
    return Instance(
        Engine(generate_graph(nodes=nodes, sockets=2, cores=CORES), policy="first"), name="root", **kw
    )


def _node_paths(jgf: bytes) -> list[str]:
    return [n["metadata"]["paths"]["containment"] for n in orjson.loads(jgf)["graph"]["nodes"]]


def test_deferred_attach_is_finished_after_a_crash(tmp_path: Path) -> None:
    """A subgraph answered to the child but not yet attached (crash) is attached when the state is restored."""
    root = _root()
    mid = Instance.from_parent(
        Direct(root), nodes_jobspec(1).encode(), name="mid", state_path=tmp_path / "mid.state"
    )
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    out = mid.match_grow(
        lease.jobid,
        nodes_jobspec(1).encode(),
        request_id="r1",
        lease_token=lease.lease_token,
        after_reply=lambda start: None,  # the process dies before the deferred attach starts
    )
    assert out.timings[0].deferred and out.timings[0].outcome == "parent"
    state = orjson.loads((tmp_path / "mid.state").read_bytes())
    assert [r["state"] for r in state["requests"] if r["key"].startswith("grow:")] == ["received"]
    back = Instance.restore(tmp_path / "mid.state", parent=Direct(root))
    assert back.info(lease.jobid)["holds"] == {"core": 2 * 2 * CORES, "socket": 4}
    assert back.info(recount=True)["recount_errors"] == []
    again = back.match_grow(
        lease.jobid, nodes_jobspec(1).encode(), request_id="r1", lease_token=lease.lease_token
    )
    assert again.replayed and again.jgf == out.jgf


def test_pending_grow_is_resumed_with_the_same_upstream_id(tmp_path: Path) -> None:
    """A grow whose upstream answer was lost asks the parent again with the same id: allocated once."""
    root = _root()
    mid = Instance.from_parent(
        Direct(root), nodes_jobspec(1).encode(), name="mid", state_path=tmp_path / "mid.state"
    )
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid

    class LosesAnswer(Direct):
        def match_grow(self, jobid: int, jobspec: bytes, **kw: Any) -> MatchOutcome:
            super().match_grow(jobid, jobspec, **kw)  # the parent does it ...
            from hierarchy import InstanceUnavailableError

            raise InstanceUnavailableError("answer lost")  # ... but the answer never arrives

    mid.parent = LosesAnswer(root)
    from hierarchy import InstanceUnavailableError

    with pytest.raises(InstanceUnavailableError):
        mid.match_grow(job, nodes_jobspec(1).encode(), request_id="r1")
    free_after_first = root.stat()["free"]
    back = Instance.restore(tmp_path / "mid.state", parent=Direct(root))
    out = back.match_grow(job, nodes_jobspec(1).encode(), request_id="r1")
    assert [t.outcome for t in out.timings] == ["parent", "replay"]
    assert root.stat()["free"] == free_after_first
    assert back.info(recount=True)["recount_errors"] == []


def test_release_exact_any_granularity() -> None:
    """Releasing one socket of a node held whole keeps the other socket and exact aggregates."""
    from fluxlite.check import recount_errors

    eng = Engine(generate_graph(nodes=2, sockets=2, cores=CORES), policy="first")
    from fluxlite.jobspec import parse_jobspec

    job = eng.allocate(parse_jobspec(nodes_jobspec(1)), fmt="jgf")
    node = next(p for p in _node_paths(job.text.encode()) if p.count("/") == 2)
    g = eng.graph
    s0 = g.vertex_by_path(node + "/socket0")
    assert not release_exact(eng, job.jobid, g.subtree(s0))
    assert recount_errors(eng) == []
    held = eng.holders(g.subtree(g.vertex_by_path(node))).get(job.jobid, [])
    assert g.vertex_by_path(node + "/socket1") in held and s0 not in held
    s1 = g.vertex_by_path(node + "/socket1")
    assert release_exact(eng, job.jobid, g.subtree(s1))
    assert recount_errors(eng) == [] and job.jobid not in eng.jobs


def test_release_exact_on_a_graph_read_from_jgf(tmp_path: Path) -> None:
    """A graph read from a match writer's JGF (as a child's is) has rank -1 below its nodes, as Fluxion
    writes them: releasing one socket still releases it, and leaves the rest held and exact."""
    from fluxlite.check import recount_errors
    from fluxlite.jobspec import parse_jobspec

    parent = Engine(generate_graph(nodes=2, sockets=2, cores=CORES), policy="first")
    (tmp_path / "g.json").write_text(parent.allocate(parse_jobspec(nodes_jobspec(1)), fmt="jgf").text)
    eng = Engine.from_file(tmp_path / "g.json", format="jgf", policy="first")
    g = eng.graph
    node = next(v for v in range(len(g.v_rank)) if g.v_rank[v] >= 0)
    s0, s1 = (v for v in g.subtree(node) if g.parent(v, eng.dom) == node)
    assert g.v_rank[s0] == -1 and g.v_rank[s1] == -1
    job = eng.allocate(parse_jobspec(nodes_jobspec(1)))
    assert not release_exact(eng, job.jobid, g.subtree(s0))
    held = eng.holders(g.subtree(node)).get(job.jobid, [])
    assert s0 not in held and s1 in held and node in held
    assert recount_errors(eng) == []
    assert release_exact(eng, job.jobid, g.subtree(s1))
    assert job.jobid not in eng.jobs and recount_errors(eng) == []


def _mid_on_jgf(root: Instance) -> tuple[Instance, int]:
    """A child instance (its graph read from the parent's match-writer JGF, rank -1 below its nodes) and a job on its node."""
    mid = Instance.from_parent(Direct(root), nodes_jobspec(1).encode(), name="mid")
    g = mid.engine.graph
    assert any(g.v_rank[v] == -1 and "socket" in g.path(v, mid.engine.dom) for v in range(len(g.v_rank)))
    return mid, mid.match_allocate(nodes_jobspec(1).encode()).jobid


def test_shrink_by_socket_path_on_a_graph_read_from_jgf() -> None:
    """A child's graph has rank -1 below its nodes: a shrink naming a socket by path releases that
    socket and its cores (it said the job held nothing there), and the rest stays held and exact."""
    root = _root(4)
    mid, job = _mid_on_jgf(root)
    g = mid.engine.graph
    node = next(g.path(v, mid.engine.dom) for v in range(len(g.v_rank)) if g.v_rank[v] >= 0)
    out = mid.shrink(job, paths=[node + "/socket0"])
    assert out.released == 1 + CORES and not out.job_gone
    assert mid.info(job)["holds"] == {"socket": 1, "core": CORES}
    assert mid.info(recount=True)["recount_errors"] == []


def test_hand_back_of_a_socket_from_a_graph_read_from_jgf() -> None:
    """A child grows a node from its parent, then gives one socket of it back: the hand-back's JGF keeps
    the socket and its cores (rank -1 in the child's graph; it had sent an empty document, which the
    parent refused, leaving the socket pending), and the parent releases exactly them."""
    root = _root(4)
    mid, job = _mid_on_jgf(root)
    grown = mid.match_grow(job, nodes_jobspec(1).encode())
    assert grown.timings[0].outcome == "parent"
    node = next(p for p in _node_paths(grown.jgf) if p.count("/") == 2)
    before = root.info(mid.parent_jobid)["holds"]
    out = mid.shrink(job, paths=[node + "/socket0"])
    assert (out.released, out.returned, out.pending) == (1 + CORES, 1 + CORES, 0)
    assert root.info(mid.parent_jobid)["holds"] == {
        "socket": before["socket"] - 1,
        "core": before["core"] - CORES,
    }
    assert root.engine.graph.vertex_by_path(node + "/socket1") is not None
    assert mid.engine.graph.vertex_by_path(node + "/socket0") is None
    assert root.info(recount=True)["recount_errors"] == [] and mid.info(recount=True)["recount_errors"] == []


def test_partial_shrink_of_a_whole_cloud_node_read_from_jgf_is_refused(tmp_path: Path) -> None:
    """A cloud node (``release=whole``) in a graph read from a match writer's JGF has rank -1 below it:
    a shrink naming one of its cores (with the node, as a match writer's JGF names it) is refused
    and changes nothing (it was taken as naming the node alone, and the whole node was released)."""
    from fluxlite.errors import InputError
    from hierarchy._jgfsub import subgraph_jgf

    nodes: list[dict[str, Any]] = [
        {
            "id": "0",
            "metadata": {
                "type": "cluster",
                "name": "cluster0",
                "id": 0,
                "rank": -1,
                "paths": {"containment": "/cluster0"},
            },
        },
        {
            "id": "1",
            "metadata": {
                "type": "node",
                "name": "i-1",
                "id": 0,
                "rank": 0,
                "exclusive": True,
                "properties": {"release": "whole"},
                "paths": {"containment": "/cluster0/i-1"},
            },
        },
    ]
    edges = [{"source": "0", "target": "1"}]
    for i in range(CORES):
        path = f"/cluster0/i-1/core{i}"
        nodes.append(
            {
                "id": str(2 + i),
                "metadata": {
                    "type": "core",
                    "name": f"core{i}",
                    "id": i,
                    "rank": -1,
                    "exclusive": True,
                    "paths": {"containment": path},
                },
            }
        )
        edges.append({"source": "1", "target": str(2 + i)})
    (tmp_path / "g.json").write_bytes(orjson.dumps({"graph": {"nodes": nodes, "edges": edges}}))
    inst = Instance(Engine.from_file(tmp_path / "g.json", format="jgf", policy="first"), name="child")
    g = inst.engine.graph
    spec = (
        "version: 1\nresources:\n  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n"
        f"        label: default\n        with:\n          - type: core\n            count: {CORES}\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    )
    job = inst.match_allocate(spec.encode()).jobid
    held = inst.info(job)["holds"]
    assert held == {"core": CORES}
    part = subgraph_jgf(
        g, [g.vertex_by_path(p) for p in ("/cluster0", "/cluster0/i-1", "/cluster0/i-1/core0")]
    )
    with pytest.raises(InputError, match="whole cloud nodes"):
        inst.shrink(job, jgf=part)
    assert inst.info(job)["holds"] == held and inst.info(recount=True)["recount_errors"] == []
    whole = subgraph_jgf(g, list(range(len(g.v_rank))))
    assert inst.shrink(job, jgf=whole).job_gone


def test_silent_child_on_a_graph_read_from_jgf_logs_every_vertex_it_held(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A child lease that stops sending heartbeats is freed; the log counts every vertex it held
    (node, sockets, cores), also on a graph read from a match writer's JGF, where only the node
    has a rank (it counted 1)."""
    import logging
    import time

    root = _root(4)
    mid = Instance.from_parent(Direct(root), nodes_jobspec(1).encode(), name="mid")
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    mid.jobs[lease.jobid].last_seen = (
        time.monotonic() - mid.child_grace - 60
    )  # silent for a minute past grace
    with caplog.at_level(logging.WARNING, logger="fluxlite.instance"):
        mid.tick()
    assert lease.jobid not in mid.jobs
    assert f"freeing the {1 + 2 + 2 * CORES} vertices it held" in caplog.text
    assert mid.info(recount=True)["recount_errors"] == []


def test_jgf_shrink_of_one_socket_keeps_the_node_and_the_other_socket() -> None:
    """A shrink by a match writer's JGF of one socket names its node and cluster too (shared
    ancestors): the named socket is released, the node and the other socket stay held (the node
    was taken as named whole: the whole node went and the job ended)."""
    from hierarchy._jgfsub import subgraph_jgf

    root = _root(2)
    job = root.match_allocate(nodes_jobspec(1).encode()).jobid
    g = root.engine.graph
    dom = root.engine.dom
    node = next(
        g.path(v, dom) for v in root.engine.traverser.job_vertices(job) if g.path(v, dom).count("/") == 2
    )
    part = ["/cluster0", node, node + "/socket0", *(f"{node}/socket0/core{i}" for i in range(CORES))]
    out = root.shrink(job, jgf=subgraph_jgf(g, [g.vertex_by_path(p) for p in part]))
    assert not out.job_gone
    assert root.info(job)["holds"] == {"socket": 1, "core": CORES}
    held = root.engine.holders([g.vertex_by_path(node), g.vertex_by_path(node + "/socket1")]).get(job, [])
    assert len(held) == 2
    assert root.info(recount=True)["recount_errors"] == []


def test_shrink_by_path_and_foreign_path() -> None:
    """A child's shrink by path releases its subtree; a path it does not hold is refused."""
    root = _root(4)
    a = root.match_allocate(nodes_jobspec(1).encode(), lease=True)
    b = root.match_allocate(nodes_jobspec(1).encode(), lease=True)
    node_a = next(p for p in _node_paths(a.jgf) if p.count("/") == 2)
    with pytest.raises(ForeignResourcesError):
        root.shrink(b.jobid, paths=[node_a], lease_token=b.lease_token)
    out = root.shrink(a.jobid, paths=[node_a + "/socket0"], lease_token=a.lease_token)
    assert out.released == 1 + CORES and not out.job_gone
    assert root.info(recount=True)["recount_errors"] == []


def test_provider_grow_and_give_back(tmp_path: Path) -> None:
    """A root with a pool provider grows from it and gives the nodes back when they are free."""
    from providers import PoolProvider
    from tests.hierarchy.helpers import write_pool

    root = _root(2, provider=PoolProvider(write_pool(tmp_path / "pool.json", 2, 1)))
    job = root.match_allocate(nodes_jobspec(2).encode()).jobid
    g = root.match_grow(job, socket_jobspec().encode())
    assert g.timings[0].outcome == "provider"
    assert "/cluster0/node2/socket1" in _node_paths(g.jgf) or "/cluster0/node2/socket0" in _node_paths(g.jgf)
    out = root.shrink(job, jgf=g.jgf)
    assert out.returned == 1 + 1 + CORES and out.pending == 0
    assert root.engine.graph.vertex_by_path("/cluster0/node2") is None
    assert root.info(recount=True)["recount_errors"] == []


def test_shrink_naming_a_node_that_stays_held_counts_and_undoes_only_what_it_released() -> None:
    """A match writer's JGF of node B whole (grown from the parent) and of A's socket0 names node A
    too.  A stays held (its socket1 is not named), so it is not released and not counted (it was
    counted as released).  When the parent does not take B back, the job gets back exactly what
    went; with the parent answering, ``released`` counts what went, and B goes back up."""
    from hierarchy import InstanceUnavailableError
    from hierarchy._jgfsub import subgraph_jgf

    class TakesNothingBack(Direct):
        def shrink(self, jobid: int, **kw: Any) -> ShrinkOutcome:
            raise InstanceUnavailableError("parent lost")

    def state(inst: Instance, job: int) -> tuple[Any, ...]:
        g = inst.engine.graph
        dom = inst.engine.dom
        return (
            sorted(g.path(v, dom) for v in inst.engine.traverser.job_vertices(job)),
            inst.info(job)["holds"],
            inst.stat()["free"],
            len(inst.returning),
        )

    root = _root(4)
    mid = Instance.from_parent(Direct(root), nodes_jobspec(1).encode(), name="mid")
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    mid.match_grow(job, nodes_jobspec(1).encode())
    g = mid.engine.graph
    dom = mid.engine.dom
    nodes = [g.path(v, dom) for v in mid.engine.traverser.job_vertices(job) if g.v_type[v] == "node"]
    (b,) = [p for p in nodes if p in mid._origin_of]
    (a,) = [p for p in nodes if p != b]
    part = [g.path(v, dom) for v in g.subtree(g.vertex_by_path(b), dom)]
    part += ["/cluster0", a, a + "/socket0", *(f"{a}/socket0/core{i}" for i in range(CORES))]
    doc = subgraph_jgf(g, [g.vertex_by_path(p) for p in part])
    before = state(mid, job)
    root_before = root.stat()["free"]
    mid.parent = TakesNothingBack(root)
    with pytest.raises(InstanceUnavailableError):
        mid.shrink(job, jgf=doc)
    assert state(mid, job) == before
    assert root.stat()["free"] == root_before
    assert mid.info(recount=True)["recount_errors"] == []

    mid.parent = Direct(root)
    out = mid.shrink(job, jgf=doc)
    assert not out.job_gone
    assert out.released == (1 + 2 + 2 * CORES) + (1 + CORES)  # B whole, A's socket0 and its cores
    assert mid.info(job)["holds"] == {"socket": 1, "core": CORES}
    assert out.returned > 0 and out.pending == 0
    assert g.vertex_by_path(b) is None and g.vertex_by_path(a) is not None
    assert root.stat()["free"]["node"] == root_before["node"] + 1
    assert mid.info(recount=True)["recount_errors"] == []
    assert root.info(recount=True)["recount_errors"] == []


def _spy_ops(inst: Instance) -> list[str]:
    """The ``op`` of every match the instance's engine runs from now on."""
    ops: list[str] = []
    match = inst.engine.match

    def spy(*a: Any, **k: Any) -> Any:
        ops.append(k.get("op", "allocate"))
        return match(*a, **k)

    inst.engine.match = spy  # type: ignore[method-assign]
    return ops


def test_a_level_with_a_parent_skips_the_local_satisfiability_walk() -> None:
    """A grow that does not fit locally is asked of the parent whatever the local answer, so a level
    with a parent runs one walk (no satisfiability walk); the root, with nowhere else to ask, still
    tells busy from impossible, and that is what reaches the caller."""
    from fluxlite.errors import BusyError, UnsatisfiableError

    root = _root(nodes=2)
    mid = Instance.from_parent(Direct(root), nodes_jobspec(1).encode(), name="mid")
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    mid_ops, root_ops = _spy_ops(mid), _spy_ops(root)
    out = mid.match_grow(job, nodes_jobspec(1).encode(), request_id="g1")  # the root's other node
    assert [t.outcome for t in out.timings] == ["parent", "local"]
    assert mid_ops == ["allocate"] and root_ops == ["allocate_with_satisfiability"]
    before = (mid.stat()["free"], root.stat()["free"])
    with pytest.raises(BusyError):  # the tree is full now: busy, as the root says
        mid.match_grow(job, socket_jobspec().encode(), request_id="g2")
    with pytest.raises(UnsatisfiableError):  # more than the whole tree: the root's answer
        mid.match_grow(job, nodes_jobspec(3).encode(), request_id="g3")
    assert mid_ops == ["allocate"] * 3
    assert root_ops[1:] == ["allocate_with_satisfiability"] * 2
    assert (mid.stat()["free"], root.stat()["free"]) == before
    assert mid.info(recount=True)["recount_errors"] == [] and root.info(recount=True)["recount_errors"] == []
    orphan = Instance(Engine(generate_graph(nodes=1, sockets=2, cores=CORES), policy="first"), name="alone")
    alone_job = orphan.match_allocate(nodes_jobspec(1).encode()).jobid
    alone_ops = _spy_ops(orphan)
    with pytest.raises(UnsatisfiableError):  # no parent: the local answer is the answer
        orphan.match_grow(alone_job, nodes_jobspec(3).encode(), request_id="g4")
    with pytest.raises(BusyError):
        orphan.match_grow(alone_job, socket_jobspec().encode(), request_id="g5")
    assert alone_ops == ["allocate_with_satisfiability"] * 2


def test_shrink_documents_read_column_wise_name_what_the_per_node_reader_names() -> None:
    """A shrink document in a match's JGF layout is read column-wise; the (path, rank) pairs are the
    per-node reader's, and a document the columns reader cannot vouch for (an edge to a node it
    leaves out, as partial-cancel documents have) still goes through the per-node reader."""
    import jgf as jgf_mod
    from fluxlite.jobspec import parse_jobspec
    from fluxlite.readers import read_vertices
    from hierarchy.instance import handback

    eng = Engine(generate_graph(nodes=4, sockets=2, cores=CORES), policy="first")
    doc = eng.allocate(parse_jobspec(nodes_jobspec(3)), fmt="jgf").text.encode()
    assert len(doc) >= handback._COLUMNS_MIN_BYTES and jgf_mod.read_columns(doc) is not None

    def per_node(text: bytes) -> list[tuple[str, int]]:
        return [(n.paths.get("containment") or next(iter(n.paths.values()), ""), n.rank) for n in read_vertices(text)]

    assert list(handback._paths_and_ranks(doc, "containment")) == per_node(doc)
    d = orjson.loads(doc)
    d["graph"]["nodes"] = d["graph"]["nodes"][1:]  # the first node left out, its edges kept
    partial = orjson.dumps(d)
    assert jgf_mod.read_columns(partial) is None
    assert list(handback._paths_and_ranks(partial, "containment")) == per_node(partial)
