"""The single-resource planner: how many units of one pool are free over time.

A :class:`Planner` tracks one pool of ``total`` units during the window
``[base_time, base_time + duration)``.  Work is booked as *spans* (``amount``
units during ``[start, start + duration)``); the planner answers "how much is
free at/during ..." and "when is the earliest time at which ``request`` units
are free for ``duration``".  It reproduces Fluxion's planner (flux-sched
``resource/planner``) answer for answer, including its iteration order and
its quirks; the module docstring of :mod:`fluxlite.planner` lists them.

Representation: Fluxion's *scheduled points* (the times at which the free
amount changes: the base time plus every span start and end) are three
parallel sorted lists -- ``_times``, ``_rem`` (free units from that time on)
and ``_ref`` (how many span boundaries sit on the point; the base point holds
one extra reference so it is never deleted).  A planner without spans keeps
no lists at all (``_times is None``), which is the state of nearly every
planner in a large graph and costs about 150 bytes.

Fluxion finds candidate start times with a *min-time resource tree* keyed by
the free amount each point had when it was last inserted into the tree.  Those
keys normally equal ``_rem``; only :meth:`Planner.update_total` makes them
stale (Fluxion changes the points without re-keying the tree), so a fourth
list ``_key`` exists only after a total update and holds the tree keys.  The
tree walk itself is equivalent to a forward scan over the points (the tree
returns the earliest point whose key is large enough, and every point it
returns is removed until the next reset), so the iteration state is a cursor.

Complexities (k = number of scheduled points, about twice the span count):

* ``avail_resources_at``: O(log k); O(1) without spans.
* ``avail_resources_during`` / ``avail_during``: O(log k + w), w = points in
  the window; O(1) without spans.
* ``avail_time_first`` / ``avail_time_next``: O(log k + scanned points), the
  scan running at C speed (``operator.indexOf`` over ``map``).
* ``add_span`` / ``rem_span``: O(log k + w) plus list insert/delete (memmove).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import islice, repeat
from operator import ge, indexOf, lt

from fluxlite.errors import PlannerError

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed
    from fluxlite import _cyshim as cython

__all__ = ["EBUSY", "EINVAL", "ENOENT", "ERANGE", "Planner"]

#: Invalid argument (bad time window, unknown span, iteration not started).
EINVAL = "EINVAL"
#: A count is out of range (request larger than the pool, negative amount).
ERANGE = "ERANGE"
#: No time satisfies the request (avail_time_first/next exhausted).
ENOENT = "ENOENT"
#: The units exist but are not free during the window (avail_during).
EBUSY = "EBUSY"


#: Points walked one by one before a window scan switches to bisect + min.
_WALK = 8


def _iter_from(values: list[int], start: int) -> Iterator[int]:
    """Return an iterator over ``values[start:]`` without copying (O(1) seek)."""
    it = iter(values)
    it.__setstate__(start)  # type: ignore[attr-defined]
    return it


def _first_below(values: list[int], lo: int, hi: int, request: int) -> int:
    """Return the first index in ``[lo, hi)`` whose value is below ``request``, or -1 (C speed, no copy)."""
    try:
        k = indexOf(map(lt, islice(_iter_from(values, lo), hi - lo), repeat(request)), True)
    except ValueError:
        return -1
    return lo + k


class Planner:
    """Free units of one resource pool over ``[base_time, base_time + duration)``.

    Query methods that have a normal "no" answer (:meth:`avail_time_first`,
    :meth:`avail_time_next`, :meth:`avail_during`, ...) return ``None`` or
    ``False`` and leave the reason in :attr:`errno` (``"EINVAL"``,
    ``"ERANGE"``, ``"ENOENT"`` or ``"EBUSY"``), like Fluxion's ``-1`` plus
    ``errno``; :attr:`errno` is only meaningful right after such a return.
    Every other invalid call raises :class:`~fluxlite.errors.PlannerError`
    whose ``errno`` attribute carries the same codes.
    """

    __slots__ = (
        "_base",
        "_counter",
        "_cursor",
        "_end",
        "_iter",
        "_key",
        "_ref",
        "_rem",
        "_span_pos",
        "_spans",
        "_times",
        "_total",
        "_type",
        "errno",
    )

    _base: int
    _end: int
    _total: int
    _type: str
    _times: list[int] | None
    _rem: list[int] | None
    _ref: list[int] | None
    _key: list[int] | None
    _spans: dict[int, tuple[int, int, int]] | None
    _counter: int
    _iter: tuple[int, int, int] | None
    _cursor: int
    _span_pos: int | None
    errno: str | None

    def __init__(self, base_time: int, duration: int, total: int, resource_type: str = "") -> None:
        if duration < 1 or resource_type is None:
            raise PlannerError("planner duration must be >= 1", errno=EINVAL, duration=duration)
        if total < 0:
            raise PlannerError("planner total must be >= 0", errno=ERANGE, total=total)
        self._base = base_time
        self._end = base_time + duration
        self._total = total
        self._type = resource_type
        self._times = self._rem = self._ref = self._key = None
        self._spans = None
        self._counter = 0
        self._iter = None
        self._cursor = 0
        self._span_pos = None
        self.errno = None

    # ------------------------------------------------------------------ getters

    @property
    def base_time(self) -> int:
        """Start of the planned window."""
        return self._base

    @property
    def duration(self) -> int:
        """Length of the planned window."""
        return self._end - self._base

    @property
    def plan_end(self) -> int:
        """End (exclusive) of the planned window: ``base_time + duration``."""
        return self._end

    @property
    def resource_total(self) -> int:
        """Size of the pool."""
        return self._total

    @property
    def resource_type(self) -> str:
        """Name of the resource type this planner tracks."""
        return self._type

    def __repr__(self) -> str:
        n = len(self._spans) if self._spans else 0
        return (
            f"Planner(type={self._type!r}, total={self._total}, base={self._base}, "
            f"end={self._end}, spans={n})"
        )

    # ----------------------------------------------------------------- helpers

    def _materialize(self) -> None:
        """Create the point lists holding only the base point (O(1))."""
        self._times = [self._base]
        self._rem = [self._total]
        self._ref = [1]

    def _restore(self) -> None:
        """End the current avail-time iteration (Fluxion's restore_track_points).

        Points consumed by the iteration go back into the min-time tree, which
        re-keys them with their current free amount; that only matters when
        the keys are stale (after :meth:`update_total`).
        """
        cur = self._cursor
        if cur:
            keys = self._key
            if keys is not None and self._iter is not None:
                req = self._iter[2]
                rem = self._rem
                assert rem is not None
                for k in range(min(cur, len(keys))):
                    if keys[k] >= req:
                        keys[k] = rem[k]
            self._cursor = 0

    def _avail_at(self, on_or_after: int, duration: int, request: int) -> int | None:
        """Continue the scan for the next feasible start point (Fluxion's avail_at)."""
        times = self._times
        if times is None:
            # Only the base point exists; its key is the total, >= request.
            first = self._cursor == 0 and on_or_after <= self._base
            self._cursor = 1
            if first and self._base + duration <= self._end:
                return self._base
            self.errno = ENOENT
            return None
        rem = self._rem
        assert rem is not None
        keys = self._key if self._key is not None else rem
        n = len(times)
        i = self._cursor
        k = bisect_left(times, on_or_after)
        if k > i:
            i = k
        if request <= 0:
            # every point fits a request of nothing (free amounts and keys are never negative)
            if i >= n:
                self._cursor = n
                self.errno = ENOENT
                return None
            self._cursor = i + 1
            if times[i] + duration > self._end:
                self.errno = ENOENT
                return None
            return times[i]
        while i < n:
            if keys[i] < request:
                try:
                    i += 1 + indexOf(map(ge, _iter_from(keys, i + 1), repeat(request)), True)
                except ValueError:
                    break
            t = times[i]
            tend = t + duration
            if rem[i] < request:
                i += 1  # fails at its own start: tracked and skipped
                continue
            j = bisect_left(times, tend, i + 1)
            if j - i > 1:
                fail = _first_below(rem, i + 1, j, request)
                if fail >= 0:
                    # Every candidate up to ``fail`` has ``fail`` in its window.
                    i = fail + 1
                    continue
            self._cursor = i + 1
            if tend > self._end:
                self.errno = ENOENT
                return None
            return t
        self._cursor = n
        self.errno = ENOENT
        return None

    def _window(self, start: int, last: int) -> tuple[int, int]:
        """Return the indices ``(a, b)`` of the existing points at ``start`` and ``last``."""
        times = self._times
        assert times is not None
        a = bisect_left(times, start)
        return a, bisect_left(times, last, a + 1)

    # ----------------------------------------------------------------- queries

    def avail_resources_at(self, at: int) -> int:
        """Return the free units at time ``at``; O(log k), O(1) without spans.

        Raises PlannerError(ERANGE) when ``at`` is outside ``[base_time, plan_end]``.
        """
        if at < self._base or at > self._end:
            raise PlannerError("time outside the planner", errno=ERANGE, at=at)
        times = self._times
        if times is None:
            return self._total
        return self._rem[bisect_right(times, at) - 1]  # type: ignore[index]

    @cython.locals(
        i=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        n=cython.Py_ssize_t,
        stop=cython.Py_ssize_t,
        times=list,
        rem=list,
    )
    def avail_resources_during(self, at: int, duration: int) -> int:
        """Return the minimum free units during ``[at, at + duration)``; O(log k + w).

        Raises PlannerError: EINVAL for ``duration < 1`` or ``at > plan_end``,
        ERANGE when the window leaves ``[base_time, plan_end]``.
        """
        end = at + duration
        if duration < 1 or at > self._end:
            raise PlannerError("invalid time window", errno=EINVAL, at=at, duration=duration)
        if end > self._end or at < self._base:
            raise PlannerError("time window outside the planner", errno=ERANGE, at=at, duration=duration)
        times = self._times
        if times is None:
            return self._total
        rem = self._rem
        assert rem is not None
        i = bisect_right(times, at) - 1
        low = rem[i]
        # Short windows: walk a few points; long ones: bisect + min (C speed).
        n = len(times)
        k = i + 1
        stop = k + _WALK if k + _WALK < n else n
        while k < stop:
            if times[k] >= end:
                return low
            if rem[k] < low:
                low = rem[k]
            k += 1
        if k == n:
            return low
        j = bisect_left(times, end, k)
        if j > k:
            tail = min(rem[k:j])
            if tail < low:
                return tail
        return low

    @cython.locals(
        i=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        n=cython.Py_ssize_t,
        stop=cython.Py_ssize_t,
        times=list,
        rem=list,
    )
    def avail_during(self, at: int, duration: int, request: int) -> bool:
        """Return whether ``request`` units are free during ``[at, at + duration)``.

        O(log k + w); O(1) without spans.  On False, :attr:`errno` is EBUSY (not
        free), ERANGE (request > total, or the window ends after plan_end) or
        EINVAL (``duration < 1``).  Like Fluxion, a window starting before
        base_time is not checked and reports True.
        """
        if duration < 1:
            self.errno = EINVAL
            return False
        if request > self._total or request < 0:
            self.errno = ERANGE
            return False
        end = at + duration
        if end > self._end:
            self.errno = ERANGE
            return False
        times = self._times
        if times is None:
            return True
        i = bisect_right(times, at) - 1
        if i < 0:
            return True
        rem = self._rem
        assert rem is not None
        if rem[i] < request:
            self.errno = EBUSY
            return False
        # Short windows: walk a few points; long ones: bisect + min (C speed).
        n = len(times)
        k = i + 1
        stop = k + _WALK if k + _WALK < n else n
        while k < stop:
            if times[k] >= end:
                return True
            if rem[k] < request:
                self.errno = EBUSY
                return False
            k += 1
        if k < n:
            j = bisect_left(times, end, k)
            if j > k and min(rem[k:j]) < request:
                self.errno = EBUSY
                return False
        return True

    def avail_time_first(self, on_or_after: int, duration: int, request: int) -> int | None:
        """Return the earliest scheduled point ``t >= on_or_after`` with ``request`` free during ``[t, t+duration)``.

        Candidates are only Fluxion's scheduled points (base time, span starts
        and ends), in increasing time order.  Starts a new iteration for
        :meth:`avail_time_next`.  Returns None with :attr:`errno` ENOENT (no
        such time, or the first fit would end after plan_end), ERANGE
        (request > total) or EINVAL (``on_or_after`` outside
        ``[base_time, plan_end)`` or ``duration < 1``; the previous iteration
        is then left untouched).  O(log k + scanned points).
        """
        if on_or_after < self._base or on_or_after >= self._end or duration < 1:
            self.errno = EINVAL
            return None
        if request > self._total or request < 0:
            self.errno = ERANGE
            return None
        if self._cursor:
            self._restore()
        self._iter = (on_or_after, duration, request)
        return self._avail_at(on_or_after, duration, request)

    def avail_time_next(self) -> int | None:
        """Return the next candidate of the iteration begun by :meth:`avail_time_first`.

        Returns None with :attr:`errno` ENOENT when exhausted, EINVAL when no
        iteration is active (a span was added or removed since), ERANGE when
        the total shrank below the request.
        """
        it = self._iter
        if it is None:
            self.errno = EINVAL
            return None
        on_or_after, duration, request = it
        if request > self._total:
            self.errno = ERANGE
            return None
        return self._avail_at(on_or_after, duration, request)

    def fit_time(self, at: int, duration: int, request: int) -> int | None:
        """Return the earliest time ``t >= at`` at which :meth:`avail_during` ``(t, duration, request)`` holds.

        Any time, not only a scheduled point: ``at`` itself if it fits, else
        the first point after it whose window fits (between two points the
        window only meets more points as it moves later).  None when no such
        time exists (or the window would end after plan_end).  Read-only: the
        avail-time iteration and :attr:`errno` are left alone.  O(log k +
        scanned points); what :class:`~fluxlite.planner.PlannerMulti` uses to
        skip the index-0 type's candidates that another type cannot serve.
        """
        if duration < 1 or request > self._total or request < 0:
            return None
        end = self._end
        if at + duration > end:
            return None
        times = self._times
        if times is None:
            return at
        rem = self._rem
        assert rem is not None
        n = len(times)
        i = bisect_right(times, at) - 1
        if i < 0:
            return at  # a window starting before base_time is not checked (avail_during)
        if rem[i] >= request:
            j = bisect_left(times, at + duration, i + 1)
            fail = _first_below(rem, i + 1, j, request) if j - i > 1 else -1
            if fail < 0:
                return at
            i = fail + 1
        else:
            i += 1
        while i < n:
            if rem[i] < request:
                try:
                    i += 1 + indexOf(map(ge, _iter_from(rem, i + 1), repeat(request)), True)
                except ValueError:
                    return None
            t = times[i]
            if t + duration > end:
                return None
            j = bisect_left(times, t + duration, i + 1)
            if j - i > 1:
                fail = _first_below(rem, i + 1, j, request)
                if fail >= 0:
                    i = fail + 1
                    continue
            return t
        return None

    def unavail_time_first(self, on_or_after: int, request: int) -> int | None:
        """Return the first scheduled point, from the state at ``on_or_after`` on, with fewer than ``request`` free.

        The answer may precede ``on_or_after`` (it is the point whose state
        covers ``on_or_after``).  Returns None with :attr:`errno` ENOENT when
        there is none, EINVAL / ERANGE for bad arguments.  Like Fluxion it
        resets the avail-time iteration.
        """
        if on_or_after < self._base or on_or_after >= self._end:
            self.errno = EINVAL
            return None
        if request > self._total or request < 0:
            self.errno = ERANGE
            return None
        if self._cursor:
            self._restore()
        self._iter = (on_or_after, 0, request)
        times = self._times
        if times is None:
            self.errno = ENOENT
            return None
        rem = self._rem
        assert rem is not None
        i = bisect_right(times, on_or_after) - 1
        try:
            return times[i + indexOf(map(lt, _iter_from(rem, i), repeat(request)), True)]
        except ValueError:
            self.errno = ENOENT
            return None

    # --------------------------------------------------------------- mutation

    @cython.locals(
        i=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        a=cython.Py_ssize_t,
        times=list,
        rem=list,
        ref=list,
        keys=list,
    )
    def add_span(self, start: int, duration: int, amount: int) -> int:
        """Book ``amount`` units during ``[start, start + duration)``; return the span id.

        Span ids start at 1 and increase.  Resets the avail-time iteration.
        Raises PlannerError (and changes nothing): EINVAL when the window is
        not inside ``[base_time, plan_end]`` or ``duration < 1``, ERANGE when
        ``amount`` is negative or exceeds the total, EBUSY when fewer than
        ``amount`` units are free somewhere in the window (Fluxion reports
        that as EINVAL).  O(log k + w) plus list insertion.
        """
        last = start + duration
        if duration < 1 or start < self._base or last > self._end:
            raise PlannerError(
                "span window outside the planner", errno=EINVAL, start=start, duration=duration
            )
        if amount < 0 or amount > self._total:
            raise PlannerError("span amount out of range", errno=ERANGE, amount=amount, total=self._total)
        times = self._times
        if times is None:
            # First span of an empty planner: build the points directly.
            total = self._total
            if start == self._base:
                self._times = [start, last]
                self._rem = [total - amount, total]
                self._ref = [2, 1]
            else:
                self._times = [self._base, start, last]
                self._rem = [total, total - amount, total]
                self._ref = [1, 1, 1]
            if self._cursor:
                self._restore()
            self._iter = None
            self._counter += 1
            sid = self._counter
            self._spans = {sid: (start, last, amount)}
            return sid
        rem = self._rem
        ref = self._ref
        assert rem is not None and ref is not None
        i = bisect_right(times, start) - 1
        j = bisect_left(times, last, i + 1)
        if j - i <= _WALK:
            busy = False
            for k in range(i, j):
                if rem[k] < amount:
                    busy = True
                    break
        else:
            busy = min(rem[i:j]) < amount
        if busy:
            raise PlannerError(
                "not enough free units for the span",
                errno=EBUSY,
                start=start,
                duration=duration,
                amount=amount,
            )
        if self._cursor:
            self._restore()
        self._iter = None
        self._counter += 1
        sid = self._counter
        keys = self._key
        if times[i] == start:
            ref[i] += 1
            a = i
        else:
            a = i + 1
            free = rem[i]
            times.insert(a, start)
            rem.insert(a, free)
            ref.insert(a, 1)
            if keys is not None:
                keys.insert(a, free)
            j += 1
        if j < len(times) and times[j] == last:
            ref[j] += 1
        else:
            free = rem[j - 1]
            times.insert(j, last)
            rem.insert(j, free)
            ref.insert(j, 1)
            if keys is not None:
                keys.insert(j, free)
        if amount:
            if j - a <= _WALK:
                for k in range(a, j):
                    rem[k] -= amount
            else:
                rem[a:j] = map(amount.__rsub__, rem[a:j])
        if keys is not None:
            keys[a:j] = rem[a:j]
        spans = self._spans
        if spans is None:
            spans = self._spans = {}
        spans[sid] = (start, last, amount)
        return sid

    @cython.locals(
        a=cython.Py_ssize_t,
        b=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        times=list,
        rem=list,
        ref=list,
        keys=list,
    )
    def rem_span(self, span_id: int) -> None:
        """Remove a span, freeing its units; resets the avail-time iteration.

        Raises PlannerError(EINVAL) for an unknown span id.  O(log k + w).
        """
        spans = self._spans
        span = spans.pop(span_id, None) if spans else None
        if span is None:
            raise PlannerError("unknown span", errno=EINVAL, span_id=span_id)
        if self._cursor:
            self._restore()
        self._iter = None
        start, last, planned = span
        times = self._times
        rem = self._rem
        ref = self._ref
        keys = self._key
        assert times is not None and rem is not None and ref is not None
        a = bisect_left(times, start)
        b = bisect_left(times, last, a + 1)
        if planned:
            if b - a <= _WALK:
                for k in range(a, b):
                    rem[k] += planned
            else:
                rem[a:b] = map(planned.__radd__, rem[a:b])
        if keys is not None:
            keys[a:b] = rem[a:b]
        ref[b] -= 1
        if not ref[b]:
            del times[b], rem[b], ref[b]
            if keys is not None:
                del keys[b]
        ref[a] -= 1
        if not ref[a]:
            del times[a], rem[a], ref[a]
            if keys is not None:
                del keys[a]
        if not spans:
            self._spans = None
            if keys is not None and keys == rem:
                self._key = keys = None
            if keys is None and rem[0] == self._total:
                self._times = self._rem = self._ref = None

    def reduce_span(self, span_id: int, to_remove: int) -> bool:
        """Give back ``to_remove`` of a span's units (partial cancel); return True if the span was removed.

        Removing exactly the planned amount (including 0 from a 0-unit span)
        removes the span; 0 otherwise is a no-op.  A partial reduction ends the
        current avail-time iteration (the next :meth:`avail_time_next` starts
        over) but, as in Fluxion, leaves it active.  Raises PlannerError(EINVAL)
        for an unknown span or ``to_remove`` outside ``[0, planned]``.
        """
        spans = self._spans
        span = spans.get(span_id) if spans else None
        if span is None:
            raise PlannerError("unknown span", errno=EINVAL, span_id=span_id)
        start, last, planned = span
        if to_remove == planned:
            self.rem_span(span_id)
            return True
        if to_remove == 0:
            return False
        if not 0 < to_remove < planned:
            raise PlannerError(
                "cannot reduce a span by more than it holds",
                errno=EINVAL,
                span_id=span_id,
                to_remove=to_remove,
                planned=planned,
            )
        if self._cursor:
            self._restore()
        assert spans is not None
        spans[span_id] = (start, last, planned - to_remove)
        rem = self._rem
        assert rem is not None
        a, b = self._window(start, last)
        total = self._total
        for k in range(a, b):
            v = rem[k] + to_remove
            rem[k] = v
            if v > total:  # Fluxion stops updating here (after a total shrink)
                break
        if self._key is not None:
            self._key[a:b] = rem[a:b]
        return False

    def shift_span(self, span_id: int, delta: int) -> None:
        """Change the units a span holds by ``delta`` in place: same id, same window.

        What a grow of a job over the same window needs (and its undo): the
        points end as a remove and re-add of the span with the new amount
        would leave them, but the span keeps its id and nothing is removed on
        the way.  All-or-nothing: raises PlannerError (changing nothing) with
        EINVAL for an unknown span, ERANGE when the new amount would leave
        ``[0, total]``, EBUSY when fewer than ``delta`` units are free
        somewhere in the window.  O(log k + w).
        """
        spans = self._spans
        span = spans.get(span_id) if spans else None
        if span is None:
            raise PlannerError("unknown span", errno=EINVAL, span_id=span_id)
        start, last, planned = span
        amount = planned + delta
        if amount < 0 or amount > self._total:
            raise PlannerError("span amount out of range", errno=ERANGE, amount=amount, total=self._total)
        if not delta:
            return
        rem = self._rem
        assert rem is not None and spans is not None
        a, b = self._window(start, last)
        if delta > 0 and min(rem[a:b]) < delta:
            raise PlannerError(
                "not enough free units for the span",
                errno=EBUSY,
                start=start,
                duration=last - start,
                amount=delta,
            )
        if self._cursor:
            self._restore()
        self._iter = None
        rem[a:b] = map(delta.__rsub__, rem[a:b])
        if self._key is not None:
            self._key[a:b] = rem[a:b]
        spans[span_id] = (start, last, amount)

    def update_total(self, total: int) -> None:
        """Change the pool size, shifting every point's free amount by the difference.

        Free amounts are clamped at 0.  As in Fluxion, the min-time tree keys
        used by :meth:`avail_time_first` are not refreshed: a point keeps the
        free amount it had before the update until a span add/remove over it
        or the end of an iteration that consumed it re-keys it.  Raises
        PlannerError(ERANGE) for a negative total.  O(k).
        """
        if total < 0:
            raise PlannerError("planner total must be >= 0", errno=ERANGE, total=total)
        delta = total - self._total
        if not delta:
            return
        if self._times is None:
            self._materialize()
        rem = self._rem
        assert rem is not None
        if self._key is None:
            self._key = rem.copy()
        rem[:] = [v if (v := r + delta) >= 0 else 0 for r in rem]
        self._total = total
        if self._key == rem:
            self._key = None

    def reset(self, base_time: int, duration: int) -> None:
        """Drop every span and restart with a new window; the total and type are kept.

        Span ids start again from 1.  Raises PlannerError(EINVAL) for ``duration < 1``.
        """
        if duration < 1:
            raise PlannerError("planner duration must be >= 1", errno=EINVAL, duration=duration)
        self._base = base_time
        self._end = base_time + duration
        self._times = self._rem = self._ref = self._key = None
        self._spans = None
        self._counter = 0
        self._iter = None
        self._cursor = 0
        self._span_pos = None

    # ------------------------------------------------------------------ spans

    def _span(self, span_id: int) -> tuple[int, int, int]:
        span = self._spans.get(span_id) if self._spans else None
        if span is None:
            raise PlannerError("unknown span", errno=EINVAL, span_id=span_id)
        return span

    def span_start_time(self, span_id: int) -> int:
        """Return the span's start time; PlannerError(EINVAL) if unknown."""
        return self._span(span_id)[0]

    def span_duration(self, span_id: int) -> int:
        """Return the span's duration; PlannerError(EINVAL) if unknown."""
        start, last, _ = self._span(span_id)
        return last - start

    def span_resource_count(self, span_id: int) -> int:
        """Return the units the span holds; PlannerError(EINVAL) if unknown."""
        return self._span(span_id)[2]

    def is_active_span(self, span_id: int) -> bool:
        """Return whether ``span_id`` is a span of this planner."""
        return bool(self._spans) and span_id in self._spans  # type: ignore[operator]

    @property
    def span_size(self) -> int:
        """Number of spans."""
        return len(self._spans) if self._spans else 0

    def __len__(self) -> int:
        return len(self._spans) if self._spans else 0

    def span_first(self) -> int | None:
        """Return the smallest span id and start a span iteration; None (EINVAL) if there are no spans."""
        spans = self._spans
        if not spans:
            self._span_pos = None
            self.errno = EINVAL
            return None
        self._span_pos = sid = next(iter(spans))
        return sid

    def span_next(self) -> int | None:
        """Return the next span id in increasing order; None (EINVAL) at the end. O(spans)."""
        pos = self._span_pos
        spans = self._spans
        if pos is not None and spans:
            for sid in spans:
                if sid > pos:
                    self._span_pos = sid
                    return sid
        self._span_pos = None
        self.errno = EINVAL
        return None

    def spans(self) -> Iterator[tuple[int, int, int, int]]:
        """Yield ``(span_id, start, duration, amount)`` in increasing span id order."""
        if self._spans:
            for sid, (start, last, planned) in list(self._spans.items()):
                yield sid, start, last - start, planned

    def points(self) -> list[tuple[int, int]]:
        """Return the scheduled points as ``(time, free units)`` pairs, in time order."""
        if self._times is None:
            return [(self._base, self._total)]
        return list(zip(self._times, self._rem))  # type: ignore[arg-type]

    # ------------------------------------------------------------ copy / compare

    def copy(self) -> Planner:
        """Return a deep copy (Fluxion's planner_copy).

        The copy keeps the iteration request but, like Fluxion's copy, holds
        every point in its min-time tree freshly keyed: its next
        :meth:`avail_time_next` starts the scan over.
        """
        new = Planner.__new__(Planner)
        new._base = self._base
        new._end = self._end
        new._total = self._total
        new._type = self._type
        if self._times is None:
            new._times = new._rem = new._ref = None
        else:
            new._times = self._times.copy()
            new._rem = self._rem.copy()  # type: ignore[union-attr]
            new._ref = self._ref.copy()  # type: ignore[union-attr]
        new._key = None
        new._spans = dict(self._spans) if self._spans else None
        new._counter = self._counter
        new._iter = self._iter
        new._cursor = 0
        new._span_pos = None
        new.errno = None
        return new

    def equals(self, other: Planner) -> bool:
        """Return whether two planners hold the same state (Fluxion's planners_equal).

        Compares window, total, type, span counter, spans, scheduled points
        (free amounts and reference counts) and whether an iteration is active.
        """
        if self is other:
            return True
        if (
            self._base != other._base
            or self._end != other._end
            or self._total != other._total
            or self._type != other._type
            or self._counter != other._counter
            or (self._iter is None) != (other._iter is None)
            or (self._spans or {}) != (other._spans or {})
        ):
            return False
        if self._times is None or other._times is None:
            return self.points() == other.points() and self._ref_list() == other._ref_list()
        return self._times == other._times and self._rem == other._rem and self._ref == other._ref

    def _ref_list(self) -> list[int]:
        return [1] if self._ref is None else self._ref
