"""Queue policies on the real engine: backfilling never delays reservations, FCFS order, errors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluxlite.api import Engine
from fluxlite.errors import InputError, StateError, UnsatisfiableError
from fluxlite.queue import POLICIES, Job, Queue, create_policy, register
from fluxlite.readers.generate import generate_graph
from fluxlite.sim.batch.model import SpeedupModel
from fluxlite.sim.batch.sim import BatchConfig, BatchSim
from fluxlite.sim.batch.workloads import SimJob, Workload, esp

NODES = 8

job_st = st.tuples(
    st.integers(1, NODES),  # size
    st.integers(2, 60),  # walltime
    st.floats(0.2, 1.0),  # runtime share of the walltime
    st.integers(0, 40),  # submit
)


def _workload(rows: list[tuple[int, int, float, int]]) -> Workload:
    jobs = []
    for i, (size, wall, share, submit) in enumerate(rows):
        run = max(1, int(wall * share))
        jobs.append(SimJob(Job(i + 1, size, wall, submit=submit), SpeedupModel(run, size), run))
    return Workload("random", NODES, 1, "node", jobs)


def _check_run(rows: list[tuple[int, int, float, int]], queue: str):
    res = BatchSim(_workload(rows), BatchConfig(queue=queue)).run()
    assert res.recount == []
    assert all(j.state == "done" for j in res.jobs)
    # never more nodes in use than exist (sizes from the jobs, usage from the engine)
    events = sorted(
        [(j.start, j.size) for j in res.jobs] + [(j.end, -j.size) for j in res.jobs],
        key=lambda e: (e[0], e[1]),
    )
    used = 0
    for _t, d in events:
        used += d
        assert used <= NODES
    assert max(u for _t, u in res.util) <= NODES
    return res


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_st, min_size=2, max_size=14))
def test_easy_backfilling_never_delays_the_reserved_head(rows):
    """EASY: a job that got a reservation starts no later than it (early ends only help)."""
    res = _check_run(rows, "easy")
    for j in res.jobs:
        if j.first_resv is not None:
            assert j.start <= j.first_resv, (j.jobid, j.start, j.first_resv)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_st, min_size=2, max_size=14))
def test_conservative_backfilling_never_delays_any_reservation(rows):
    """Conservative: every job is reserved on arrival and never starts later than that."""
    res = _check_run(rows, "conservative")
    for j in res.jobs:
        assert j.first_resv is None or j.start <= j.first_resv, (j.jobid, j.start, j.first_resv)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_st, min_size=2, max_size=12))
def test_fcfs_starts_in_arrival_order(rows):
    """FCFS: no job starts before one that arrived earlier."""
    res = _check_run(rows, "fcfs")
    by_seq = sorted(res.jobs, key=lambda j: j.seq)
    starts = [j.start for j in by_seq]
    assert starts == sorted(starts)


def test_backfilling_uses_holes_fcfs_does_not():
    """A small job behind a blocked big one starts at once with EASY, waits with FCFS."""
    rows = [(6, 100, 1.0, 0), (8, 50, 1.0, 1), (2, 50, 1.0, 2)]
    easy = {j.jobid: j.start for j in _check_run(rows, "easy").jobs}
    fcfs = {j.jobid: j.start for j in _check_run(rows, "fcfs").jobs}
    assert easy[3] == 2 and fcfs[3] >= fcfs[2] == 100
    assert easy[2] == 100  # the head was not delayed by the backfilled job


@pytest.mark.parametrize(
    ("policy", "depth", "held"),
    [("hybrid", 0, 0), ("hybrid", 2, 2), ("easy", None, 1), ("conservative", None, 4), ("fcfs", None, 0)],
)
def test_reservation_depth_bounds_the_reservations_held(policy, depth, held):
    """After a pass exactly min(depth, waiting) jobs hold a reservation in the engine."""
    q = Queue(Engine(generate_graph(nodes=4, sockets=1, cores=2)), policy, depth)
    for i in range(5):
        q.submit(Job(i + 1, 4, 10), 0)
    assert [j.jobid for j in q.schedule(0)] == [1]
    assert sum(j.resv_at is not None for j in q.jobs.values()) == held
    assert sum(s == "reserved" for s in q.engine.jobs.values()) == held


def test_z_jobs_hold_backfilling_in_esp():
    """While an ESP Z job waits no other job starts, and aggregates equal a recount at the end."""
    res = BatchSim(esp(), BatchConfig(queue="easy")).run()
    assert res.recount == []
    zs = [j for j in res.jobs if j.kind == "Z"]
    assert len(zs) == 2 and len(res.jobs) == 230
    for z in zs:
        others = [j for j in res.jobs if j.kind != "Z" and z.submit < j.start < z.start]
        assert others == []


def _queue(nodes: int = 4) -> Queue:
    return Queue(Engine(generate_graph(nodes=nodes, sockets=1, cores=2)), "easy")


def test_submit_errors_leave_the_queue_unchanged():
    """Bad input, never-satisfiable and duplicate submissions raise their own errors, change nothing."""
    q = _queue()
    q.submit(Job(1, 2, 10), 0)
    before = (dict(q.jobs), dict(q.engine.jobs))
    with pytest.raises(UnsatisfiableError):
        q.submit(Job(2, 5, 10), 0)
    with pytest.raises(InputError):
        q.submit(Job(3, 0, 10), 0)
    with pytest.raises(InputError):
        q.submit(Job(4, 2, 10, min_size=3), 0)
    with pytest.raises(StateError):
        q.submit(Job(1, 1, 10), 0)
    assert (dict(q.jobs), dict(q.engine.jobs)) == before


def test_cancel_pending_and_running_frees_the_engine():
    """Cancelling a reserved pending job and a running one leaves the engine empty."""
    q = _queue()
    q.submit(Job(1, 4, 10), 0)
    q.submit(Job(2, 4, 10), 0)
    started = q.schedule(0)
    assert [j.jobid for j in started] == [1] and q.jobs[2].resv_at == 10
    q.cancel(2, 1)
    q.cancel(1, 1)
    assert q.engine.jobs == {}
    with pytest.raises(StateError):
        q.cancel(1, 2)


def test_registry_refuses_duplicates_and_unknown_names():
    """One registry: a duplicate name is refused, an unknown one is an InputError naming the known."""
    assert set(POLICIES) >= {"fcfs", "easy", "conservative", "hybrid"}
    with pytest.raises(ValueError):
        register("easy", POLICIES["easy"])
    with pytest.raises(InputError, match="known: fcfs"):
        create_policy("sjf")
    assert create_policy("hybrid", 3).reservation_depth == 3


def test_engine_times_other_than_zero():
    """A match at t > 0 that starts at t is an allocation (grow/shrink work); later is a reservation;
    a grow at t never takes what a reservation holds later."""
    from fluxlite.errors import BusyError
    from fluxlite.queue import request_jobspec

    eng = Engine(generate_graph(nodes=4, sockets=1, cores=2))
    r = eng.match(request_jobspec("node", 2, 100), op="allocate_orelse_reserve", jobid=1, at=50)
    assert r.at == 50 and not r.reserved and eng.jobs[1] == "allocated"
    r = eng.match(request_jobspec("node", 4, 100), op="allocate_orelse_reserve", jobid=2, at=60)
    assert r.at == 150 and r.reserved and eng.jobs[2] == "reserved"
    with pytest.raises(BusyError):  # 2 nodes are free at 60, but the reservation needs them at 150
        eng.grow(1, request_jobspec("node", 1, 100), now=60)
    eng.grow(1, request_jobspec("node", 2, 80), now=60)  # ends at 140, before the reservation
    assert eng.shrink(1, paths=["/cluster0/node2", "/cluster0/node3"]) is False


class _OwnRequests(Queue):
    """Jobs carry their own request: a whole node for a job whose shape says one core."""

    by_shape = False
    match_format = "jgf"

    def job_request(self, job):
        from fluxlite.queue._request import request_jobspec

        return request_jobspec("node", 1, job.walltime)

    def on_matched(self, job, result):
        job.extra["R"] = result.text


def test_queue_hooks_match_the_jobs_own_request_for_starts_and_reservations():
    """job_request is what a start and a reservation match; on_matched sees a start's answer."""
    eng = Engine(generate_graph(nodes=2, sockets=1, cores=2))
    q = _OwnRequests(eng, "easy")
    for i in (1, 2, 3):
        q.submit(Job(i, 1, 100, unit="core"), 0)  # the shape says 1 core of 4; the request, a whole node
    assert [j.jobid for j in q.schedule(0)] == [1, 2]
    assert '"node"' in q.jobs[1].extra["R"] and "R" not in q.jobs[3].extra
    assert q.jobs[3].resv_at == 100 and eng.jobs[3] == "reserved"
    q.complete(1, 10)
    assert [j.jobid for j in q.schedule(10)] == [3] and '"node"' in q.jobs[3].extra["R"]
    assert q.jobs[3].resv_at is None and q._n_resv == 0
