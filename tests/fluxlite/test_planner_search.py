"""The planners' earliest-time search against the one-by-one search it replaces.

``PlannerMulti.avail_time_first``/``avail_time_next`` skip the index-0
type's candidates that another type cannot serve (``Planner.fit_time``).
Fluxion takes those candidates one by one (``avail_time_next``) and tests
each with ``avail_during``; the reference below does exactly that on a deep
copy.  Answers, errno and the index-0 planner's iteration state (cursor,
search keys) must be the same after every call, on random multi-planners
with stale keys (``update_total``), partly given back spans, types added
during an iteration, a count-0 first type (the graph's root: ``core`` of
total 0) and windows that run past the plan end.
"""

from __future__ import annotations

import contextlib
import copy
import random

import pytest

from fluxlite.errors import PlannerError
from fluxlite.planner import Planner, PlannerMulti
from tests.fluxlite.helpers import one_by_one_first, one_by_one_next


def _iter_state(pm: PlannerMulti) -> tuple:
    p0 = pm._planners[0]
    return (p0._cursor, p0._iter, None if p0._key is None else list(p0._key), p0.points())


def _random_multi(rng: random.Random) -> PlannerMulti:
    end = rng.choice((40, 200))
    ntypes = rng.randint(2, 3)
    types = ["core", "node", "gpu"][:ntypes]
    totals = [rng.choice((0, 0, 4))] + [rng.randint(1, 8) for _ in range(ntypes - 1)]
    pm = PlannerMulti(0, end, totals, types)
    live: list[int] = []
    for _ in range(rng.randint(0, 60)):
        r = rng.random()
        if r < 0.15 and live:
            pm.rem_span(live.pop(rng.randrange(len(live))))
        elif r < 0.2 and live:
            sid = rng.choice(live)
            red = {t: rng.randint(0, pm.span_planned_at(sid, i)) for i, t in enumerate(pm._types)}
            if pm.reduce_span(sid, red):
                live.remove(sid)
        elif r < 0.23:
            pm.update([max(0, x + rng.randint(-2, 3)) for x in pm._totals], list(pm._types))
        else:
            s = rng.randrange(end)
            dur = rng.randint(1, max(1, min(end - s, 40)))
            counts = [rng.randint(0, max(0, t)) for t in pm._totals]
            with contextlib.suppress(PlannerError):
                live.append(pm.add_span(s, dur, counts))
    return pm


@pytest.mark.parametrize("seed", range(6))
def test_multi_search_equals_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(150):
        pm = _random_multi(rng)
        for _q in range(4):
            end = pm._planners[0]._end
            ooa = rng.randrange(end)
            d = rng.randint(1, end // 2)
            counts = [rng.randint(0, t + 1) for t in pm._totals]
            ref = copy.deepcopy(pm)
            got = [pm.avail_time_first(ooa, d, counts)]
            want = [one_by_one_first(ref, ooa, d, counts)]
            assert (got, pm.errno) == (want, ref.errno)
            assert _iter_state(pm) == _iter_state(ref)
            for k in range(rng.randint(0, 8)):
                if k == 3 and rng.random() < 0.3:  # a type added during the iteration
                    types = [*pm._types, "mem"] if "mem" not in pm._types else pm._types
                    for m in (pm, ref):
                        m.update([*m._totals, 5][: len(types)], types)
                got.append(pm.avail_time_next())
                want.append(one_by_one_next(ref))
                assert (got, pm.errno) == (want, ref.errno)
                assert _iter_state(pm) == _iter_state(ref)
                checked += 1
    assert checked > 500


def _brute_fit(p: Planner, at: int, d: int, r: int) -> int | None:
    for t in range(at, p.plan_end):
        if p.avail_during(t, d, r):
            return t
    return None


@pytest.mark.parametrize("seed", range(3))
def test_fit_time_is_the_first_time_avail_during_holds(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(200):
        pm = _random_multi(rng)
        p = pm._planners[1]
        before = (p._cursor, p._iter, p.points())
        for _q in range(5):
            at = rng.randrange(p.plan_end)
            d = rng.randint(1, p.plan_end // 2)
            r = rng.randint(0, p.resource_total + 1)
            assert p.fit_time(at, d, r) == _brute_fit(p, at, d, r)
        assert (p._cursor, p._iter, p.points()) == before
