"""The deadline simulator on the engine: accounting, deadlines, and aggregates that equal a recount."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluxlite.check import recount_errors
from fluxlite.sim.deadline.placement import STRATEGIES, Machine
from fluxlite.sim.deadline.sim import DeadlineSim
from fluxlite.sim.deadline.workload import DeadlineJob, lublin_trace


def _run(jobs: list[DeadlineJob], strategy: str, comm: str, m: Machine, checks: list[float]):  # type: ignore[no-untyped-def]
    sim = DeadlineSim(jobs, strategy, comm, m)
    errors: list[str] = []
    held_ok: list[bool] = []

    def check() -> None:
        now = sim.k.tick()
        errors.extend(recount_errors(m.engine, [now, now + 500]))
        # every core a running job holds is allocated to it on the engine (one process = one core)
        held = [c for r in sim.running.values() for c in r.held]
        held_ok.append(len(held) == len(set(held)))

    for t in checks:
        sim.k.at(t, check)
    res = sim.run()
    return sim, res, errors, held_ok


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    strategy=st.sampled_from(STRATEGIES),
    comm=st.sampled_from(["async", "sync"]),
    load=st.sampled_from(["normal", "heavy", "very-heavy"]),
    torus=st.booleans(),
    checks=st.lists(st.floats(0, 20_000), max_size=6),
    backend=st.sampled_from(["grid", "interim"]),
)
def test_random_traces_keep_accounting_deadlines_and_aggregates(
    seed, strategy, comm, load, torus, checks, backend
) -> None:  # type: ignore[no-untyped-def]
    """On small random traces: counts add up, no completed job ends after its deadline, and the
    engine's aggregates equal a recount during the run and after it (when nothing is left)."""
    m = Machine(4, 3, 2, torus=torus, strategy=strategy, backend=backend)
    jobs = lublin_trace(25, load, "uniform", seed=seed, cores=24, cores_per_node=2, max_runtime=4 * 3600)
    _sim, res, errors, held_ok = _run(jobs, strategy, comm, m, checks)
    assert errors == []
    assert all(held_ok)
    assert res.accepted + res.rejected == res.jobs == 25
    assert res.completed + res.cancelled == res.accepted
    by_id = {j.jobid: j for j in jobs}
    outcomes = {jid: (o, s, e) for jid, o, s, e in res.outcomes}
    assert len(outcomes) == 25
    for jid, (o, start, end) in outcomes.items():
        j = by_id[jid]
        if o == "completed":
            assert end <= j.deadline
            assert start >= j.earliest_start
        if o == "cancelled":
            assert end <= j.deadline
    assert m.engine.jobs == {}
    assert recount_errors(m.engine, [0, 1000, 10**6]) == []
    assert 0.0 <= res.utilization <= 1.0 + 1e-9
    if strategy not in ("leak", "leak-noncontig"):
        assert res.oversubscribed == 0


def test_deadline_cancels_a_job_that_cannot_finish() -> None:
    """A job slowed down past its deadline is cancelled at the deadline and its cores are freed."""
    m = Machine(4, 2, 2, strategy="leak")
    base = lublin_trace(1, seed=1, cores=16, cores_per_node=2)[0]
    # a BSP job that must oversubscribe (an earlier job holds a node), with no slack
    blocker = dataclasses.replace(
        base,
        jobid=1,
        procs=2,
        runtime=100,
        requested=100,
        type=0,
        submit=0,
        earliest_start=0,
        deadline=10_000,
    )
    job = dataclasses.replace(
        base,
        jobid=2,
        procs=16,
        runtime=1000,
        requested=1000,
        type=1,
        submit=0,
        earliest_start=0,
        deadline=1000,
    )
    sim = DeadlineSim([blocker, job], "leak", "sync", m)
    res = sim.run()
    outcome = {jid: (o, e) for jid, o, _, e in res.outcomes}
    assert outcome[1][0] == "completed"
    assert outcome[2] == ("cancelled", 1000)
    assert m.engine.jobs == {}


def test_static_rejects_what_cannot_meet_its_deadline() -> None:
    """A static allocator rejects a job whose window cannot fit before its deadline, accepts a later one."""
    m = Machine(2, 2, 2)
    base = lublin_trace(1, seed=1, cores=8, cores_per_node=2)[0]
    big = dataclasses.replace(
        base, jobid=1, procs=8, runtime=500, requested=500, type=0, submit=0, earliest_start=0, deadline=600
    )
    tight = dataclasses.replace(
        base, jobid=2, procs=2, runtime=100, requested=100, type=0, submit=1, earliest_start=1, deadline=300
    )
    loose = dataclasses.replace(
        base, jobid=3, procs=2, runtime=100, requested=100, type=0, submit=2, earliest_start=2, deadline=800
    )
    for strategy in ("count", "hilbert", "manhattan"):
        res = DeadlineSim([big, tight, loose], strategy, "async", Machine(2, 2, 2, strategy=strategy)).run()
        outcome = {jid: (o, s) for jid, o, s, _ in res.outcomes}
        assert outcome[2][0] == "rejected"
        assert outcome[3] == ("completed", 500)  # reserved for when the big job's window ends
        assert res.accepted == 2
    assert m.engine.jobs == {}
