"""The deadline simulator's window lookups and phase boundaries give the straightforward results.

* ``GridOps._near`` (the windows that meet a range, found through time buckets) against every
  window of every node read straight from the engine's ``xspans`` and tested one by one;
* ``GridOps._windows`` (stamps compared a part at a time, changed nodes diffed by (job,
  window) pairs) and ``GridOps._down`` (the statuses' mask built again only on a change) against
  the engine, after every step of random sessions;
* a leak's phase boundary with no join and no fork (the placement kept, no re-read of the
  processes) against the boundary rule that re-reads them at every boundary.

Whole simulations must give every job the same outcome, the same allocations and the same
metrics, float for float.
"""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest

from fluxlite.api import Engine
from fluxlite.errors import StateError
from fluxlite.graph import UP
from fluxlite.grid import generate_grid
from fluxlite.grid.ops import GridOps
from fluxlite.sim.deadline.placement import Machine
from fluxlite.sim.deadline.sim import DeadlineSim, simulate
from fluxlite.sim.deadline.workload import lublin_trace
from tests.fluxlite.grid.test_static_fast_paths import record_allocations


def _engine_windows(ops: GridOps) -> list[tuple[int, int, int]]:
    """Every (grid index, start, end) window, read straight from the engine."""
    xspans = ops.eng.traverser.xspans
    return [(i, s, e) for i, v in enumerate(ops._node_vid) for s, e in (xspans[v] or {}).values()]


def _reference_near(self: GridOps, t0: int, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows that meet ``[t0, limit)``: each window of each node tested (no table, no buckets)."""
    got = [w for w in _engine_windows(self) if w[1] < limit and w[2] > t0]
    cols = list(zip(*got)) if got else [(), (), ()]
    return tuple(np.array(c, dtype=np.int64) for c in cols)  # type: ignore[return-value]


def _rows(arrs: tuple[np.ndarray, ...]) -> list[tuple[int, ...]]:
    return sorted(zip(*(a.tolist() for a in arrs)))


@pytest.mark.parametrize("seed", [1, 2])
def test_near_and_down_follow_the_engine_through_random_sessions(seed: int) -> None:
    """Reservations short and long (many buckets, and unlimited: wide rows), cancels, partial
    releases and nodes going down and up: after every step the windows meeting random ranges
    are the engine's, and so is the mask of the nodes down."""
    rng = random.Random(seed)
    eng = Engine(generate_grid(4, 3, cores=2))
    ops = eng.grid
    tr = eng.traverser
    g = eng.graph
    kinds = {"wide": 0, "multi": 0, "down": 0}
    for jobid in range(1, 260):
        i = rng.randrange(ops.gi.n)
        at = rng.randrange(0, 3_000_000)
        r = rng.random()
        if r < 0.1:
            d = None  # until the end of the graph's time: a wide row
            kinds["wide"] += 1
        elif r < 0.5:
            d = rng.randrange(40_000, 900_000)  # over several buckets
            kinds["multi"] += 1
        else:
            d = rng.randrange(1, 5_000)
        items = list(ops._node_items[i]) if rng.random() < 0.6 else [(rng.choice(ops._cores[i]), 1, True)]
        with contextlib.suppress(StateError):  # not free for the window: refused, nothing changed
            eng._allocate_items(jobid, items, at, d, None, rng.random() < 0.5)
        r = rng.random()
        if eng.jobs and r < 0.2:
            eng.cancel(rng.choice(sorted(eng.jobs)))
        elif eng.jobs and r < 0.3:
            j = rng.choice(sorted(eng.jobs))
            held = [c for cs in ops._cores for c in cs if j in (tr.tags[c] or {})]
            if held and tr.release_groups(j, [(c, [c]) for c in rng.sample(held, 1)]):
                eng.jobs.pop(j, None)
                eng.job_at.pop(j, None)
        if rng.random() < 0.1:  # a node goes down, or comes back up
            v = ops._node_vid[rng.randrange(ops.gi.n)]
            g.v_status[v] = UP if g.v_status[v] != UP else UP + 1
            kinds["down"] += 1
        for _ in range(4):
            t0 = rng.randrange(0, 4_000_000)
            limit = t0 + rng.choice([1, 100, 30_000, 400_000, 3_000_000])
            assert _rows(ops._near(t0, limit)) == _rows(_reference_near(ops, t0, limit))
        assert sorted(zip(*(a.tolist() for a in ops._spans()))) == sorted(_engine_windows(ops))
        want = np.array([g.v_status[v] != UP for v in ops._node_vid])
        assert np.array_equal(ops._down(), want)
    assert kinds["wide"] > 10 and kinds["multi"] > 50 and kinds["down"] > 10, kinds
    assert ops._wide, "no wide row was live at the end"


def _table(ops: GridOps) -> list[tuple[int, int, int]]:
    """The window table's live rows as they stand (no read from the engine)."""
    live = ops._wi >= 0
    return sorted(zip(ops._wi[live].tolist(), ops._ws[live].tolist(), ops._we[live].tolist()))


@pytest.mark.parametrize("seed", [3, 4])
def test_own_allocations_and_cancels_keep_the_table_in_step_without_a_reread(seed: int) -> None:
    """``allocate_deadline`` and ``GridOps.cancel`` bring the rows and stamps of the nodes they
    change up to date at once (``_follow``): after either, every node is in step with the engine
    and the table holds the engine's windows before any ``_windows`` call.  Changes made behind
    the table's back (a core allocated, a partial release, ``Engine.cancel``) are still found by
    the next read."""
    from fluxlite.errors import MatchError

    rng = random.Random(seed)
    eng = Engine(generate_grid(4, 3, cores=2), policy="hilbert")
    ops = eng.grid
    tr = eng.traverser
    own = foreign = 0
    for jobid in range(1, 220):
        r = rng.random()
        if r < 0.55:
            now = rng.randrange(0, 200_000)
            try:
                ops.allocate_deadline(
                    rng.randint(1, 5), now + rng.randrange(0, 50_000), now + rng.randrange(1_000, 400_000),
                    now=now, duration=rng.randrange(500, 100_000), jobid=jobid,
                )
            except MatchError:
                continue
        elif r < 0.8 and eng.jobs:
            ops.cancel(rng.choice(sorted(eng.jobs)))
            if ops._cols is None:
                continue
        else:  # behind the table's back
            foreign += 1
            if r < 0.88 and eng.jobs:
                eng.cancel(rng.choice(sorted(eng.jobs)))
            elif r < 0.94 and eng.jobs:
                j = rng.choice(sorted(eng.jobs))
                held = [c for cs in ops._cores for c in cs if j in (tr.tags[c] or {})]
                if held and tr.release_groups(j, [(c, [c]) for c in rng.sample(held, 1)]):
                    eng.jobs.pop(j, None)
                    eng.job_at.pop(j, None)
            else:
                i = rng.randrange(ops.gi.n)
                with contextlib.suppress(StateError):
                    eng._allocate_items(jobid, [(rng.choice(ops._cores[i]), 1, True)], 0, 1000, None, False)
            t0 = rng.randrange(0, 400_000)
            assert _rows(ops._near(t0, t0 + 100_000)) == _rows(_reference_near(ops, t0, t0 + 100_000))
            continue
        own += 1
        assert all(ops._synced(i) for i in range(ops.gi.n))
        assert _table(ops) == sorted(_engine_windows(ops))
    assert own > 100 and foreign > 20


def test_allocate_deadline_hands_back_the_nodes_it_placed() -> None:
    eng = Engine(generate_grid(4, 4, cores=2), policy="manhattan")
    for jobid, k in enumerate([3, 5, 2, 6], start=1):
        nodes: list[int] = []
        eng.grid.allocate_deadline(k, 0, 1000, duration=100, jobid=jobid, nodes=nodes)
        assert nodes == eng.job_nodes(jobid) and len(nodes) == k


def _run(
    strategy: str, comm: str, seed: int, load: str, jtype: str, mp: pytest.MonkeyPatch
) -> tuple[object, ...]:
    placed = record_allocations(mp)
    # a busy machine: windows stand in the way
    trace = lublin_trace(150, load, jtype, seed=seed, cores=64, lag_model="half-1h")
    snaps = [trace[k].submit + 0.5 for k in (30, 90)]
    r = simulate(
        trace, strategy, comm, machine=Machine(4, 4, 4, strategy=strategy, backend="grid"), snapshots=snaps
    )
    return (r.summary() | {"wall_seconds": 0}, r.outcomes, r.snapshots, placed)


@pytest.mark.parametrize(
    ("strategy", "seed", "load", "comm"),
    [("count", 1, "heavy", "async"), ("hilbert", 2, "very-heavy", "sync"), ("manhattan", 3, "heavy", "sync")],
)
def test_static_runs_find_the_windows_each_window_tested_finds(
    strategy: str, seed: int, load: str, comm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as mp:
        fast = _run(strategy, comm, seed, load, "uniform", mp)
    with monkeypatch.context() as mp:
        mp.setattr(GridOps, "_near", _reference_near)
        slow = _run(strategy, comm, seed, load, "uniform", mp)
    assert fast == slow
    # windows stood in the way: some job was refused, or started after its earliest start
    trace = lublin_trace(150, load, "uniform", seed=seed, cores=64, lag_model="half-1h")
    earliest = {j.jobid: j.earliest_start for j in trace}
    outcomes = fast[1]
    assert isinstance(outcomes, list)
    assert any(o[1] == "rejected" or o[2] > earliest[o[0]] for o in outcomes)


def _reference_phase_end(self: DeadlineSim, r) -> None:  # type: ignore[no-untyped-def]
    """A grid leak's boundary as before the shortcut: the processes re-read at every boundary."""
    prog = r.prog
    i = r.phase + 1
    if (
        self.leak
        and self.grid
        and i < prog.phases
        and not prog.forks[i]
        and prog.active[i] == prog.active[i - 1]
    ):
        self._drop_traffic(r)
        r.phase = i
        r.place = None
        self._grid_sync(r)
        self._phase(r)
        return
    _FAST_PHASE_END(self, r)


_FAST_PHASE_END = DeadlineSim._phase_end


@pytest.mark.parametrize(
    ("strategy", "seed", "load", "comm", "jtype"),
    [("leak", 1, "heavy", "async", "1"), ("leak-noncontig", 2, "very-heavy", "sync", "uniform")],
)
def test_leak_boundaries_without_joins_or_forks_keep_the_placement_with_the_same_results(
    strategy: str, seed: int, load: str, comm: str, jtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as mp:
        fast = _run(strategy, comm, seed, load, jtype, mp)
    with monkeypatch.context() as mp:
        mp.setattr(DeadlineSim, "_phase_end", _reference_phase_end)
        slow = _run(strategy, comm, seed, load, jtype, mp)
    assert fast == slow
    summary = fast[0]
    assert isinstance(summary, dict) and summary["accepted"] > 0 and summary["utilization"] > 0
