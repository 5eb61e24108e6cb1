"""The static strategies' fast paths give the results of the straightforward rules.

``GridOps._spans`` re-reads a node's windows only when its ``xspans`` dict changed, and
``update_allocate`` reads the spans of an item only when its parent's window is not clear.
The references below read every window of every node, and check every item's spans, at
every call (the code before those paths).  Whole simulations on busy machines, with jobs
cancelled, killed and completed, must give every job the same outcome and leave the engine in
the same state.
"""

from __future__ import annotations

import numpy as np
import pytest

from fluxlite.api import Engine
from fluxlite.grid.ops import GridOps
from fluxlite.match._vplan import overlaps
from fluxlite.match.release import ReleaseStage
from fluxlite.match.update import UpdateStage
from fluxlite.sim.deadline.placement import Machine
from fluxlite.sim.deadline.sim import simulate
from fluxlite.sim.deadline.workload import lublin_trace


def _reference_spans(self: GridOps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xspans = self.eng.traverser.xspans
    idx, s, e = [], [], []
    for i, v in enumerate(self._node_vid):
        for a, b in (xspans[v] or {}).values():
            idx.append(i)
            s.append(a)
            e.append(b)
    return (np.array(idx, dtype=np.int64), np.array(s, dtype=np.int64), np.array(e, dtype=np.int64))


def _reference_check(self: UpdateStage, jobid: int, items, at: int, duration: int):  # type: ignore[no-untyped-def]
    for v, units, excl in items:
        if excl:
            if jobid in (self.allocs[v] or {}) or jobid in (self.resvs[v] or {}):
                return v, f"is already held by job {jobid} (a job holds a vertex once; release it first)"
            if self._avail(v, at, duration) < units:
                return v, "is not free for the window"
            if overlaps(self.xspans[v], at, duration) and self.tags[v] and jobid not in self.tags[v]:
                return v, "is in use by another job"
    return None


def record_allocations(mp: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """A list that every allocation the engine is handed from now on joins: (job, items, start, reserved)."""
    placed: list[tuple[object, ...]] = []
    alloc = Engine._allocate_items

    def record(self: Engine, jobid: int, items: list, at: int, *rest: object) -> object:  # type: ignore[type-arg]
        placed.append((jobid, tuple(items), at, rest[-1]))
        return alloc(self, jobid, items, at, *rest)  # type: ignore[arg-type]

    mp.setattr(Engine, "_allocate_items", record)
    return placed


def _run(strategy: str, comm: str, seed: int, load: str, mp: pytest.MonkeyPatch) -> tuple[object, ...]:
    """Every job's outcome, and every allocation the engine was handed: (job, items, start, reserved)."""
    placed = record_allocations(mp)
    trace = lublin_trace(150, load, "uniform", seed=seed, cores=64, lag_model="half-1h")
    r = simulate(trace, strategy, comm, machine=Machine(4, 4, 4, strategy=strategy, backend="grid"))
    return (r.outcomes, r.accepted, r.completed, r.cancelled, placed)


@pytest.mark.parametrize("strategy", ["count", "hilbert", "manhattan"])
@pytest.mark.parametrize(("seed", "load", "comm"), [(1, "heavy", "async"), (2, "very-heavy", "sync")])
def test_the_static_fast_paths_give_every_job_the_straightforward_outcome(
    strategy: str, seed: int, load: str, comm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as mp:
        fast = _run(strategy, comm, seed, load, mp)
    with monkeypatch.context() as mp:
        mp.setattr(GridOps, "_spans", _reference_spans)
        mp.setattr(UpdateStage, "_update_check", _reference_check)
        slow = _run(strategy, comm, seed, load, mp)
    assert fast[1:4] == slow[1:4]
    assert fast[4] == slow[4]
    assert fast[0] == slow[0]
    # the machine was busy: some jobs were refused, and some were booked ahead of their start
    assert fast[1] < 150
    assert any(p[3] for p in fast[4])


def _session(seed: int) -> list[tuple]:
    """Random exact allocations (whole nodes, single cores, grows, reservations ahead), cancels and
    partial releases on a grid whose nodes and cores hold many windows: each allocation is refused,
    with the same vertex and reason, exactly when the check of every item's spans refuses it, a
    refusal changes nothing, and ``GridOps._spans`` always gives every node's windows.  Returns the
    engine's state after every step."""
    import random

    from fluxlite.errors import StateError
    from fluxlite.grid import generate_grid
    from tests.fluxlite.helpers import snapshot

    rng = random.Random(seed)
    eng = Engine(generate_grid(3, 2, cores=3))
    tr = eng.traverser
    ops = eng.grid
    kinds = {"ok": 0, "refused": 0}
    steps = []
    for jobid in range(1, 400):
        at = rng.randrange(0, 2000)
        d = rng.randrange(1, 300)
        i = rng.randrange(ops.gi.n)
        cores = ops._cores[i]
        shape = rng.random()
        if shape < 0.4:
            items = list(ops._node_items[i])
        elif shape < 0.7:
            items = [(c, 1, True) for c in rng.sample(cores, rng.randrange(1, len(cores) + 1))]
        else:  # cores listed before their node, or a node with some of its cores
            items = [(c, 1, True) for c in rng.sample(cores, rng.randrange(1, len(cores) + 1))]
            items.insert(rng.randrange(len(items) + 1), (ops._node_vid[i], 1, True))
        target = jobid
        if eng.jobs and rng.random() < 0.2:  # a grow of an allocated job, over a window of its own
            target = rng.choice([j for j, st in eng.jobs.items() if st == "allocated"] or [jobid])
        expect = _reference_check(tr, target, items, at, d)
        got = tr._update_check(target, items, at, d)
        assert got == expect, (jobid, target, items, at, d)
        before = snapshot(eng)
        try:
            eng._allocate_items(target, items, at, d, None, target == jobid and rng.random() < 0.3)
        except StateError as exc:
            assert expect is not None
            assert snapshot(eng) == before
            assert str(expect[1]) in str(exc)
            kinds["refused"] += 1
        else:
            assert expect is None
            kinds["ok"] += 1
        r = rng.random()
        if eng.jobs and r < 0.15:
            eng.cancel(rng.choice(sorted(eng.jobs)))
        elif eng.jobs and r < 0.3:  # a partial release: one core of a job (as GridOps.join does)
            j = rng.choice(sorted(eng.jobs))
            held = [c for cs in ops._cores for c in cs if j in (tr.tags[c] or {})]
            if held and tr.release_groups(j, [(c, [c]) for c in rng.sample(held, 1)]):
                eng.jobs.pop(j, None)
                eng.job_at.pop(j, None)
        # the windows GridOps reads are the engine's, whatever changed it
        fast, ref = ops._spans(), _reference_spans(ops)
        assert sorted(zip(*map(list, fast))) == sorted(zip(*map(list, ref)))
        steps.append(snapshot(eng))
    assert kinds["ok"] > 50 and kinds["refused"] > 50, kinds
    return steps


def _reference_mod_kids(self: ReleaseStage, out: list[int], jobid: int) -> int:
    """The release walk's rule for a vertex's children, one recursive call each."""
    return sum(self._mod_dfv(self.g.e_dst[e], jobid) for e in out)


@pytest.mark.parametrize("seed", range(4))
def test_update_allocate_and_release_give_what_the_straightforward_rules_give(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _session(seed)
    with monkeypatch.context() as mp:
        mp.setattr(ReleaseStage, "_mod_kids", _reference_mod_kids)
        slow = _session(seed)
    assert fast == slow


def test_the_window_table_follows_changed_windows_new_columns_and_growth() -> None:
    """``GridOps._windows`` keeps one row per (node, job) window: a job's window that changes on a
    node (the node read again), a column replaced (everything read again) and more windows than
    rows (the table grows) all give the engine's windows; a free row meets no interval."""
    from fluxlite.grid import generate_grid

    eng = Engine(generate_grid(3, 2, cores=2))
    ops = eng.grid
    tr = eng.traverser

    def check() -> None:
        wi, ws, we = ops._windows()
        live = wi >= 0
        got = sorted(zip(wi[live].tolist(), ws[live].tolist(), we[live].tolist()))
        ref = sorted(zip(*map(list, _reference_spans(ops))))
        assert got == ref
        assert np.all(ws[~live] == np.iinfo(np.int64).max) and np.all(we[~live] == np.iinfo(np.int64).min)
        assert sorted(zip(*map(list, ops._spans()))) == ref

    for jobid in range(1, 41):  # 40 reservations on every node: more rows than the table starts with
        at = 100 * jobid
        for i in range(ops.gi.n):
            eng._allocate_items(jobid * 10 + i, list(ops._node_items[i]), at, 50, None, True)
        check()
    rows = len(ops._windows()[0])
    assert rows >= 40 * ops.gi.n
    v = ops._node_vid[2]
    jid = next(iter(tr.xspans[v]))
    s, e = tr.xspans[v][jid]
    tr.xspans[v][jid] = (s, e + 7)  # a window changed in place, as a walk through the vertex would
    tr._epoch[v] = tr._epoch.get(v, 0) + 1
    check()
    for j in sorted(eng.jobs)[::3]:
        eng.cancel(j)
    check()
    tr.xspans = list(tr.xspans)  # a new column (a restore): read everything again
    check()
    for j in sorted(eng.jobs):
        eng.cancel(j)
    check()
    assert not np.any(ops._windows()[0] >= 0) and len(ops._windows()[0]) == rows


def _reference_grow(gi, free, start: int, k: int, strict: bool = False):  # type: ignore[no-untyped-def]
    """The greedy growth with each new candidate's sums added up over the partition."""
    dist, dist2 = gi.dist_rows, gi.dist2_rows
    fl = free.tolist()
    part, taken = [start], {start}
    cand = {w: [dist[start][w], dist2[start][w]] for w in gi.neighbours(start) if strict or fl[w]}
    while len(part) < k:
        if not cand:
            return None
        best = min(cand, key=lambda c: (cand[c][0], cand[c][1], c))
        if strict and not fl[best]:
            return None
        del cand[best]
        part.append(best)
        taken.add(best)
        for c, acc in cand.items():
            acc[0] += dist[best][c]
            acc[1] += dist2[best][c]
        for w in gi.neighbours(best):
            if (strict or fl[w]) and w not in taken and w not in cand:
                cand[w] = [sum(dist[w][p] for p in part), sum(dist2[w][p] for p in part)]
    return part


@pytest.mark.parametrize("torus", [False, True])
def test_the_compact_growth_is_the_straightforward_growth(torus: bool) -> None:
    from fluxlite.grid import generate_grid
    from fluxlite.grid.alloc import grow_compact
    from fluxlite.grid.machine import GridInfo

    gi = GridInfo.from_graph(generate_grid(9, 6, cores=1, torus=torus))
    rng = np.random.default_rng(5)
    grown = 0
    for _ in range(300):
        free = rng.random(gi.n) < rng.uniform(0.3, 1.0)
        start = int(rng.integers(gi.n))
        k = int(rng.integers(1, 30))
        for strict in (False, True):
            got = grow_compact(gi, free, start, k, strict=strict)
            assert got == _reference_grow(gi, free, start, k, strict=strict)
            grown += got is not None and len(got) > 5
    assert grown > 50
