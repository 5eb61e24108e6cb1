"""The leak's fast paths (``ForkBatch`` search cursors, ``GridOps.join`` heirs) give the results of the
straightforward rules, written here as they read in the paper and in ``fluxlite.grid``'s docstring:
each fork re-scans the parent's node, its neighbours, then each of the job's nodes and its
neighbours (then, for the non-contiguous leak, the snake), reading every node's free cores from
the engine; each ending process hands its core to the job's first oversubscribed process on the
same node.  Whole simulations on busy machines must give the same outcome for every job.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from fluxlite.api import Engine
from fluxlite.errors import InputError, StateError, UnknownJobError
from fluxlite.grid import generate_grid
from fluxlite.grid.ops import ForkBatch, GridOps, Proc
from fluxlite.sim.deadline.placement import Machine
from fluxlite.sim.deadline.sim import simulate
from fluxlite.sim.deadline.workload import lublin_trace
from tests.fluxlite.helpers import observable


def _reference_fork(self: ForkBatch, parent: int, only: Sequence[int] | None = None) -> Proc | None:
    ops, job = self.ops, self.job
    if not 0 <= parent < ops.gi.n:
        raise InputError(f"parent node {parent} is not a grid index")

    def ff(u: int) -> int | None:
        return next((c for c in ops._free_cores(u, self.now, self.d) if c not in self.taken), None)

    def first(nodes: Sequence[int]) -> tuple[int, int] | None:
        for u in nodes:
            c = ff(u)
            if c is not None:
                return u, c
        return None

    place = None
    if only is not None:
        place = None if self.full else first(only)
        if place is None:
            return None
    elif not self.full:
        place = first([parent, *ops.gi.neighbours(parent)])
        if place is None:
            place = first([x for u in job.nodes() for x in (u, *ops.gi.neighbours(u))])
    if place is None:
        if job.strategy == "leak":
            p = Proc(parent, None, True)
            job.procs.append(p)
            self.new.append(p)
            job.oversubscribed += 1
            job.oversubscribed_total += 1
            return p
        got = None
        if not self.full:
            start = int(ops.gi.snake_pos[job.procs[0].node if job.procs else job.entry])
            got = ops._snake_scan(start, self.now, self.d, self.taken)
        if got is None:
            return None
        place = (got[0], got[1][0])
    self.taken.add(place[1])
    p = Proc(*place)
    job.procs.append(p)
    self.new.append(p)
    return p


def _reference_join(self: GridOps, jobid: int, proc: Proc | Sequence[Proc]) -> bool:
    job = self.leak_jobs.get(jobid)
    if job is None:
        raise UnknownJobError(f"job {jobid} is not a running leak job")
    ending = [proc] if isinstance(proc, Proc) else list(proc)
    if len({id(p) for p in ending}) != len(ending) or not {id(p) for p in ending} <= {
        id(q) for q in job.procs
    }:
        raise StateError("not the job's processes")
    release = []
    for p in ending:
        pos = next(k for k, q in enumerate(job.procs) if q is p)
        if p.core is None:
            job.procs.pop(pos)
            job.oversubscribed -= 1
            continue
        heir = next((q for q in job.procs if q.core is None and q.node == p.node), None)
        job.procs.pop(pos)
        if heir is not None:
            heir.core, heir.oversubscribed = p.core, False
            job.oversubscribed -= 1
            continue
        release.append(p.core)
    if not release:
        return False
    full = self.eng.traverser.release_groups(jobid, [(c, [c]) for c in release])
    if full:
        self.eng.jobs.pop(jobid, None)
        self.eng.job_at.pop(jobid, None)
        if not job.procs:
            self.leak_jobs.pop(jobid, None)
    return full


def _outcomes(strategy: str, comm: str, seed: int, load: str) -> tuple[object, ...]:
    trace = lublin_trace(120, load, "uniform", seed=seed, cores=64, lag_model="half-1h")
    r = simulate(trace, strategy, comm, machine=Machine(4, 4, 4, strategy=strategy, backend="grid"))
    return r.outcomes, r.accepted, r.completed, r.cancelled, r.oversubscribed


@pytest.mark.parametrize("strategy", ["leak", "leak-noncontig"])
@pytest.mark.parametrize(
    ("seed", "load", "comm"), [(1, "heavy", "async"), (2, "very-heavy", "sync"), (3, "heavy", "sync")]
)
def test_the_fast_leak_paths_give_every_job_the_straightforward_outcome(
    strategy: str, seed: int, load: str, comm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _outcomes(strategy, comm, seed, load)
    with monkeypatch.context() as mp:
        mp.setattr(ForkBatch, "fork", _reference_fork)
        mp.setattr(GridOps, "join", _reference_join)
        slow = _outcomes(strategy, comm, seed, load)
    assert fast[1:] == slow[1:]
    assert fast[0] == slow[0]
    # the machine was busy enough for the searches to matter: some processes were oversubscribed
    # (leak) or jobs could not all get cores at their start (both)
    assert fast[4] > 0 or fast[1] < 120


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_join_hands_cores_to_the_same_oversubscribed_processes_as_one_at_a_time(seed: int) -> None:
    """Random joins of an oversubscribed leak job: which process inherits which core, and the engine."""
    rng = random.Random(seed)

    def build() -> Engine:
        eng = Engine(generate_grid(3, 2, cores=2), policy="first")
        eng.leak_start(2, strategy="leak", now=0, duration=100, jobid=1)
        eng.leak_start(rng_n, strategy="leak", now=0, duration=100, jobid=2)  # more processes than cores
        return eng

    rng_n = rng.randint(12, 30)
    fast, ref = build(), build()
    while 2 in fast.leak_jobs:
        n = len(fast.leak_jobs[2].procs)
        pick = rng.sample(range(n), rng.randint(1, min(n, 6)))
        got = fast.grid.join(2, [fast.leak_jobs[2].procs[k] for k in pick])
        want = _reference_join(ref.grid, 2, [ref.leak_jobs[2].procs[k] for k in pick])
        assert got == want
        if 2 in ref.leak_jobs:
            assert [(p.node, p.core, p.oversubscribed) for p in fast.leak_jobs[2].procs] == [
                (p.node, p.core, p.oversubscribed) for p in ref.leak_jobs[2].procs
            ]
            assert fast.leak_jobs[2].oversubscribed == ref.leak_jobs[2].oversubscribed
        assert observable(fast, [0, 50]) == observable(ref, [0, 50])
    assert 2 not in ref.leak_jobs
