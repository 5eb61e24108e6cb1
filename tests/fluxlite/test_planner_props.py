"""Property tests: the planners against a brute-force model of Fluxion's semantics.

The model keeps the spans and recounts: free(t) = total - units of the spans
covering t.  Fluxion's start-time candidates are the scheduled points (base
time, span starts and ends); a candidate fits when every point in its window
has the request free, and the iteration reports ENOENT for a fitting
candidate that would end after the plan end.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from fluxlite.errors import PlannerError
from fluxlite.planner import EBUSY, ENOENT, ERANGE, Planner, PlannerMulti


@dataclass
class Model:
    """Brute-force planner: spans plus recounting."""

    base: int
    end: int
    total: int
    spans: dict[int, tuple[int, int, int]] = field(default_factory=dict)

    def free(self, t: int) -> int:
        return self.total - sum(n for s, last, n in self.spans.values() if s <= t < last)

    def points(self) -> list[int]:
        pts = {self.base}
        for s, last, _ in self.spans.values():
            pts.update((s, last))
        return sorted(pts)

    def fits(self, p: int, duration: int, request: int) -> bool:
        return all(self.free(q) >= request for q in self.points() if p <= q < p + duration) and (
            self.free(p) >= request
        )

    def avail_sequence(self, on_or_after: int, duration: int, request: int) -> list[int | None]:
        out: list[int | None] = []
        for p in self.points():
            if p >= on_or_after and self.fits(p, duration, request):
                if p + duration > self.end:
                    out.append(None)
                    return out
                out.append(p)
        out.append(None)
        return out


def state(p: Planner) -> tuple:
    return (p.points(), list(p.spans()), p._ref_list(), p.span_size)


# An operation: ("add", start, duration, amount) or ("rem", index into live spans)
ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 24), st.integers(1, 12), st.integers(0, 5)),
        st.tuples(st.just("rem"), st.integers(0, 50)),
    ),
    max_size=25,
)


def build(base: int, total: int, ops: list[tuple]) -> tuple[Planner, Model]:
    end = base + 24
    p = Planner(base, 24, total, "core")
    m = Model(base, end, total)
    for op in ops:
        if op[0] == "add":
            _, s, d, n = op
            s += base
            fits = s + d <= end and n <= total and all(m.free(t) >= n for t in range(s, s + d))
            if fits:
                sid = p.add_span(s, d, n)
                m.spans[sid] = (s, s + d, n)
            else:
                try:
                    p.add_span(s, d, n)
                except PlannerError:
                    pass
                else:
                    raise AssertionError("add_span accepted an infeasible span")
        elif m.spans:
            sid = sorted(m.spans)[op[1] % len(m.spans)]
            p.rem_span(sid)
            del m.spans[sid]
    return p, m


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.integers(1, 6), ops_strategy)
def test_avail_resources_match_recount(base: int, total: int, ops: list[tuple]) -> None:
    """avail_resources_at/during and avail_during equal a brute-force recount everywhere."""
    p, m = build(base, total, ops)
    assert [t for t, _ in p.points()] == m.points()
    for t in range(m.base, m.end + 1):
        assert p.avail_resources_at(t) == m.free(t)
    for at in range(m.base, m.end):
        for d in (1, 3, 7):
            if at + d > m.end:
                continue
            low = min(m.free(t) for t in range(at, at + d))
            assert p.avail_resources_during(at, d) == low
            for r in range(total + 1):
                assert p.avail_during(at, d, r) == (low >= r)
                if low < r:
                    assert p.errno == EBUSY
    assert p.span_size == len(m.spans)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 3),
    st.integers(1, 6),
    ops_strategy,
    st.integers(0, 23),
    st.integers(1, 15),
    st.integers(0, 6),
)
def test_avail_time_sequence_matches_model(
    base: int, total: int, ops: list[tuple], ooa: int, duration: int, request: int
) -> None:
    """avail_time_first/next yields exactly Fluxion's candidate sequence (brute force)."""
    p, m = build(base, total, ops)
    first = p.avail_time_first(base + ooa, duration, request)
    if request > total:
        assert first is None and p.errno == ERANGE
        return
    got = [first]
    while got[-1] is not None:
        got.append(p.avail_time_next())
    assert got == m.avail_sequence(base + ooa, duration, request)
    assert p.errno == ENOENT


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), ops_strategy, st.integers(0, 23), st.integers(1, 12), st.integers(0, 6))
def test_add_then_rem_restores_state(total: int, ops: list[tuple], s: int, d: int, n: int) -> None:
    """Adding a span and removing it again leaves the exact same points and spans."""
    p, _ = build(0, total, ops)
    before = state(p)
    try:
        sid = p.add_span(s, d, n)
    except PlannerError:
        assert state(p) == before
        return
    p.rem_span(sid)
    assert state(p) == before


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), ops_strategy, st.integers(-2, 26), st.integers(-1, 12), st.integers(-1, 8))
def test_failed_add_changes_nothing(total: int, ops: list[tuple], s: int, d: int, n: int) -> None:
    """A rejected add_span changes neither the state nor a running avail-time iteration."""
    p, m = build(0, total, ops)
    expected = m.avail_sequence(0, 2, 1)
    assert p.avail_time_first(0, 2, 1) == expected[0]
    ref = p.copy()
    before = state(p)
    try:
        p.add_span(s, d, n)
    except PlannerError:
        assert state(p) == before
        assert p.equals(ref)
        if expected[0] is not None:
            assert p.avail_time_next() == expected[1]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), ops_strategy, st.data())
def test_reduce_span_matches_model(total: int, ops: list[tuple], data: st.DataObject) -> None:
    """reduce_span frees exactly the given units over the span's window."""
    p, m = build(0, total, ops)
    if not m.spans:
        return
    sid = data.draw(st.sampled_from(sorted(m.spans)))
    s, last, n = m.spans[sid]
    k = data.draw(st.integers(0, n))
    removed = p.reduce_span(sid, k)
    assert removed == (k == n)
    if removed:
        del m.spans[sid]
    else:
        m.spans[sid] = (s, last, n - k)
    for t in range(m.base, m.end + 1):
        assert p.avail_resources_at(t) == m.free(t)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), ops_strategy, st.integers(0, 8))
def test_update_total_shifts_and_clamps(total: int, ops: list[tuple], new_total: int) -> None:
    """update_total moves every free amount by the change of total, clamped at 0."""
    p, m = build(0, total, ops)
    p.update_total(new_total)
    for t in range(m.base, m.end + 1):
        assert p.avail_resources_at(t) == max(m.free(t) + new_total - total, 0)


multi_ops = st.lists(
    st.tuples(st.integers(0, 24), st.integers(1, 10), st.integers(0, 4), st.integers(0, 3), st.booleans()),
    max_size=15,
)


@settings(max_examples=150, deadline=None)
@given(multi_ops, st.integers(0, 23), st.integers(1, 12), st.integers(0, 4), st.integers(0, 3))
def test_multi_avail_time_rule(ops: list[tuple], ooa: int, duration: int, r0: int, r1: int) -> None:
    """PlannerMulti candidates are type 0's sequence filtered by the other type's availability."""
    ctx = PlannerMulti(0, 24, [4, 3], ["core", "gpu"])
    models = [Model(0, 24, 4), Model(0, 24, 3)]
    live: list[int] = []
    for s, d, a, b, remove in ops:
        if remove and live:
            sid = live.pop(0)
            ctx.rem_span(sid)
            for md in models:
                del md.spans[sid]
            continue
        try:
            sid = ctx.add_span(s, d, [a, b])
        except PlannerError:
            continue
        live.append(sid)
        models[0].spans[sid] = (s, s + d, a)
        models[1].spans[sid] = (s, s + d, b)
    expected: list[int | None] = []
    for t in models[0].avail_sequence(ooa, duration, r0):
        if t is None or (t + duration <= 24 and all(models[1].free(q) >= r1 for q in range(t, t + duration))):
            expected.append(t)
        if t is None:
            break
    got = [ctx.avail_time_first(ooa, duration, [r0, r1])]
    while got[-1] is not None:
        got.append(ctx.avail_time_next())
    if r0 > 4:
        assert got == [None] and ctx.errno == ERANGE
    else:
        assert got == expected
    # spans recount per type
    for i, md in enumerate(models):
        assert ctx.avail_resources_array_at(5)[i] == md.free(5)


@settings(max_examples=100, deadline=None)
@given(multi_ops, st.integers(0, 24), st.integers(1, 10), st.integers(0, 4), st.integers(0, 3))
def test_multi_failed_or_undone_add_is_invisible(ops: list[tuple], s: int, d: int, a: int, b: int) -> None:
    """A multi add_span followed by rem_span, or a failed one, leaves every type unchanged."""
    ctx = PlannerMulti(0, 24, [4, 3], ["core", "gpu"])
    for s0, d0, a0, b0, _ in ops:
        with contextlib.suppress(PlannerError):
            ctx.add_span(s0, d0, [a0, b0])
    before = [state(ctx.planner_at(i)) for i in range(2)]
    n = ctx.span_size
    try:
        sid = ctx.add_span(s, d, [a, b])
    except PlannerError:
        pass
    else:
        ctx.rem_span(sid)
    assert [state(ctx.planner_at(i)) for i in range(2)] == before
    assert ctx.span_size == n


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6),
    ops_strategy,
    st.integers(0, 8),
    st.integers(0, 23),
    st.integers(1, 12),
    st.integers(0, 8),
)
def test_update_total_search_uses_old_keys(
    total: int, ops: list[tuple], new_total: int, ooa: int, duration: int, request: int
) -> None:
    """After update_total the start-time search filters candidates by their pre-update free amounts."""
    p, m = build(0, total, ops)
    p.update_total(new_total)
    delta = new_total - total

    def now(t: int) -> int:
        return max(m.free(t) + delta, 0)

    expected: list[int | None] = []
    for q in m.points():
        if q < ooa or m.free(q) < request:  # the key is the old free amount
            continue
        if all(now(x) >= request for x in m.points() if q <= x < q + duration) and now(q) >= request:
            if q + duration > m.end:
                break
            expected.append(q)
    expected.append(None)
    got = [p.avail_time_first(ooa, duration, request)]
    if request > new_total:
        assert got == [None] and p.errno == ERANGE
        return
    while got[-1] is not None:
        got.append(p.avail_time_next())
    assert got == expected
