"""A pass's plan is the same with the fast earliest-time search and span index as without them.

Fast: ``PlannerMulti`` skips the index-0 type's candidates another type
cannot serve (``Planner.fit_time``), and a pass reads bare nodes' spans from
its sorted index (:mod:`fluxlite.queue._spanindex`).  Reference: the
one-by-one candidate loop Fluxion runs (``avail_time_next`` + ``avail_during``
on every candidate) and every node's spans scanned, as before.  After every
pass, every pending job's reservation (time and nodes) and every started
job's start and nodes must be identical, on random bursty traces (EASY,
conservative, hybrid; flat and racks) and on deep conservative queues after
early ends (the ``bench-pass`` setup, scaled down).
"""

from __future__ import annotations

import pytest

import fluxlite.queue._queue as queue_mod
from fluxlite.planner import PlannerMulti
from fluxlite.queue import Job
from fluxlite.sim.batch.model import SpeedupModel
from fluxlite.sim.batch.passbench import _setup
from fluxlite.sim.batch.sim import BatchConfig, BatchSim
from fluxlite.sim.batch.workloads import SimJob, Workload
from tests.fluxlite.helpers import one_by_one_first, one_by_one_next
from tests.fluxlite.queue.test_fast_paths import _trace


@pytest.fixture
def reference(monkeypatch):
    """Switch to the one-by-one search and plain span scans (call it to turn them on)."""

    def on():
        monkeypatch.setattr(PlannerMulti, "avail_time_first", one_by_one_first)
        monkeypatch.setattr(PlannerMulti, "avail_time_next", one_by_one_next)
        monkeypatch.setattr(queue_mod, "SpanIndex", lambda tr: None)

    return on


def _plan(q) -> list:
    """Every pending job's reservation (time, nodes) in priority order."""
    return [(j.jobid, j.resv_at, q.held(j) if j.resv_at is not None else None) for j in q.ordered_pending()]


def _run_sim(rows, nodes: int, queue: str) -> tuple[list, list]:
    jobs = [
        SimJob(Job(i + 1, size, wall, submit=sub), SpeedupModel(run, size), run)
        for i, (size, run, wall, sub) in enumerate(rows)
    ]
    sim = BatchSim(Workload("t", nodes, 1, "node", jobs), BatchConfig(queue=queue))
    q = sim.q
    placed: dict[int, list[str]] = {}
    q.on_start.append(lambda job, now: placed.__setitem__(job.jobid, q.held(job)))
    plans: list = []
    sched = q.schedule

    def schedule(now):
        got = sched(now)
        q.settle()
        plans.append((now, [j.jobid for j in got], _plan(q)))
        return got

    q.schedule = schedule  # type: ignore[method-assign]
    res = sim.run()
    assert res.recount == []
    return [(j.start, placed[j.jobid]) for j in sorted(res.jobs, key=lambda j: j.jobid)], plans


@pytest.mark.parametrize(("queue", "nodes", "seed", "n"), [
    ("conservative", 24, 11, 60), ("conservative", 96, 12, 40), ("easy", 24, 13, 80), ("hybrid", 64, 14, 70),
])  # fmt: skip
def test_sim_plans_identical_to_one_by_one_search(reference, queue, nodes, seed, n):
    rows = _trace(n, nodes, seed)
    fast = _run_sim(rows, nodes, queue)
    reference()
    slow = _run_sim(rows, nodes, queue)
    assert fast[0] == slow[0]
    assert len(fast[1]) == len(slow[1])
    for a, b in zip(fast[1], slow[1]):
        assert a == b
    assert sum(1 for _t, _s, plan in fast[1] for _j, at, _n in plan if at is not None) > 50


def _deep_passes(depth: int, nodes: int, seed: int) -> list:
    q, running = _setup("conservative", depth, nodes, seed)
    out = [_plan(q)]
    for k in range(3):
        q.complete(running[k].jobid, 1 + k)  # an early end: compression moves reservations earlier
        started = q.schedule(1 + k)
        out.append(([j.jobid for j in started], _plan(q)))
    return out


@pytest.mark.parametrize(("depth", "nodes", "seed"), [(120, 64, 1), (80, 32, 2)])
def test_deep_conservative_passes_identical_to_one_by_one_search(reference, depth, nodes, seed):
    fast = _deep_passes(depth, nodes, seed)
    reference()
    slow = _deep_passes(depth, nodes, seed)
    assert fast == slow
    assert sum(1 for _j, at, _n in fast[-1][1] if at is not None) >= depth - 5
