"""SchedulerCore without Flux: the decisions the broker module relays (fake clock, fake R)."""

from __future__ import annotations

import json

import pytest

from fluxlite.errors import InputError
from fluxsched.config import parse_settings
from fluxsched.core import SchedulerCore
from tests.fluxsched.conftest import fake_R


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def jobspec(ntasks: int = 1, cores: int = 1, nodes: int = 0, duration: float = 0, exclusive: bool = False,
            gpus: int = 0, constraint: dict | None = None) -> dict:
    inner = [{"type": "core", "count": cores}]
    if gpus:
        inner.append({"type": "gpu", "count": gpus})
    slot = {"type": "slot", "count": ntasks, "with": inner, "label": "task"}
    res = [slot]
    if nodes:
        node = {"type": "node", "count": nodes, "with": [slot]}
        if exclusive:
            node["exclusive"] = True
        res = [node]
    system: dict = {"duration": duration, "cwd": "/tmp", "environment": {"HOME": "/root"}}
    if constraint is not None:
        system["constraints"] = constraint
    return {
        "version": 1,
        "resources": res,
        "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {"system": system},
    }


def cores_of(R: dict) -> int:
    from fluxlite.idset import decode

    return sum(len(decode(e["rank"])) * len(decode(e["children"]["core"])) for e in R["execution"]["R_lite"])


def started(decisions):
    return {d.flux_id: d for d in decisions if d.kind == "success"}


def test_jobs_start_in_order_and_a_job_that_never_fits_is_denied_with_the_reason():
    core = SchedulerCore(fake_R(2, 4), clock=Clock())
    assert core.submit(1, 16, jobspec(4)) is None
    assert core.submit(2, 16, jobspec(4)) is None
    assert core.submit(3, 16, jobspec(1)) is None
    note = core.submit(4, 16, jobspec(1, nodes=3))
    assert note is not None and "unsatisfiable" in note and "2 nodes" in note
    assert 4 not in core.pending
    s = started(core.schedule())
    assert set(s) == {1, 2} and cores_of(s[1].R) == 4
    # fcfs: job 3 waits for a free, and its R has a wall-clock start
    assert 3 in core.pending and s[1].R["execution"]["starttime"] == core.clock()
    core.free(1, s[1].R, final=True)
    assert set(started(core.schedule())) == {3}


def test_a_job_without_time_limit_starts_after_time_zero():
    clock = Clock()
    core = SchedulerCore(fake_R(2, 4), clock=clock)
    clock.t += 12
    core.submit(1, 16, jobspec(1, nodes=2, exclusive=True))
    s = started(core.schedule())
    assert 1 in s and s[1].R["execution"]["expiration"] == 0.0


def test_exclusive_node_takes_every_core_and_shared_jobs_pack():
    core = SchedulerCore(fake_R(2, 4), clock=Clock())
    core.submit(1, 16, jobspec(1, nodes=1, exclusive=True))
    core.submit(2, 16, jobspec(1))
    core.submit(3, 16, jobspec(1))
    s = started(core.schedule())
    assert cores_of(s[1].R) == 4
    r2, r3 = s[2].R["execution"]["R_lite"], s[3].R["execution"]["R_lite"]
    assert r2[0]["rank"] == r3[0]["rank"] != s[1].R["execution"]["R_lite"][0]["rank"]


def test_cancel_of_a_pending_job_and_priority_changes_reorder_the_queue():
    core = SchedulerCore(fake_R(1, 2), clock=Clock())
    core.submit(1, 16, jobspec(2))
    core.submit(2, 16, jobspec(2))
    core.submit(3, 16, jobspec(2))
    s = started(core.schedule())
    assert set(s) == {1}
    core.prioritize([[3, 20]])
    assert core.cancel(2) is True and core.cancel(2) is False
    core.free(1, None, final=True)
    assert set(started(core.schedule())) == {3}


def test_hello_rebuilds_running_jobs_and_nothing_is_double_booked():
    R = fake_R(2, 4)
    a = SchedulerCore(R, clock=Clock())
    for i in (1, 2, 3):
        a.submit(i, 16, jobspec(2))
    s = started(a.schedule())
    b = SchedulerCore(R, clock=Clock())
    for fid, d in s.items():
        b.hello(fid, json.loads(json.dumps(d.R)))
    b.submit(11, 16, jobspec(2))
    b.submit(10, 16, jobspec(2))
    got = started(b.schedule())
    assert set(got) == {11}  # 6 of 8 cores are held: only 2 are free
    used = b.status()["allocated"]
    assert cores_of(used) == 8


def test_hello_drops_ranks_already_freed():
    R = fake_R(2, 4)
    a = SchedulerCore(R, clock=Clock())
    a.submit(1, 16, jobspec(1, nodes=2, exclusive=True))
    d = started(a.schedule())[1]
    b = SchedulerCore(R, clock=Clock())
    b.hello(1, d.R, free_ranks=[1])
    assert cores_of(b.status()["allocated"]) == 4
    b.submit(2, 16, jobspec(1, nodes=1, exclusive=True))
    assert 2 in started(b.schedule())


def test_partial_free_then_final():
    core = SchedulerCore(fake_R(2, 4), clock=Clock())
    core.submit(1, 16, jobspec(1, nodes=2, exclusive=True))
    R = started(core.schedule())[1].R
    core.submit(2, 16, jobspec(1, nodes=1, exclusive=True))
    assert core.schedule() == [] or 2 in core.pending
    part = {"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "0-3"}}]}}
    core.free(1, part, final=False)
    assert 2 in started(core.schedule())
    assert cores_of(core.status()["allocated"]) == 8
    core.free(1, R, final=True)
    assert cores_of(core.status()["allocated"]) == 4


def test_down_ranks_are_skipped_and_shown_and_shrink_removes_them():
    core = SchedulerCore(fake_R(2, 4), clock=Clock(), up=[0])
    st = core.status()
    assert st["down"]["execution"]["R_lite"][0]["rank"] == "1"
    core.submit(1, 16, jobspec(1, nodes=1, exclusive=True))
    core.submit(2, 16, jobspec(1, nodes=1, exclusive=True))
    assert set(started(core.schedule())) == {1}
    core.set_up([1])
    assert set(started(core.schedule())) == {2}
    core.free(2, None, final=True)
    assert core.infeasible(jobspec(1, nodes=2)) is None
    core.shrink([1])
    assert cores_of(core.status()["all"]) == 4
    # the feasibility answer is not a stale one from before the shrink
    assert "unsatisfiable" in core.infeasible(jobspec(1, nodes=2))


def test_time_limits_give_expiration_and_easy_reserves_with_an_estimate():
    clock = Clock()
    core = SchedulerCore(fake_R(1, 4), parse_settings(["queue-policy=easy"]), clock=clock)
    core.submit(1, 16, jobspec(4, duration=100))
    core.submit(2, 16, jobspec(4, duration=50))
    core.submit(3, 16, jobspec(1, duration=10))
    out = core.schedule()
    s = started(out)
    assert set(s) == {1}
    assert s[1].R["execution"]["expiration"] == pytest.approx(clock() + 100)
    est = [d for d in out if d.kind == "annotate" and d.flux_id == 2]
    assert est and est[0].annotations["sched"]["t_estimate"] >= clock() + 100


def test_overrun_extends_the_span_and_expiration_updates_replan():
    clock = Clock()
    core = SchedulerCore(fake_R(1, 2), parse_settings(["queue-policy=easy"]), clock=clock)
    core.submit(1, 16, jobspec(2, duration=5))
    assert 1 in started(core.schedule())
    core.submit(2, 16, jobspec(2, duration=5))
    core.schedule()
    clock.t += 20  # job 1 is past its time limit but its free has not arrived
    assert started(core.schedule()) == {}
    with pytest.raises(InputError):
        core.set_expiration(99, clock.t + 10)
    core.set_expiration(1, clock.t + 100)
    clock.t += 50
    assert started(core.schedule()) == {}
    core.free(1, None, final=True)
    assert 2 in started(core.schedule())


def test_bad_settings_are_refused_with_one_line():
    with pytest.raises(InputError, match="unknown setting"):
        parse_settings(["bogus=1"])
    with pytest.raises(InputError, match="queue-policy"):
        parse_settings(["queue-policy=lifo"])
    with pytest.raises(InputError, match="queue-depth"):
        parse_settings(["queue-depth=0"])
    s = parse_settings(["queue-depth=8"], {"policy": "low"})
    assert s.queue_depth == 8 and s.policy == "low"


def test_R_with_a_scheduling_key_is_read_as_jgf_and_keeps_its_detail():
    from pathlib import Path

    from fluxlite.api import Engine
    from fluxlite.jobspec import parse_jobspec

    parent = Engine.from_file(Path(__file__).parents[2] / "fluxlite/data/default.graphml", format="grug")
    sock = {"type": "socket", "count": 1, "with": [{"type": "slot", "count": 1, "label": "task",
                                                   "with": [{"type": "core", "count": 2}, {"type": "gpu", "count": 1}]}]}
    spec = {"version": 1, "resources": [{"type": "node", "count": 2, "with": [sock]}],
            "tasks": [{"command": ["x"], "slot": "task", "count": {"per_slot": 1}}], "attributes": {}}
    R = json.loads(parent.match(parse_jobspec(json.dumps(spec)), op="allocate", fmt="rv1").text)
    assert "scheduling" in R
    core = SchedulerCore(R, clock=Clock())
    assert core.engine.graph.types()["socket"] == 2  # the JGF's levels, which R_lite cannot carry
    # a request by socket only fits a graph that has sockets
    sub = {**spec, "resources": [{"type": "node", "count": 1, "with": [sock]}]}
    assert core.submit(1, 16, sub) is None
    s = started(core.schedule())
    assert cores_of(s[1].R) == 2 and s[1].R["execution"]["R_lite"][0]["children"]["gpu"] == "1"
    assert cores_of(core.status()["all"]) == 4
