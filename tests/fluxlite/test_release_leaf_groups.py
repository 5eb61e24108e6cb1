"""``release_groups`` of leaves released alone (a leak's join) leaves exactly the state of the general steps.

``ReleaseStage._release_groups`` sums what the leaves released alone give
back per parent and reduces each ancestor once; with ``batched = False`` on
the traverser every leaf takes the general steps (its subtree's top, then its
whole ancestor chain).  ``_reduce_ancestor`` skips the types nothing is left
of and the second pass once nothing is left (``_reduction_cuts``); the plain engine
here runs the straightforward rule below instead (both passes over every span and type).
Random leak sessions (starts, forks at later times, so jobs hold spans over
several windows, joins of several processes, cancels) run through both
engines, and the whole engine state is compared after every step.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.errors import FluxliteError
from fluxlite.grid import generate_grid
from tests.fluxlite.test_update_batched import full_state


def _reference_cuts(p: Any, spans: list[int], red: dict) -> dict[int, dict[str, int]]:
    """``_reduction_cuts`` as first written: both passes over every span and every type."""
    left = dict(red)
    cuts: dict[int, dict[str, int]] = {sp: {} for sp in spans}
    for exact in (True, False):
        for span in spans:
            at, dur = p.span_window(span)
            for i, t in enumerate(p.resource_types):
                room = p.span_planned_at(span, i) - cuts[span].get(t, 0)
                if room <= 0:
                    continue
                for k, c in left.items():
                    if c <= 0 or k[0] != t or (exact and (k[1], k[2]) != (at, at + dur)):
                        continue
                    take = min(c, room)
                    cuts[span][t] = cuts[span].get(t, 0) + take
                    left[k] = c - take
                    room -= take
                    if room == 0:
                        break
    return cuts


def _pair() -> tuple[Engine, Engine, list[int]]:
    fast = Engine(generate_grid(4, 3, cores=4), policy="first")
    plain = Engine(generate_grid(4, 3, cores=4), policy="first")
    tr = plain.traverser
    tr.batched = False
    tr._reduction_cuts = _reference_cuts  # type: ignore[method-assign]
    # how many leaves the fast engine released alone per call (the sessions must cover the path)
    leaves: list[int] = []
    real = fast.traverser._release_groups

    def counting(jobid: int, groups: list, under: Any = None) -> bool:
        leaves.append(sum(1 for r, v in groups if v == [r]))
        return real(jobid, groups, under)

    fast.traverser._release_groups = counting  # type: ignore[method-assign]
    return fast, plain, leaves


def _step(eng: Engine, rng_state: tuple, op: str, arg: Any) -> Any:
    rng = random.Random()
    rng.setstate(rng_state)
    try:
        if op == "start":
            jobid, n, now, dur, strategy = arg
            job = eng.leak_start(n, strategy=strategy, now=now, duration=dur, jobid=jobid)
            return ("started", [(p.node, p.core) for p in job.procs])
        if op == "fork":
            jobid, now, k = arg
            job = eng.leak_jobs[jobid]
            with eng.grid.fork_batch(jobid, now) as b:
                for _ in range(k):
                    b.fork(job.procs[rng.randrange(len(job.procs))].node)
            return ("forked", [(p.node, p.core) for p in job.procs])
        if op == "join":
            jobid, picks = arg
            job = eng.leak_jobs[jobid]
            return ("joined", eng.leak_join(jobid, [job.procs[i] for i in picks]))
        eng.cancel(arg)
        return ("cancelled",)
    except FluxliteError as e:
        return ("refused", type(e).__name__)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_leaf_releases_leave_the_state_of_the_general_steps(seed: int) -> None:
    rng = random.Random(seed)
    fast, plain, leaves = _pair()
    now = 0
    next_id = 1
    for _ in range(160):
        live = [j for j in fast.leak_jobs if fast.leak_jobs[j].procs and fast.leak_jobs[j].end > now]
        r = rng.random()
        if r < 0.25 or not live:
            arg: Any = (next_id, rng.randint(1, 10), now, rng.randint(20, 200), rng.choice(["leak", "leak-noncontig"]))
            next_id += 1
            op = "start"
        elif r < 0.55:
            op, arg = "fork", (rng.choice(live), now, rng.randint(1, 6))
        elif r < 0.92:
            j = rng.choice(live)
            n = len(fast.leak_jobs[j].procs)
            op, arg = "join", (j, rng.sample(range(n), rng.randint(1, min(n, 8))))
        else:
            op, arg = "cancel", rng.choice(live)
        st = rng.getstate()
        got = _step(fast, st, op, arg)
        want = _step(plain, st, op, arg)
        assert got == want, (op, arg)
        assert full_state(fast) == full_state(plain), (op, arg)
        now += rng.randint(0, 7)
    # the sessions took the fast path, several leaves a call
    assert sum(leaves) > 50 and max(leaves) >= 3


@pytest.mark.parametrize("shift", [0, 1])
def test_reduce_ancestor_takes_what_matches_no_window_from_the_spans_newest_first(shift: int) -> None:
    """Units released in a window none of the ancestor's spans has (``shift`` 1) are taken in the second pass."""
    fast, plain, _ = _pair()
    for eng in (fast, plain):
        eng.leak_start(3, strategy="leak", now=0, duration=100, jobid=1)
        with eng.grid.fork_batch(1, 10) as b:  # a second window on the same nodes: two spans each
            b.fork(eng.leak_jobs[1].procs[0].node)
            b.fork(eng.leak_jobs[1].procs[0].node)
    tr = fast.traverser
    node = tr.g.parent(fast.leak_jobs[1].procs[0].core, tr.dom)
    assert tr._extra_spans.get((tr.dom, node, 1))  # the node holds the job over two windows
    red = {("core", 10 + shift, 100): 2, ("core", shift, 100): 2}
    got = fast.traverser._reduce_ancestor(node, 1, dict(red))
    want = plain.traverser._reduce_ancestor(node, 1, dict(red))
    assert got == want
    assert full_state(fast) == full_state(plain)
