"""The queue's fast paths give exactly the schedule of the straightforward ones (times and nodes).

Fast paths: a whole-node reservation placed in the engine only when
something reads it (``Queue.defer``, :meth:`Queue.settle`), counts over a
deferred reservation from two aggregate queries, a backfilled job that
ends by the deferred reservation's start placed without it (the tight fit
counts it), and the inline span scans of bare whole nodes.  Straightforward: every reservation placed at once and
every node checked through ``Queue._node_free``.  Random bursty traces,
EASY and conservative (and hybrid), on a flat machine and on racks.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.api import Engine
from fluxlite.queue import Job, Queue
from fluxlite.readers.generate import generate_graph
from fluxlite.sim.batch.model import SpeedupModel
from fluxlite.sim.batch.sim import BatchConfig, BatchSim
from fluxlite.sim.batch.workloads import SimJob, Workload


def _trace(n: int, nodes: int, seed: int) -> list[tuple[int, int, int, int]]:
    rng = random.Random(seed)
    rows, t = [], 0
    for _ in range(n):
        t += rng.choice((0, 0, 0, 1, 3, 20, 200))
        wall = rng.choice((60, 120, 300, 900, 1800))
        size = rng.randint(1, 3) if rng.random() < 0.5 else rng.randint(1, nodes)
        run = wall if rng.random() < 0.2 else max(1, int(wall * rng.uniform(0.05, 1.0)))
        rows.append((size, run, wall, t))
    return rows


def _slow(q: Queue) -> None:
    """The straightforward paths: reservations placed at once, every node through _node_free."""
    q.defer = False
    every = set(q._node_vertices())
    q._not_bare = lambda: every  # type: ignore[method-assign]


def _starts(rows, nodes: int, queue: str, fast: bool) -> tuple[list[tuple[int | None, list[str]]], int]:
    """(start, nodes it started on) per job, and the reservations given to the engine."""
    jobs = [
        SimJob(Job(i + 1, size, wall, submit=sub), SpeedupModel(run, size), run)
        for i, (size, run, wall, sub) in enumerate(rows)
    ]
    sim = BatchSim(Workload("t", nodes, 1, "node", jobs), BatchConfig(queue=queue))
    if not fast:
        _slow(sim.q)
    placed: dict[int, list[str]] = {}
    sim.q.on_start.append(lambda job, now: placed.__setitem__(job.jobid, sim.q.held(job)))
    res = sim.run()
    assert res.recount == []
    out = [(j.start, placed[j.jobid]) for j in sorted(res.jobs, key=lambda j: j.jobid)]
    return out, sim.q.resv_placed


@pytest.mark.parametrize(("queue", "nodes", "seed", "n"), [
    ("easy", 24, 1, 90), ("easy", 24, 2, 90), ("easy", 128, 3, 90), ("conservative", 24, 4, 60),
    ("hybrid", 24, 6, 90),
])  # fmt: skip
def test_fast_paths_give_the_same_start_times(queue, nodes, seed, n):
    """Every fast path on against every one off: the same start times.

    The nodes a job gets may differ once a reservation was deferred: the
    engine reorders a vertex's children by what is free after each update
    (Fluxion's ``by_outedges``), so a reservation placed and given back
    within one pass leaves another child order than one never placed.
    Whole nodes are interchangeable, so start times do not depend on it.
    """
    rows = _trace(n, nodes, seed)
    fast, placed_fast = _starts(rows, nodes, queue, fast=True)
    slow, placed_slow = _starts(rows, nodes, queue, fast=False)
    assert [t for t, _n in fast] == [t for t, _n in slow]
    if queue == "easy":  # the deferral did save engine updates
        assert placed_fast < placed_slow


@pytest.mark.parametrize(("queue", "nodes", "seed"), [("easy", 128, 7), ("conservative", 32, 8)])
def test_inline_node_scans_give_the_same_nodes(queue, nodes, seed):
    """The inline span scans of bare nodes choose exactly the nodes _node_free does."""
    rows = _trace(60, nodes, seed)
    got = []
    for scans in (True, False):
        jobs = [
            SimJob(Job(i + 1, size, wall, submit=sub), SpeedupModel(run, size), run)
            for i, (size, run, wall, sub) in enumerate(rows)
        ]
        sim = BatchSim(Workload("t", nodes, 1, "node", jobs), BatchConfig(queue=queue))
        sim.q.defer = False
        if not scans:
            every = set(sim.q._node_vertices())
            sim.q._not_bare = lambda every=every: every  # type: ignore[method-assign]
        placed: dict[int, list[str]] = {}
        sim.q.on_start.append(lambda job, now, q=sim.q, p=placed: p.__setitem__(job.jobid, q.held(job)))
        res = sim.run()
        got.append([(j.start, placed[j.jobid]) for j in sorted(res.jobs, key=lambda j: j.jobid)])
    assert got[0] == got[1]


def _deferred_queue() -> tuple[Engine, Queue]:
    """4 nodes: job 1 (2 nodes, 100 s) submitted with job 2 (4 nodes), whose reservation is deferred."""
    eng = Engine(generate_graph(racks=0, nodes=4, sockets=0, cores=0))
    q = Queue(eng, "easy")
    q.defer = True
    for j in (Job(1, 2, 100), Job(2, 4, 50)):
        q.submit(j, 0)
    return eng, q


def test_deferred_reservation_is_counted_and_placed_when_read():
    """free() counts a deferred reservation; a start, a plan or a used() over its window places it."""
    eng, q = _deferred_queue()
    assert [j.jobid for j in q.schedule(0)] == [1]
    assert q.jobs[2].resv_at == 100 and 2 not in eng.jobs  # decided, not placed
    assert q.free("node", 0, 100) == 2 and q.free("node", 50, 100) == 0 and q.free("node", 150, 10) == 4
    assert q.used("node", 10) == 2 and 2 not in eng.jobs  # outside its window: still not placed
    assert q.used("node", 120) == 4 and eng.jobs[2] == "reserved"


def test_deferred_reservation_given_back_without_the_engine():
    """Cancelling a job whose reservation was never placed leaves the engine as it was."""
    eng, q = _deferred_queue()
    q.schedule(0)
    before = dict(eng.jobs)
    q.cancel(2, 5)
    assert dict(eng.jobs) == before and q._deferred is None and q.next_wakeup(5) is None
    assert q.free("node", 0, 1000) == 2
