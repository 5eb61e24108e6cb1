"""Scenarios ported from Fluxion's planner_multi tests (planner_test02.cpp, planner_errno_test.cpp)."""

from __future__ import annotations

import pytest

from fluxlite.errors import PlannerError
from fluxlite.planner import EBUSY, EINVAL, ENOENT, ERANGE, PlannerMulti

INT64_MAX = 2**63 - 1
ABCDE = ["A", "B", "C", "D", "E"]


def _errno_of(fn, *args) -> str:
    with pytest.raises(PlannerError) as info:
        fn(*args)
    return info.value.errno


def _seq(ctx: PlannerMulti, on_or_after: int, duration: int, counts: list[int], n: int) -> list[int | None]:
    out = [ctx.avail_time_first(on_or_after, duration, counts)]
    out += [ctx.avail_time_next() for _ in range(n - 1)]
    return out


def _basics() -> PlannerMulti:
    ctx = PlannerMulti(0, INT64_MAX, [10, 20, 30, 20, 100], ABCDE)
    assert ctx.avail_during(0, 1, [10, 20, 30, 20, 100])
    assert ctx.avail_during(1, 1000, [5, 10, 15, 10, 50])
    assert ctx.add_span(1, 1000, [5, 10, 15, 10, 50]) == 0
    assert ctx.add_span(2000, 1001, [10, 20, 30, 20, 100]) == 1
    assert not ctx.avail_during(10, 2991, [1, 2, 3, 2, 10])
    assert ctx.avail_during(10, 1990, [1, 2, 3, 2, 10])
    assert ctx.add_span(10, 1990, [1, 2, 3, 2, 10]) == 2
    return ctx


def test_multi_basics_avail_at() -> None:
    """Fluxion's test_multi_basics: per-type availability after three spans."""
    ctx = _basics()
    assert ctx.avail_resources_at(1, 0) == 5
    assert ctx.avail_resources_at(10, 1) == 8
    assert ctx.avail_resources_array_at(500)[2] == 12
    assert ctx.avail_resources_at(1500, 0) == 9
    assert ctx.avail_resources_at(2000, 0) == 0
    assert ctx.avail_resources_at(2500, 0) == 0
    assert ctx.avail_resources_at(3000, 4) == 0
    assert ctx.avail_resources_at(3001, 2) == 30


def test_multi_basics_avail_time() -> None:
    """Fluxion's test_multi_basics: avail_time_first/next sequences."""
    ctx = _basics()
    assert _seq(ctx, 0, 9, [0, 0, 15, 0, 0], 5) == [0, 1, 1001, 3001, None]
    assert ctx.errno == ENOENT
    assert _seq(ctx, 0, 10, [1, 1, 1, 1, 50], 4) == [0, 1001, 3001, None]
    assert ctx.errno == ENOENT


def test_multi_getters() -> None:
    """Fluxion's test_multi_getters."""
    ctx = PlannerMulti(0, 9999, [10, 20], ["1", "2"])
    assert ctx.base_time == 0
    assert ctx.duration == 9999
    assert ctx.resource_total_at(0) == 10
    assert ctx.resource_total_by_type("2") == 20
    assert ctx.resource_type_at(1) == "2"
    assert ctx.resources_len == 2
    assert ctx.index_of("2") == 1 and ctx.index_of("3") is None


def _staircase(spans: list[tuple[int, int, list[int]]]) -> PlannerMulti:
    ctx = PlannerMulti(0, INT64_MAX, [10, 20, 30, 40, 50], ABCDE)
    for at, dur, req in spans:
        assert ctx.avail_during(at, dur, req)
        assert ctx.add_span(at, dur, req) != -1
    return ctx


_STRICT = [
    (0, 1000, [1, 0, 0, 0, 0]),
    (0, 2000, [0, 2, 0, 0, 0]),
    (0, 3000, [0, 0, 3, 0, 0]),
    (0, 4000, [0, 0, 0, 4, 0]),
    (0, 5000, [0, 0, 0, 0, 5]),
]


def test_multi_strictly_larger() -> None:
    """Fluxion's test_multi_strictly_larger: candidate sequences over a staircase."""
    ctx = _staircase(_STRICT)
    assert _seq(ctx, 0, 1000, [10, 20, 30, 40, 45], 3) == [4000, 5000, None]
    assert ctx.errno == ENOENT
    assert _seq(ctx, 0, 1000, [0, 0, 0, 30, 40], 7) == [0, 1000, 2000, 3000, 4000, 5000, None]
    assert _seq(ctx, 3500, 1000, [0, 0, 0, 30, 40], 3) == [4000, 5000, None]
    assert _seq(ctx, 0, 1000, [10, 18, 30, 30, 30], 4) == [3000, 4000, 5000, None]
    assert ctx.errno == ENOENT


_PARTIAL = [
    (0, 1000, [1, 0, 0, 0, 0]),
    (1000, 1000, [0, 2, 0, 0, 0]),
    (2000, 1000, [0, 0, 3, 0, 0]),
    (3000, 1000, [0, 0, 0, 4, 0]),
    (4000, 1000, [0, 0, 0, 0, 5]),
]


def test_multi_partially_larger() -> None:
    """Fluxion's test_multi_partially_larger: 0-count spans still create candidate points."""
    ctx = _staircase(_PARTIAL)
    assert _seq(ctx, 0, 1000, [10, 20, 30, 40, 50], 2) == [5000, None]
    assert _seq(ctx, 0, 1000, [9, 20, 27, 36, 50], 5) == [0, 2000, 3000, 5000, None]
    assert _seq(ctx, 0, 1000, [9, 19, 30, 40, 50], 3) == [0, 5000, None]
    assert ctx.errno == ENOENT


def test_multi_many_spans() -> None:
    """Fluxion's test_multi_many_spans: 1000 spans, then strided candidate sequences."""
    ctx = PlannerMulti(0, INT64_MAX, [99, 99, 99], ["A", "B", "C"])
    for i in range(1000):
        req = [i % 100, 99 - (i % 100), i % 100]
        assert ctx.avail_during(i * 1000, 1000, req)
        assert ctx.add_span(i * 1000, 1000, req) == i
    assert _seq(ctx, 0, 1000, [99, 99, 99], 2) == [1000000, None]
    assert ctx.errno == ENOENT
    expected: list[int | None] = [1000 * (100 * i + 1) for i in range(10)] + [1000000, None]
    assert _seq(ctx, 0, 1000, [98, 1, 98], 12) == expected
    expected = [1000 * (100 * i + 49) for i in range(10)] + [1000000, None]
    assert _seq(ctx, 0, 1000, [50, 49, 50], 12) == expected


def test_multi_add_remove() -> None:
    """Fluxion's test_multi_add_remove: remove the middle of three spans."""
    ctx = PlannerMulti(0, INT64_MAX, [10, 20, 30, 40, 50], ABCDE)
    ctx.add_span(0, 1000, [1, 0, 0, 0, 0])
    span2 = ctx.add_span(1000, 1000, [0, 2, 0, 0, 0])
    ctx.add_span(2000, 1000, [0, 0, 3, 0, 0])
    ctx.rem_span(span2)
    assert ctx.span_size == 2


def test_multi_constructors_and_overload() -> None:
    """Fluxion's test_constructors_and_overload for planner_multi: copy and equality."""
    ctx = PlannerMulti(0, INT64_MAX, [10, 20, 30, 40, 50], ABCDE)
    ctx.add_span(0, 1000, [1, 0, 0, 0, 0])
    span = ctx.add_span(1000, 1000, [0, 2, 0, 0, 0])
    ctx.add_span(2000, 1000, [0, 0, 3, 0, 0])
    assert ctx.equals(ctx)
    empty = PlannerMulti(0, INT64_MAX, [], [])
    assert empty.equals(empty)
    assert not ctx.equals(empty)
    assert empty.equals(PlannerMulti(0, INT64_MAX, [], []))
    ctx2 = ctx.copy()
    assert ctx.equals(ctx2)
    ctx4 = ctx2.copy()
    assert ctx2.equals(ctx4)
    ctx2.rem_span(span)
    assert ctx2.span_size == 2
    assert not ctx2.equals(ctx4)
    assert ctx4.span_size == 3
    ctx4 = ctx2.copy()
    assert ctx4.span_size == 2 and ctx2.equals(ctx4)
    ctx = ctx4.copy()
    assert ctx.equals(ctx4)
    assert ctx.avail_resources_at(500, 1) == ctx4.avail_resources_at(500, 1)


def test_multi_update() -> None:
    """Fluxion's test_multi_update: shrink, regrow, reorder and extend the type set."""
    totals = [10, 20, 30, 40, 50]
    ctx = PlannerMulti(0, INT64_MAX, totals, ABCDE)
    ctx.add_span(0, 1000, [1, 0, 0, 0, 0])
    ctx.add_span(1000, 1000, [0, 2, 0, 0, 0])
    ctx.add_span(2000, 1000, [0, 0, 3, 0, 0])
    avail = ctx.avail_resources_at(0, 0)
    ctx2 = ctx.copy()
    ctx.update(totals, ABCDE)
    assert ctx.equals(ctx2) and ctx.avail_resources_at(0, 0) == avail
    ctx.update([5, 10, 20], ["B", "C", "D"])
    assert not ctx.equals(ctx2)
    assert ctx.avail_resources_at(1000, 0) == 3
    ctx.update(totals, ABCDE)
    assert not ctx.equals(ctx2)
    ctx.update([5, 10, 20], ["B", "C", "D"])
    ctx.add_span(2000, 1000, [0, 0, 20])
    assert ctx.avail_resources_at(2000, 2) == 0
    with pytest.raises(PlannerError):
        ctx.add_span(3000, 1000, [0, 0, 21])
    assert ctx.avail_resources_at(3000, 2) == 20
    types2 = ["B", "A", "C", "D", "G", "X", "Y"]
    totals2 = [10, 20, 30, 40, 50, 60, 70]
    ctx.update(totals2, types2)
    ctx.add_span(4000, 1000, totals2)
    assert ctx.avail_resources_at(4000, 6) == 0
    assert [ctx.resource_total_by_type(t) for t in types2] == totals2


def test_multi_partial_cancel() -> None:
    """Fluxion's test_partial_cancel for planner_multi: typed, reordered, partial reductions."""
    ctx = PlannerMulti(0, INT64_MAX, [10, 20, 30, 40, 50], ABCDE)
    span1 = ctx.add_span(0, 1000, [2, 0, 0, 0, 0])
    span2 = ctx.add_span(0, 2000, [1, 2, 3, 4, 5])
    assert ctx.reduce_span(span1, dict(zip(ABCDE, [1, 0, 0, 0, 0]))) is False
    assert ctx.avail_resources_at(0, 0) == 8
    assert ctx.reduce_span(span1, dict(zip(ABCDE, [1, 0, 0, 0, 0]))) is True
    assert ctx.avail_resources_at(0, 0) == 9
    assert ctx.reduce_span(span2, {"B": 2, "A": 1, "E": 5}) is False
    assert ctx.avail_resources_at(0, 1) == 20
    bad = dict(zip(["B", "A", "C", "D", "G", "X", "Y"], [2, 1, 5, 6, 7, 8, 9]))
    assert _errno_of(ctx.reduce_span, span2, bad) == EINVAL
    assert ctx.avail_resources_at(0, 2) == 27
    assert ctx.reduce_span(span2, dict(zip(["C", "D", "A", "B", "E"], [3, 3, 0, 0, 0]))) is False
    assert ctx.avail_resources_at(0, 3) == 39
    assert ctx.reduce_span(span2, {"D": 1}) is True
    assert ctx.avail_resources_at(0, 3) == 40
    ctx.add_span(0, 2000, [10, 20, 30, 40, 50])
    assert ctx.avail_resources_array_at(1000) == [0, 0, 0, 0, 0]
    span4 = ctx.add_span(3000, 1000, [2, 2, 0, 0, 0])
    removed = [
        ctx.reduce_span(span4, {"A": 1}),
        ctx.reduce_span(span4, {"A": 1}),
        ctx.reduce_span(span4, {"B": 1}),
        ctx.reduce_span(span4, {"B": 1}),
    ]
    assert removed == [False, False, False, True]
    assert ctx.avail_resources_at(3500, 0) == 10
    assert ctx.avail_resources_at(3500, 1) == 20


# ---------------------------------------------------------------------- errno tests


def test_multi_arg_guards() -> None:
    """planner_errno_test: out-of-range index and mismatched lengths are EINVAL."""
    ctx = PlannerMulti(0, 100, [10, 20], ["core", "memory"])
    assert _errno_of(ctx.resource_type_at, 2) == EINVAL
    assert _errno_of(ctx.resource_total_at, 2) == EINVAL
    assert _errno_of(ctx.resource_total_by_type, "gpu") == EINVAL
    assert _errno_of(ctx.add_span, 0, 10, [1]) == EINVAL
    assert ctx.avail_time_first(0, 10, [1]) is None and ctx.errno == EINVAL
    assert ctx.avail_during(0, 10, [1]) is False and ctx.errno == EINVAL
    assert _errno_of(PlannerMulti, 0, 0, [1], ["core"]) == EINVAL
    assert _errno_of(PlannerMulti, 0, 10, [-1], ["core"]) == ERANGE
    assert _errno_of(PlannerMulti, 0, 10, [1, 2], ["core", "core"]) == EINVAL
    assert _errno_of(PlannerMulti, 0, 10, [1], ["core", "gpu"]) == EINVAL
    assert _errno_of(PlannerMulti, 0, 10, [1, 2], ["core", None]) == EINVAL
    with pytest.raises(PlannerError) as info:  # the first negative total is the one reported
        PlannerMulti(0, 10, [1, -2, -5], ["core", "gpu", "memory"])
    assert info.value.errno == ERANGE and "-2" in str(info.value)


def test_multi_empty_guards() -> None:
    """planner_errno_test: an empty planner_multi has no base time, duration or iteration."""
    ctx = PlannerMulti(0, 100, [], [])
    with pytest.raises(PlannerError):
        _ = ctx.base_time
    with pytest.raises(PlannerError):
        _ = ctx.duration
    assert ctx.avail_time_next() is None and ctx.errno == EINVAL
    assert _errno_of(ctx.update, [10], ["core"]) == EINVAL


def test_multi_span_errors() -> None:
    """rem_span/reduce_span/span_planned_at: negative id EINVAL, unknown id ENOENT."""
    ctx = PlannerMulti(0, 100, [10, 20], ["core", "memory"])
    assert _errno_of(ctx.rem_span, -1) == EINVAL
    assert _errno_of(ctx.rem_span, 7) == ENOENT
    assert _errno_of(ctx.reduce_span, -1, {}) == EINVAL
    assert _errno_of(ctx.reduce_span, 7, {}) == ENOENT
    assert _errno_of(ctx.span_planned_at, 7, 0) == ENOENT
    assert _errno_of(ctx.span_planned_at, -1, 0) == EINVAL
    s = ctx.add_span(0, 10, [1, 2])
    assert _errno_of(ctx.span_planned_at, s, 2) == EINVAL
    assert _errno_of(ctx.reduce_span, s, {"core": -1}) == ERANGE
    assert ctx.span_first() == s
    assert ctx.span_next() is None and ctx.errno == ENOENT


def test_multi_self_copy() -> None:
    """planner_errno_test value semantics: a copy is deep and independent."""
    src = PlannerMulti(0, 10, [10, 20], ["core", "gpu"])
    span = src.add_span(0, 5, [3, 4])
    assert src.span_planned_at(span, 0) == 3
    copy = src.copy()
    assert copy.span_planned_at(span, 0) == 3
    src.rem_span(span)
    assert src.span_size == 0
    assert copy.span_planned_at(span, 0) == 3
    assert copy.equals(copy.copy())


def test_multi_copy_iterator_independent() -> None:
    """planner_errno_test: a copy iterates its spans from the start, independently."""
    orig = PlannerMulti(0, 100, [10], ["core"])
    s0 = orig.add_span(0, 10, [1])
    s1 = orig.add_span(20, 10, [1])
    assert orig.span_first() == s0
    copy = orig.copy()
    assert copy.span_first() == s0
    assert orig.span_next() == s1
    assert copy.span_next() == s1
    assert copy.span_next() is None and copy.errno == ENOENT


def test_multi_avail_time_next_after_front_insert() -> None:
    """planner_errno_test: a type inserted at index 0 mid-iteration makes next EINVAL."""
    ctx = PlannerMulti(0, 100, [10], ["core"])
    ctx.add_span(10, 10, [5])
    assert ctx.avail_time_first(0, 5, [10]) == 0
    ctx.update([30, 10], ["gpu", "core"])
    assert ctx.avail_time_next() is None and ctx.errno == EINVAL
    assert ctx.avail_time_first(0, 5, [1, 10]) == 0


def test_multi_iterator_after_tail_growth() -> None:
    """planner_errno_test: a type appended mid-iteration is requested with count 0."""
    ctx = PlannerMulti(0, 100, [10], ["core"])
    ctx.add_span(10, 10, [5])
    assert ctx.avail_time_first(0, 5, [10]) == 0
    ctx.update([10, 20], ["core", "memory"])
    assert ctx.avail_time_next() == 20


def test_multi_span_vectors_follow_update() -> None:
    """Spans keep per-type ids aligned across update: added types hold 0, dropped types vanish."""
    ctx = PlannerMulti(0, 100, [10], ["core"])
    span = ctx.add_span(0, 10, [5])
    ctx.update([10, 20], ["core", "memory"])
    assert ctx.span_planned_at(span, 1) == 0
    assert _errno_of(ctx.span_planned_at, span, 2) == EINVAL
    assert ctx.reduce_span(span, {"core": 2}) is False
    assert ctx.avail_resources_at(5, 0) == 7
    ctx.update([10], ["core"])
    ctx.rem_span(span)
    assert ctx.avail_resources_at(5, 0) == 10 and ctx.span_size == 0


def test_multi_update_errors_change_nothing() -> None:
    """update is all-or-nothing: duplicates/mismatch EINVAL, negative total ERANGE."""
    ctx = PlannerMulti(0, 100, [10, 20], ["core", "gpu"])
    ctx.add_span(0, 10, [1, 2])
    before = ctx.copy()
    assert _errno_of(ctx.update, [1, 2], ["core", "core"]) == EINVAL
    assert _errno_of(ctx.update, [1], ["core", "gpu"]) == EINVAL
    assert _errno_of(ctx.update, [1, -2], ["gpu", "core"]) == ERANGE
    assert ctx.equals(before)
    ctx.update([], [])
    assert ctx.equals(before)


def test_multi_add_span_failure_rolls_back() -> None:
    """A failed multi add_span removes what it added to lower-index types but consumes its id."""
    ctx = PlannerMulti(0, 100, [10, 4], ["core", "gpu"])
    assert ctx.add_span(0, 10, [5, 4]) == 0
    before = [ctx.planner_at(i).points() for i in range(2)]
    with pytest.raises(PlannerError) as info:
        ctx.add_span(5, 10, [5, 1])
    assert info.value.errno == EBUSY
    assert [ctx.planner_at(i).points() for i in range(2)] == before
    assert ctx.span_size == 1
    assert ctx.add_span(20, 10, [1, 1]) == 2


def test_multi_avail_during_reasons() -> None:
    """avail_during reports the first failing type's reason."""
    ctx = PlannerMulti(0, 100, [10, 4], ["core", "gpu"])
    ctx.add_span(0, 10, [5, 4])
    assert ctx.avail_during(0, 10, [5, 1]) is False and ctx.errno == EBUSY
    assert ctx.avail_during(0, 10, [5, 5]) is False and ctx.errno == ERANGE
    assert ctx.avail_during(10, 10, [10, 4])


def test_multi_time_first_other_type_too_large() -> None:
    """A request above another type's total is not ERANGE but exhausts the candidates (ENOENT)."""
    ctx = PlannerMulti(0, 100, [10, 4], ["core", "gpu"])
    ctx.add_span(0, 10, [5, 1])
    assert ctx.avail_time_first(0, 10, [1, 5]) is None and ctx.errno == ENOENT
    assert ctx.avail_time_first(0, 10, [11, 1]) is None and ctx.errno == ERANGE


def test_multi_reset() -> None:
    """reset clears every per-type planner and moves the window."""
    ctx = PlannerMulti(0, 100, [10, 4], ["core", "gpu"])
    ctx.add_span(0, 10, [5, 1])
    ctx.reset(100, 50)
    assert (ctx.base_time, ctx.duration) == (100, 50)
    assert ctx.avail_resources_array_during(100, 50) == [10, 4]


@pytest.mark.parametrize("types", [("core",), ("core", "node"), ["core", "node", "gpu"], []])
def test_multi_constructor_state_for_any_number_of_types(types: tuple[str, ...] | list[str]) -> None:
    """One and two types take the compared path of the distinctness check, more the set: same state."""
    totals = tuple(range(3, 3 + len(types)))
    ctx = PlannerMulti(5, 100, totals, types)
    assert ctx._types == list(types) and type(ctx._types) is list and ctx._types is not types
    assert ctx._totals == list(totals) and type(ctx._totals) is list
    assert ctx._index == {t: i for i, t in enumerate(types)}
    assert list(ctx._iter_counts.items()) == [(t, 0) for t in types]
    assert [(p.resource_type, p.resource_total, p.base_time, p.duration) for p in ctx._planners] == [
        (t, n, 5, 100) for t, n in zip(types, totals)
    ]
    assert ctx._spans == {} and ctx._counter == 0 and ctx.errno is None and ctx._span_pos is None


@pytest.mark.parametrize(
    "types",
    [[None], ["core", "core"], [None, "core"], ["core", None], [None, None], ["a", "b", "a"], ["a", "b", None]],
)
def test_multi_constructor_refuses_repeated_or_missing_types(types: list[str | None]) -> None:
    assert _errno_of(PlannerMulti, 0, 10, [1] * len(types), types) == EINVAL
