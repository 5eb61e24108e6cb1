"""Scenarios ported from Fluxion's planner tests (planner_test01.cpp, planner_errno_test.cpp).

Inputs and expected answers are Fluxion's; only the stress loops marked
``slow`` are also run at a reduced size by default.
"""

from __future__ import annotations

import pytest

from fluxlite.errors import PlannerError
from fluxlite.planner import EBUSY, EINVAL, ENOENT, ERANGE, Planner

INT64_MAX = 2**63 - 1


def _errno_of(fn, *args) -> str:
    with pytest.raises(PlannerError) as info:
        fn(*args)
    return info.value.errno


# --------------------------------------------------------------------------- test01


def test_getters() -> None:
    """Base time, duration, total and type read back as given."""
    p = Planner(0, 9999, 10, "1")
    assert p.base_time == 0
    assert p.duration == 9999
    assert p.plan_end == 9999
    assert p.resource_total == 10
    assert p.resource_type == "1"


def test_basic_add_remove() -> None:
    """Fluxion's test_basic_add_remove: first-fit times and span removal."""
    p = Planner(0, 10, 1, "B")
    t = p.avail_time_first(0, 5, 1)
    assert t == 0
    span1 = p.add_span(t, 5, 1)
    assert span1 == 1
    t = p.avail_time_first(0, 2, 1)
    assert t == 5
    span2 = p.add_span(t, 2, 1)
    t = p.avail_time_first(0, 2, 1)
    assert t == 7
    span3 = p.add_span(t, 2, 1)
    assert p.avail_time_first(0, 2, 1) is None
    assert p.errno == ENOENT
    t = p.avail_time_first(0, 1, 1)
    assert t == 9
    span4 = p.add_span(t, 1, 1)
    assert span4 == 4
    assert p.span_start_time(span2) == 5
    p.rem_span(span2)
    p.rem_span(span3)
    assert p.avail_time_first(0, 5, 1) is None
    t = p.avail_time_first(0, 4, 1)
    assert t == 5
    assert p.add_span(t, 4, 1) == 5
    assert span1 != span2


def _checkers_planner() -> Planner:
    p = Planner(0, INT64_MAX, 10, "A")
    assert p.avail_during(0, 1, 10)
    assert p.avail_during(1, 1000, 5)
    p.add_span(1, 1000, 5)
    p.avail_during(2000, 1001, 10)
    p.add_span(2000, 1001, 10)
    assert not p.avail_during(10, 2991, 1)
    assert p.avail_during(10, 1990, 1)
    p.add_span(10, 1990, 1)
    return p


def test_availability_checkers_at() -> None:
    """Fluxion's test_availability_checkers: avail_resources_at over three spans."""
    p = _checkers_planner()
    expected = {1: 5, 10: 4, 1500: 9, 2000: 0, 2500: 0, 3000: 0, 3001: 10}
    assert {t: p.avail_resources_at(t) for t in expected} == expected


def test_availability_checkers_during() -> None:
    """Fluxion's test_availability_checkers: avail_during / avail_resources_during answers."""
    p = _checkers_planner()
    assert not p.avail_during(2000, 1001, 1)
    assert p.avail_resources_during(2000, 1001) == 0
    assert p.avail_during(0, 1001, 4)
    assert p.avail_resources_during(0, 1001) == 4
    assert p.avail_during(10, 1990, 4)
    assert p.avail_resources_during(10, 1990) == 4
    # subsets, no edges
    assert p.avail_during(4, 3, 5)
    assert p.avail_resources_during(4, 3) == 5
    assert p.avail_during(20, 980, 4)
    assert p.avail_resources_during(20, 980) == 4
    assert p.avail_during(1001, 998, 9)
    assert p.avail_resources_during(1001, 998) == 9
    assert not p.avail_during(2500, 101, 1)
    assert p.avail_resources_during(2500, 101) == 0
    # subsets, one edge
    assert p.avail_during(0, 1000, 4)
    assert p.avail_during(10, 990, 4)
    assert p.avail_during(20, 981, 4)
    assert p.avail_during(1001, 999, 9)
    # more than one overlapping span
    assert p.avail_during(100, 1401, 4)
    assert not p.avail_during(1500, 1001, 1)
    assert not p.avail_during(1000, 1001, 1)
    # all spans
    assert not p.avail_during(0, 3001, 1)
    assert not p.avail_during(0, 2001, 1)
    assert p.avail_during(3001, 2000, 10)


def test_availability_checkers_avail_time() -> None:
    """Fluxion's test_availability_checkers: avail_time_first/next sequences."""
    p = _checkers_planner()
    seq = [p.avail_time_first(0, 9, 5)] + [p.avail_time_next() for _ in range(4)]
    assert seq == [0, 1, 1001, 3001, None]
    assert p.errno == ENOENT
    seq = [p.avail_time_first(0, 10, 9)] + [p.avail_time_next() for _ in range(2)]
    assert seq == [1001, 3001, None]
    assert p.errno == ENOENT


def test_add_resets_iterator() -> None:
    """Fluxion's test_add_and_iterator: span_add resets the avail-time iterator."""
    p = Planner(0, 10, 10, "C")
    assert p.avail_time_first(0, 4, 3) == 0
    assert p.avail_time_next() is None
    assert p.add_span(0, 4, 3) != -1
    assert p.avail_time_next() is None
    assert p.errno == EINVAL
    assert p.avail_time_first(0, 4, 3) == 0
    assert p.avail_time_next() == 4
    assert p.avail_time_next() is None
    assert p.errno == ENOENT


def test_on_or_after() -> None:
    """Fluxion's test_on_or_after: only scheduled points at/after on_or_after are candidates."""
    p = Planner(0, INT64_MAX, 3, "A")
    assert p.avail_time_first(100000, 100, 2) is None
    assert p.avail_during(100000, 100, 2)
    p.add_span(100000, 100, 2)
    assert p.avail_time_first(100000, 200, 2) == 100100
    p.add_span(100100, 200, 2)
    assert p.avail_time_first(100000, 200, 1) == 100000
    assert p.avail_time_next() == 100100
    assert p.avail_time_next() == 100300
    assert p.avail_time_first(0, 200, 1) == 0
    assert p.avail_time_next() == 100000


def test_remove_more() -> None:
    """Fluxion's test_remove_more: 10000 overlapping adds, then every 4th removed."""
    p = Planner(0, INT64_MAX, 10, "core")
    spans = [p.add_span(i // 2 * 1000, 1000, 5) for i in range(10000)]
    assert spans == list(range(1, 10001))
    for sid in spans[::4]:
        p.rem_span(sid)
    assert p.span_size == 7500
    assert p.avail_resources_at(0) == 5  # span 1 gone, span 2 left


def _fully_overlap(n: int, total: int) -> None:
    p = Planner(0, INT64_MAX, total, "hardware-thread")
    for _ in range(n):
        t = p.avail_time_first(0, 4, 100)
        assert t == 0
        p.add_span(t, 4, 100)
    for _ in range(n):
        t = p.avail_time_first(0, 4, 100)
        assert t == 4
        p.add_span(t, 4, 100)


def test_stress_fully_overlap_small() -> None:
    """Fluxion's test_stress_fully_overlap at a tenth of its size."""
    _fully_overlap(10000, 1000000)


@pytest.mark.slow
def test_stress_fully_overlap() -> None:
    """Fluxion's test_stress_fully_overlap: 2 x 100000 fully overlapped spans."""
    _fully_overlap(100000, 10000000)


def _four_overlap(n: int) -> None:
    p = Planner(0, INT64_MAX, 10000000, "hardware-thread")
    for i in range(2 * n):
        assert p.avail_during(i, 4, 100)
        p.add_span(i, 4, 100)
    assert p.avail_resources_at(n) == 10000000 - 400


def test_stress_4spans_overlap_small() -> None:
    """Fluxion's test_stress_4spans_overlap at a tenth of its size."""
    _four_overlap(10000)


@pytest.mark.slow
def test_stress_4spans_overlap() -> None:
    """Fluxion's test_stress_4spans_overlap: 200000 spans, 4 overlapping."""
    _four_overlap(100000)


def _service_flow(depth: int) -> None:
    l1_size, l2_size = 9, 3
    at, duration = 3600, 1000
    types = ["A", "B", "C"]
    totals = [16, 2, 32]
    locals_ = [Planner(0, INT64_MAX, totals[i % l2_size], types[i % l2_size]) for i in range(l1_size)]
    globals_ = {t: Planner(0, INT64_MAX, l2_size * n, t) for t, n in zip(types, totals)}
    for i in range(l1_size):
        j = i % l2_size
        locals_[i].add_span(at, duration, totals[j])
        globals_[types[j]].add_span(at, duration, totals[j])
    at += 1000
    for i in range(depth):
        j, k = i % l2_size, i % l1_size
        glob = globals_[types[j]]
        t = glob.avail_time_first(at, duration, totals[j])
        assert t == at + (i // l1_size) * duration
        assert locals_[k].avail_during(t, duration, totals[j])
        locals_[k].add_span(t, duration, totals[j])
        glob.add_span(t, duration, totals[j])


def test_resource_service_flow_small() -> None:
    """Fluxion's test_resource_service_flow with 5000 reservations instead of 50000."""
    _service_flow(5000)


@pytest.mark.slow
def test_resource_service_flow() -> None:
    """Fluxion's test_resource_service_flow: 50000 global/local reservations."""
    _service_flow(50000)


_MORE = [
    (0, 600, 36),
    (0, 57600, 3600),
    (57600, 57600, 1800),
    (115200, 57600, 1152),
    (172800, 57600, 2304),
    (115200, 900, 468),
]


def test_more_add_remove() -> None:
    """Fluxion's test_more_add_remove: add six spans, remove them, add them again."""
    p = Planner(0, INT64_MAX, 100000, "core")
    fresh = p.copy()
    ids = [p.add_span(*s) for s in _MORE]
    for sid in ids:
        p.rem_span(sid)
    assert p.points() == fresh.points()
    assert [p.add_span(*s) for s in _MORE] == list(range(7, 13))


def test_constructors_and_overload() -> None:
    """Fluxion's test_constructors_and_overload: copy, equality and reset."""
    ctx = Planner(0, INT64_MAX, 100000, "core")
    span = -1
    for k, s in enumerate(_MORE):
        sid = ctx.add_span(*s)
        if k == 3:
            span = sid
    assert ctx.equals(ctx)
    ctx2 = ctx.copy()
    assert ctx2.equals(ctx)
    ctx3 = ctx2.copy()
    ctx3.reset(0, INT64_MAX)
    assert not ctx2.equals(ctx3)
    ctx4 = ctx2.copy()
    assert ctx2.equals(ctx4)
    ctx2.rem_span(span)
    assert not ctx2.equals(ctx4)
    assert ctx.equals(ctx4)
    ctx4 = ctx2.copy()
    assert ctx2.equals(ctx4)
    assert ctx4.avail_resources_at(57600) == ctx2.avail_resources_at(57600)


def test_update_total() -> None:
    """Fluxion's test_update: totals change every point; re-adding restores the planner."""
    ctx = Planner(0, INT64_MAX, 100000, "core")
    for s in [
        (0, 600, 36),
        (0, 57600, 3600),
        (57600, 57600, 1800),
        (172800, 57600, 2304),
        (115200, 900, 468),
    ]:
        ctx.add_span(*s)
    avail = ctx.avail_resources_at(0)
    ctx2 = ctx.copy()
    ctx.update_total(100000)
    assert ctx.equals(ctx2)
    ctx.update_total(50000)
    assert ctx.avail_resources_at(0) == avail - 50000
    ctx.update_total(100000)
    assert ctx.equals(ctx2)
    ctx.update_total(40000)
    with pytest.raises(PlannerError):
        ctx.add_span(1152000, 57600, 50000)
    assert not ctx.equals(ctx2)
    span = ctx.add_span(1152000, 57600, 40000)
    ctx.rem_span(span)


def test_partial_cancel() -> None:
    """Fluxion's test_partial_cancel: reduce_span frees part, then all, of a span."""
    ctx = Planner(0, INT64_MAX, 100, "core")
    span1 = ctx.add_span(0, 600, 25)
    span2 = ctx.add_span(0, 1200, 75)
    assert ctx.reduce_span(span1, 15) is False
    assert ctx.avail_resources_at(0) == 15
    assert ctx.reduce_span(span1, 10) is True
    assert ctx.avail_resources_at(0) == 25
    assert ctx.reduce_span(span2, 25) is False
    assert ctx.avail_resources_at(300) == 50
    span3 = ctx.add_span(300, 300, 50)
    assert ctx.avail_resources_at(300) == 0
    ctx.rem_span(span2)
    assert ctx.reduce_span(span3, 50) is True
    ctx.add_span(300, 300, 100)
    assert ctx.avail_resources_at(300) == 0


# ---------------------------------------------------------------------- errno tests


def test_errno_avail_resources_at() -> None:
    """planner_errno_test: avail_resources_at outside [base, end] is ERANGE."""
    p = Planner(0, 100, 10, "core")
    assert _errno_of(p.avail_resources_at, 101) == ERANGE
    assert _errno_of(p.avail_resources_at, -1) == ERANGE
    assert p.avail_resources_at(100) == 10


def test_errno_avail_resources_during() -> None:
    """planner_errno_test: a window past the plan end is ERANGE; bad duration EINVAL."""
    p = Planner(0, 100, 10, "core")
    assert _errno_of(p.avail_resources_during, 95, 10) == ERANGE
    assert _errno_of(p.avail_resources_during, -1, 10) == ERANGE
    assert _errno_of(p.avail_resources_during, 5, 0) == EINVAL
    assert _errno_of(p.avail_resources_during, 101, 1) == EINVAL
    assert p.avail_resources_during(90, 10) == 10


def test_errno_span_functions() -> None:
    """planner_errno_test: span lookups of an unknown id are EINVAL."""
    p = Planner(0, 100, 10, "core")
    assert _errno_of(p.span_start_time, 999) == EINVAL
    assert _errno_of(p.span_duration, 999) == EINVAL
    assert _errno_of(p.span_resource_count, 999) == EINVAL
    assert _errno_of(p.rem_span, 999) == EINVAL
    assert _errno_of(p.reduce_span, 999, 1) == EINVAL


def test_errno_avail_during_ebusy() -> None:
    """planner_errno_test: avail_during reports EBUSY when units are taken."""
    p = Planner(0, 100, 10, "core")
    assert p.add_span(10, 10, 8) == 1
    assert p.avail_during(10, 10, 5) is False
    assert p.errno == EBUSY
    assert p.avail_during(0, 10, 10)
    assert p.avail_during(20, 10, 10)


def test_errno_avail_during_erange() -> None:
    """planner_errno_test: a window past plan end or a request above total is ERANGE."""
    p = Planner(0, 100, 10, "core")
    assert p.avail_during(95, 10, 5) is False
    assert p.errno == ERANGE
    assert p.avail_during(90, 10, 5)
    assert p.avail_during(0, 10, 11) is False
    assert p.errno == ERANGE
    assert p.avail_during(0, 0, 1) is False
    assert p.errno == EINVAL


def test_self_copy_preserves_state() -> None:
    """planner_errno_test self-assign/value semantics: copies are deep and independent."""
    src = Planner(0, 10, 10, "core")
    span = src.add_span(0, 5, 3)
    assert src.avail_resources_at(0) == 7
    copy = src.copy()
    assert copy.avail_resources_at(0) == 7
    src.rem_span(span)
    assert src.avail_resources_at(0) == 10
    assert copy.avail_resources_at(0) == 7
    assert copy.span_resource_count(span) == 3


def test_span_iterator_guards() -> None:
    """planner_errno_test: span_next before span_first, past the end, and on a copy is None."""
    p = Planner(0, 10, 10, "core")
    assert p.span_next() is None
    assert p.span_first() is None
    span = p.add_span(0, 5, 3)
    assert p.span_first() == span
    assert p.span_next() is None
    assert p.span_next() is None
    assert p.copy().span_next() is None


# ------------------------------------------------------------- argument validation


def test_new_invalid() -> None:
    """planner_new rejects duration < 1 (EINVAL) and a negative total (ERANGE)."""
    assert _errno_of(Planner, 0, 0, 1, "core") == EINVAL
    assert _errno_of(Planner, 0, 10, -1, "core") == ERANGE


def test_avail_time_first_invalid() -> None:
    """avail_time_first: EINVAL outside [base, end) or duration < 1; ERANGE above total."""
    p = Planner(10, 100, 4, "core")
    assert p.avail_time_first(9, 1, 1) is None and p.errno == EINVAL
    assert p.avail_time_first(110, 1, 1) is None and p.errno == EINVAL
    assert p.avail_time_first(10, 0, 1) is None and p.errno == EINVAL
    assert p.avail_time_first(10, 1, 5) is None and p.errno == ERANGE
    assert p.avail_time_first(10, 100, 4) == 10
    assert p.avail_time_first(10, 101, 4) is None and p.errno == ENOENT


def test_invalid_first_keeps_iteration() -> None:
    """A rejected avail_time_first leaves the running iteration untouched (checks precede the reset)."""
    p = Planner(0, 100, 4, "core")
    p.add_span(10, 10, 1)
    p.add_span(30, 10, 1)
    assert p.avail_time_first(0, 5, 3) == 0
    assert p.avail_time_first(0, 5, 9) is None and p.errno == ERANGE
    assert p.avail_time_next() == 10


def test_avail_time_next_without_first() -> None:
    """avail_time_next without an active iteration is EINVAL."""
    p = Planner(0, 100, 4, "core")
    assert p.avail_time_next() is None
    assert p.errno == EINVAL


def test_add_span_errors_change_nothing() -> None:
    """add_span: EINVAL window, ERANGE amount, EBUSY when taken; nothing changes on failure."""
    p = Planner(0, 100, 4, "core")
    p.add_span(10, 10, 3)
    before = (p.points(), list(p.spans()))
    assert _errno_of(p.add_span, -1, 5, 1) == EINVAL
    assert _errno_of(p.add_span, 95, 6, 1) == EINVAL
    assert _errno_of(p.add_span, 5, 0, 1) == EINVAL
    assert _errno_of(p.add_span, 5, 5, 5) == ERANGE
    assert _errno_of(p.add_span, 5, 5, -1) == ERANGE
    assert _errno_of(p.add_span, 5, 10, 2) == EBUSY
    assert (p.points(), list(p.spans())) == before
    assert p.add_span(5, 10, 1) == 2
    assert p.add_span(95, 5, 1) == 3


def test_zero_amount_span_creates_points() -> None:
    """A 0-unit span adds scheduled points, which become avail_time candidates."""
    p = Planner(0, 100, 4, "core")
    p.add_span(10, 10, 0)
    assert p.points() == [(0, 4), (10, 4), (20, 4)]
    assert [p.avail_time_first(0, 5, 4), p.avail_time_next(), p.avail_time_next()] == [0, 10, 20]


def test_empty_planner_avail_time() -> None:
    """Without spans the only candidate is the base time."""
    p = Planner(5, 100, 4, "core")
    assert p.avail_time_first(5, 10, 4) == 5
    assert p.avail_time_next() is None and p.errno == ENOENT
    assert p.avail_time_first(6, 10, 1) is None and p.errno == ENOENT


def test_candidate_past_end_is_enoent_then_continues() -> None:
    """A fitting candidate that ends after plan end is ENOENT, and the iteration moves past it."""
    p = Planner(0, 20, 2, "core")
    p.add_span(0, 10, 2)
    p.add_span(10, 5, 1)
    assert p.avail_time_first(0, 11, 1) is None and p.errno == ENOENT  # 10 fits, ends at 21
    assert p.avail_time_next() is None and p.errno == ENOENT  # 15 fits, ends at 26
    assert p.avail_time_next() is None and p.errno == ENOENT  # exhausted
    assert p.avail_time_first(0, 5, 1) == 10
    assert p.avail_time_next() == 15


def test_span_getters_and_iteration() -> None:
    """Span start/duration/count lookups and span_first/next order."""
    p = Planner(0, 100, 10, "core")
    ids = [p.add_span(s, d, n) for s, d, n in [(5, 10, 2), (0, 3, 1), (50, 50, 7)]]
    assert ids == [1, 2, 3]
    assert [p.span_start_time(i) for i in ids] == [5, 0, 50]
    assert [p.span_duration(i) for i in ids] == [10, 3, 50]
    assert [p.span_resource_count(i) for i in ids] == [2, 1, 7]
    p.rem_span(2)
    order = [p.span_first()]
    while (nxt := p.span_next()) is not None:
        order.append(nxt)
    assert order == [1, 3]
    assert p.span_size == 2
    assert p.is_active_span(3) and not p.is_active_span(2)


def test_reduce_span_rules() -> None:
    """reduce_span: 0 is a no-op, equal removes, larger or negative is EINVAL."""
    p = Planner(0, 100, 10, "core")
    s = p.add_span(0, 10, 4)
    assert p.reduce_span(s, 0) is False
    assert p.span_resource_count(s) == 4
    assert _errno_of(p.reduce_span, s, 5) == EINVAL
    assert _errno_of(p.reduce_span, s, -1) == EINVAL
    z = p.add_span(20, 10, 0)
    assert p.reduce_span(z, 0) is True
    assert not p.is_active_span(z)
    assert p.reduce_span(s, 4) is True
    assert p.points() == [(0, 10)]


def test_reduce_span_restarts_iteration() -> None:
    """A partial reduce_span keeps the iteration active but makes it start over."""
    p = Planner(0, 100, 10, "core")
    s = p.add_span(10, 10, 4)
    assert p.avail_time_first(0, 5, 5) == 0
    assert p.avail_time_next() == 10
    p.reduce_span(s, 1)
    assert p.avail_time_next() == 0


def test_update_total_clamps_and_keeps_spans() -> None:
    """update_total shifts every point by the delta, clamping at 0; spans survive."""
    p = Planner(0, 100, 10, "core")
    s = p.add_span(10, 10, 8)
    p.update_total(4)
    assert p.points() == [(0, 4), (10, 0), (20, 4)]
    p.rem_span(s)
    # Fluxion adds the span's units back on top of the clamped value
    assert p.points() == [(0, 4)]
    p.update_total(12)
    assert p.avail_resources_during(0, 100) == 12


def test_update_total_stale_keys() -> None:
    """After a total increase Fluxion's start-time search still sees the old free amounts."""
    p = Planner(0, 100, 10, "core")
    p.update_total(20)
    assert p.avail_resources_at(0) == 20
    assert p.avail_during(0, 10, 15)
    assert p.avail_time_first(0, 10, 15) is None and p.errno == ENOENT
    assert p.avail_time_first(0, 10, 10) == 0
    # the iteration consumed the base point: ending it re-keys it
    assert p.avail_time_first(0, 10, 15) == 0


def test_update_total_rekeyed_by_span() -> None:
    """A span over a stale point re-keys it, so it becomes findable again."""
    p = Planner(0, 100, 10, "core")
    p.update_total(20)
    s = p.add_span(0, 5, 1)
    assert p.avail_time_first(0, 5, 15) == 0
    p.rem_span(s)
    assert p.avail_time_first(0, 5, 19) == 0


def test_unavail_time_first() -> None:
    """unavail_time_first returns the first point (from the state at on_or_after) short of units."""
    p = Planner(0, 100, 10, "core")
    p.add_span(10, 10, 8)
    p.add_span(30, 10, 3)
    assert p.unavail_time_first(0, 3) == 10
    assert p.unavail_time_first(15, 3) == 10
    assert p.unavail_time_first(20, 8) == 30
    assert p.unavail_time_first(40, 1) is None and p.errno == ENOENT
    assert p.unavail_time_first(0, 11) is None and p.errno == ERANGE


def test_reset() -> None:
    """reset drops spans, moves the window and restarts span ids."""
    p = Planner(0, 100, 10, "core")
    p.add_span(0, 10, 3)
    p.reset(50, 10)
    assert (p.base_time, p.duration, p.span_size) == (50, 10, 0)
    assert p.avail_resources_at(50) == 10
    assert p.add_span(50, 10, 10) == 1
    assert _errno_of(p.reset, 0, 0) == EINVAL


def test_empty_planner_is_small() -> None:
    """A planner without spans keeps no point lists (its footprint is the object itself)."""
    import sys

    p = Planner(0, 100, 10, "core")
    assert sys.getsizeof(p) <= 200
    s = p.add_span(0, 10, 1)
    p.rem_span(s)
    assert p._times is None and p._spans is None
