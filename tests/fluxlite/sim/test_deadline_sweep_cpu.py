"""The sweep's CPU savings change nothing: the collector's thresholds, the run summary, and the local
workers taking a trace's runs together."""

from __future__ import annotations

import dataclasses
import gc
import os

import pytest

from fluxlite.sim.deadline import sweep as sweep_mod
from fluxlite.sim.deadline.sim import GC_YOUNG_THRESHOLD, simulate
from fluxlite.sim.deadline.sweep import KEY, WALL_COLUMNS, groups, plan
from fluxlite.sim.deadline.workload import lublin_trace

SMALL = {"jobs": 30, "width": 4, "height": 3, "cores": 2}


def test_a_run_collects_less_often_and_puts_the_thresholds_back() -> None:
    jobs = lublin_trace(30, "heavy", "uniform", seed=2, cores=24)
    seen: list[tuple[int, int, int]] = []
    old = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        res = simulate(jobs, "leak", "sync", width=4, height=3, cores_per_node=2, snapshots=[1.0])
        gc.set_threshold(0, 10, 10)  # automatic collection off: a run leaves it off
        simulate(jobs, "count", "async", width=4, height=3, cores_per_node=2)
        seen.append(gc.get_threshold())
    finally:
        gc.set_threshold(*old)
    assert seen == [(0, 10, 10)]
    assert res.accepted > 0
    assert GC_YOUNG_THRESHOLD > 700


def test_the_threshold_applies_while_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from fluxlite.sim.deadline import sim

    during: list[tuple[int, int, int]] = []
    real = sim.DeadlineSim._finish

    def spy(self, r, outcome):  # type: ignore[no-untyped-def]
        during.append(gc.get_threshold())
        return real(self, r, outcome)

    monkeypatch.setattr(sim.DeadlineSim, "_finish", spy)
    old = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        simulate(lublin_trace(20, "heavy", "1", seed=1, cores=24), "hilbert", width=4, height=3, cores_per_node=2)
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*old)
    assert during and set(during) == {(GC_YOUNG_THRESHOLD, 10, 10)}
    assert after == (700, 10, 10)


def test_summary_is_asdict_without_the_per_job_lists() -> None:
    res = simulate(lublin_trace(20, "normal", "2", seed=5, cores=24), "manhattan", width=4, height=3, cores_per_node=2)
    want = dataclasses.asdict(res)
    del want["outcomes"], want["snapshots"]
    assert res.summary() == want and list(res.summary()) == list(want)


def test_groups_keep_a_traces_runs_of_one_style_together_in_plan_order() -> None:
    specs = plan(["count", "leak"], ["heavy", "normal"], ["1", "2"], ["async", "sync"], 2, **SMALL)
    got = groups(specs[::-1])
    assert sorted(s.key for g in got for s in g) == sorted(s.key for s in specs)
    assert len(got) == 16
    for g in got:
        assert len({(s.load, s.type, s.trace, s.comm) for s in g}) == 1
        assert [s.strategy for s in g] == ["leak", "count"]  # in the order given
    firsts = [specs[::-1].index(g[0]) for g in got]
    assert firsts == sorted(firsts)


_REAL_RUN_ONE = sweep_mod.run_one


def _tagged(spec, should_stop=None):  # type: ignore[no-untyped-def]
    """``run_one`` with the worker's pid in the row (module level: the workers unpickle it by name)."""
    return _REAL_RUN_ONE(spec) | {"pid": os.getpid()}


def test_workers_taking_whole_groups_give_the_rows_of_one_process(tmp_path, monkeypatch) -> None:
    """Two local workers, a whole group each at first (then a worker may take over another's last
    runs): the same rows as one process running the plan in order, each group run front to back
    by the worker that took it, and only its tail by another."""
    specs = plan(["count", "hilbert", "leak"], ["heavy"], ["uniform", "3"], ["async", "sync"], 1, **SMALL)
    one = {tuple(str(r[k]) for k in KEY): r for r in (sweep_mod.run_one(s) for s in specs)}
    monkeypatch.setattr(sweep_mod, "run_one", _tagged)
    monkeypatch.setattr(sweep_mod, "_AHEAD", 1)  # one run at a time per worker: the tail is shared
    rows = list(sweep_mod._local(specs, 2))
    assert len(rows) == 12
    pids = {tuple(str(r[k]) for k in KEY): r.pop("pid") for r in rows}
    two = {tuple(str(r[k]) for k in KEY): r for r in rows}
    assert {k: {c: v for c, v in r.items() if c not in WALL_COLUMNS} for k, r in one.items()} == {
        k: {c: v for c, v in r.items() if c not in WALL_COLUMNS} for k, r in two.items()
    }
    # A worker runs its group from the front and an idle worker takes over runs from the back
    # (only once no group is left), so whatever the timing, each group's runs are a prefix run by
    # the worker that took the group and a suffix run by others; runs handed out one by one
    # (round robin) would interleave the two.  Which worker is faster depends on the machine's
    # load, so how long each prefix is is not asserted.
    for g in groups(specs):
        owner = [pids[s.key] == pids[g[0].key] for s in g]
        assert owner == sorted(owner, reverse=True), owner
    first, second = groups(specs)[:2]  # handed out first, one to each worker, before any run ends
    assert pids[first[0].key] != pids[second[0].key] and os.getpid() not in pids.values()
