"""The multi-resource planner: one :class:`Planner` per resource type, shared span ids.

A :class:`PlannerMulti` plans several pools (``core``, ``gpu``, ``memory``
...) over the same time window, the way Fluxion's ``planner_multi`` does for
a vertex's aggregate (subtree) counts.  A multi-span books a vector of counts
(one per type, zeros included) and gets one id (starting at 0) that maps to
one span id in each per-type planner.

Combination rule of :meth:`PlannerMulti.avail_time_first` (Fluxion's): the
candidate times come from the planner at index 0 alone, in its own order;
each candidate is accepted when every other type is free during the window
(:meth:`Planner.avail_during`), otherwise the index-0 planner's
:meth:`Planner.avail_time_next` supplies the next candidate.  So the index-0
type drives the iteration and the others only filter it.

Complexities: every operation is the per-type operation times the number of
types (typically 1-4); :meth:`PlannerMulti.update` is O(types + spans) when
the set of types changes, O(types * points) otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed
    from fluxlite import _cyshim as cython

from fluxlite.errors import PlannerError
from fluxlite.planner._planner import EBUSY, EINVAL, ENOENT, ERANGE, Planner

__all__ = ["PlannerMulti"]


class PlannerMulti:
    """Several resource pools planned together over one time window.

    Like :class:`Planner`, queries with a normal "no" answer return None or
    False and leave the reason in :attr:`errno`; invalid operations raise
    :class:`~fluxlite.errors.PlannerError`.
    """

    __slots__ = (
        "_counter",
        "_index",
        "_iter_counts",
        "_iter_duration",
        "_iter_on_or_after",
        "_planners",
        "_span_pos",
        "_spans",
        "_totals",
        "_types",
        "errno",
    )

    _planners: list[Planner]
    _types: list[str]
    _totals: list[int]
    _index: dict[str, int]
    _spans: dict[int, list[int]]
    _counter: int
    _iter_on_or_after: int
    _iter_duration: int
    _iter_counts: dict[str, int]
    _span_pos: int | None
    errno: str | None

    @cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t)
    def __init__(self, base_time: int, duration: int, totals: Sequence[int], types: Sequence[str]) -> None:
        n = len(types)
        if duration < 1 or len(totals) != n:
            raise PlannerError(
                "invalid planner_multi arguments",
                errno=EINVAL,
                duration=duration,
                totals=len(totals),
                types=n,
            )
        for total in totals:
            if total < 0:
                raise PlannerError("resource total must be >= 0", errno=ERANGE, total=total)
        # (loops, not a generator: a multi-planner is made for every internal vertex a grow attaches;
        # the usual one or two types are compared, where a set costs more than the comparison)
        if n == 1:
            distinct = types[0] is not None
        elif n == 2:
            distinct = types[0] is not None and types[1] is not None and types[0] != types[1]
        else:
            distinct = len(set(types)) == n
            for t in types:
                if t is None:
                    distinct = False
        if not distinct:
            raise PlannerError("resource types must be distinct", errno=EINVAL, types=list(types))
        # (typed index loops: compiled, no zip / enumerate iterator and no tuple per type)
        self._planners = [Planner(base_time, duration, totals[i], types[i]) for i in range(n)]
        self._types = list(types)
        self._totals = list(totals)
        self._index = {types[i]: i for i in range(n)}
        self._spans = {}
        self._counter = 0
        self._iter_on_or_after = 0
        self._iter_duration = 0
        self._iter_counts = {types[i]: 0 for i in range(n)}
        self._span_pos = None
        self.errno = None

    # ------------------------------------------------------------------ getters

    def _first(self) -> Planner:
        if not self._planners:
            raise PlannerError("planner_multi has no resource types", errno=EINVAL)
        return self._planners[0]

    @property
    def base_time(self) -> int:
        """Start of the planned window (PlannerError(EINVAL) without types)."""
        return self._first().base_time

    @property
    def duration(self) -> int:
        """Length of the planned window (PlannerError(EINVAL) without types)."""
        return self._first().duration

    @property
    def resources_len(self) -> int:
        """Number of resource types."""
        return len(self._planners)

    def __len__(self) -> int:
        return len(self._planners)

    @property
    def resource_types(self) -> list[str]:
        """The resource types in index order (a copy)."""
        return list(self._types)

    def counts_for(self, amounts: Mapping[str, int]) -> list[int]:
        """``amounts`` (type -> units) as a count per resource type, in index order (0 when absent)."""
        get = amounts.get
        return [get(t, 0) for t in self._types]

    def _check_index(self, i: int) -> None:
        if not 0 <= i < len(self._planners):
            raise PlannerError("resource index out of range", errno=EINVAL, index=i)

    def resource_type_at(self, i: int) -> str:
        """Return the type at index ``i``; PlannerError(EINVAL) if out of range."""
        self._check_index(i)
        return self._types[i]

    def resource_total_at(self, i: int) -> int:
        """Return the total of the type at index ``i``; PlannerError(EINVAL) if out of range."""
        self._check_index(i)
        return self._totals[i]

    def resource_total_by_type(self, resource_type: str) -> int:
        """Return the total of ``resource_type``; PlannerError(EINVAL) if unknown."""
        i = self._index.get(resource_type)
        if i is None:
            raise PlannerError("unknown resource type", errno=EINVAL, type=resource_type)
        return self._totals[i]

    def index_of(self, resource_type: str) -> int | None:
        """Return the index of ``resource_type``, or None if it is not planned here."""
        return self._index.get(resource_type)

    def planner_at(self, i: int) -> Planner:
        """Return the per-type planner at index ``i`` (shared, not a copy)."""
        self._check_index(i)
        return self._planners[i]

    def __repr__(self) -> str:
        kinds = ", ".join(f"{t}={n}" for t, n in zip(self._types, self._totals))
        return f"PlannerMulti({kinds}, spans={len(self._spans)})"

    # ----------------------------------------------------------------- queries

    def avail_time_first(self, on_or_after: int, duration: int, counts: Sequence[int]) -> int | None:
        """Return the earliest time the index-0 planner proposes at which every count is free.

        See the module docstring for the combination rule.  Starts an
        iteration for :meth:`avail_time_next`.  Returns None with
        :attr:`errno` ENOENT (none), EINVAL (bad arguments, ``len(counts)``
        not matching) or ERANGE (the index-0 count exceeds its total; a too
        large count of another type just yields ENOENT).
        """
        planners = self._planners
        n = len(planners)
        if n < 1 or len(counts) != n:
            self.errno = EINVAL
            return None
        self._iter_on_or_after = on_or_after
        self._iter_duration = duration
        ic = self._iter_counts
        for typ, c in zip(self._types, counts):
            ic[typ] = c
        p0 = planners[0]
        t = p0.avail_time_first(on_or_after, duration, counts[0])
        if n == 1:
            if t is None:
                self.errno = p0.errno
            return t
        return self._filter(t, duration, counts)

    def _filter(self, t: int | None, duration: int, counts: Sequence[int | None]) -> int | None:
        """The first of the index-0 planner's candidates, from ``t`` on, that every other type can serve.

        The same answer (and the same iteration state) as taking the
        candidates one by one (``avail_time_next``) and testing each with
        ``avail_during``, without visiting the ones in between: when type
        ``i`` fails at ``t``, no time before its :meth:`Planner.fit_time`
        can serve it, so the index-0 scan continues from there (capped where
        every candidate would end after the plan end, so the scan stops on
        the same candidate).  A type whose count is unknown (added by
        :meth:`update` during the iteration) is EINVAL, as before.
        """
        planners = self._planners
        n = len(planners)
        p0 = planners[0]
        it = p0._iter  # the index-0 planner's own iteration (what its avail_time_next continues)
        d0, c0 = (it[1], it[2]) if it is not None else (duration, 0)
        cap = p0._end - d0 + 1  # a candidate at or after this ends after plan_end
        while t is not None:
            nxt: int | None = None
            for i in range(1, n):
                c = counts[i]
                if c is None:
                    self.errno = EINVAL
                    return None
                pi = planners[i]
                if not pi.avail_during(t, duration, c):
                    nxt = pi.fit_time(t, duration, c)
                    break
            else:
                return t
            s = cap if nxt is None or nxt > cap else nxt
            t = p0._avail_at(s if s > t else t, d0, c0)
        self.errno = p0.errno
        return None

    def avail_time_next(self) -> int | None:
        """Return the next time of the iteration begun by :meth:`avail_time_first`.

        Returns None with :attr:`errno` ENOENT when exhausted, EINVAL when no
        iteration is active in the index-0 planner (a span was added/removed,
        or :meth:`update` put a new type first).  Types added by
        :meth:`update` since the first call are requested with count 0.
        """
        planners = self._planners
        n = len(planners)
        if n < 1:
            self.errno = EINVAL
            return None
        p0 = planners[0]
        t = p0.avail_time_next()
        if t is None:
            self.errno = p0.errno
            return None
        if n == 1:
            return t
        ic = self._iter_counts
        return self._filter(t, self._iter_duration, [ic.get(typ) for typ in self._types])

    def avail_during(self, at: int, duration: int, counts: Sequence[int]) -> bool:
        """Return whether every ``counts[i]`` is free during ``[at, at + duration)``.

        On False, :attr:`errno` is the first failing type's reason (EBUSY,
        ERANGE or EINVAL), or EINVAL when ``len(counts)`` does not match.
        """
        planners = self._planners
        if len(counts) != len(planners):
            self.errno = EINVAL
            return False
        end = at + duration
        i = 0
        for p in planners:
            c = counts[i]
            i += 1
            # Inline fast path: a type without spans only needs the range checks.
            if p._times is None and 0 <= c <= p._total and end <= p._end and duration >= 1:
                continue
            if not p.avail_during(at, duration, c):
                self.errno = p.errno
                return False
        return True

    def avail_resources_at(self, at: int, i: int) -> int:
        """Return the free units of type ``i`` at ``at`` (see :meth:`Planner.avail_resources_at`)."""
        self._check_index(i)
        return self._planners[i].avail_resources_at(at)

    def avail_resources_during(self, at: int, duration: int, i: int) -> int:
        """Return the minimum free units of type ``i`` during the window (see :meth:`Planner.avail_resources_during`)."""
        self._check_index(i)
        return self._planners[i].avail_resources_during(at, duration)

    def avail_resources_array_at(self, at: int) -> list[int]:
        """Return the free units of every type at ``at``, in index order."""
        return [p.avail_resources_at(at) for p in self._planners]

    def avail_resources_array_during(self, at: int, duration: int) -> list[int]:
        """Return the minimum free units of every type during the window, in index order."""
        if not self._planners:
            raise PlannerError("planner_multi has no resource types", errno=EINVAL)
        return [p.avail_resources_during(at, duration) for p in self._planners]

    # --------------------------------------------------------------- mutation

    def add_span(self, at: int, duration: int, counts: Sequence[int]) -> int:
        """Book ``counts[i]`` units of every type during ``[at, at + duration)``; return the span id.

        Ids start at 0 and increase; a failed add still consumes its id (as
        in Fluxion).  On failure the spans already added to lower-index types
        are removed again and the per-type PlannerError is re-raised.
        """
        planners = self._planners
        if len(counts) != len(planners):
            raise PlannerError(
                "counts do not match the resource types",
                errno=EINVAL,
                counts=len(counts),
                types=len(planners),
            )
        mspan = self._counter
        self._counter = mspan + 1
        if len(planners) == 1:  # the usual aggregate (cores only): no rollback to prepare
            self._spans[mspan] = [planners[0].add_span(at, duration, counts[0])]
            return mspan
        sids: list[int] = []
        try:
            for p, c in zip(planners, counts):
                sids.append(p.add_span(at, duration, c))
        except PlannerError:
            for k in range(len(sids) - 1, -1, -1):
                planners[k].rem_span(sids[k])
            raise
        self._spans[mspan] = sids
        return mspan

    def add_span_amounts(self, at: int, duration: int, amounts: Mapping[str, int]) -> int:
        """:meth:`add_span` of ``amounts`` (type -> units; a type not planned here is ignored, 0 when absent)."""
        planners = self._planners
        if len(planners) == 1:  # the usual aggregate (cores only): no list of counts to build
            mspan = self._counter
            self._counter = mspan + 1
            self._spans[mspan] = [planners[0].add_span(at, duration, amounts.get(self._types[0], 0))]
            return mspan
        get = amounts.get
        return self.add_span(at, duration, [get(t, 0) for t in self._types])

    def rem_span(self, span_id: int) -> None:
        """Remove a multi-span from every type.

        Raises PlannerError: EINVAL for a negative id, ENOENT for an unknown one.
        """
        if span_id < 0:
            raise PlannerError("invalid span id", errno=EINVAL, span_id=span_id)
        sids = self._spans.get(span_id)
        if sids is None:
            raise PlannerError("unknown span", errno=ENOENT, span_id=span_id)
        planners = self._planners
        if len(sids) > len(planners):
            raise PlannerError("span does not match the resource types", errno=EINVAL, span_id=span_id)
        for p, sid in zip(planners, sids):
            if sid != -1:
                p.rem_span(sid)
        del self._spans[span_id]

    def grow_span(self, span_id: int, counts: Sequence[int]) -> tuple[int, ...]:
        """Add ``counts[i]`` units of every type to a multi-span in place (its id and window stay).

        A type whose part of the span is gone (a partial release emptied it)
        gets a new part over the span's window.  Returns the indices of the
        types given a new part, for :meth:`ungrow_span`.  All-or-nothing:
        every type is checked first, so a failure changes nothing.  Raises
        PlannerError: ENOENT (unknown span), EINVAL (mismatched counts, no
        part left to give the window), ERANGE (negative count, more than
        the total), EBUSY (not enough free units over the window).
        """
        sids = self._spans.get(span_id)
        if sids is None:
            raise PlannerError("unknown span", errno=ENOENT, span_id=span_id)
        planners = self._planners
        if len(counts) != len(planners) or len(sids) < len(planners):
            raise PlannerError("counts do not match the resource types", errno=EINVAL, span_id=span_id)
        win = self.span_window(span_id)
        if win is None:
            raise PlannerError("the span holds nothing", errno=EINVAL, span_id=span_id)
        at, duration = win
        created = []
        for i, c in enumerate(counts):
            if c < 0:
                raise PlannerError("count must be >= 0", errno=ERANGE, type=self._types[i], count=c)
            if not c:
                continue
            p = planners[i]
            sid = sids[i]
            if sid == -1 or not p.is_active_span(sid):
                created.append(i)
            elif p.span_resource_count(sid) + c > p.resource_total:
                raise PlannerError("span amount out of range", errno=ERANGE, type=self._types[i], count=c)
            if p.avail_resources_during(at, duration) < c:
                raise PlannerError(
                    "not enough free units for the span", errno=EBUSY, type=self._types[i], count=c
                )
        for i, c in enumerate(counts):
            if c:
                if i in created:
                    sids[i] = planners[i].add_span(at, duration, c)
                else:
                    planners[i].shift_span(sids[i], c)
        return tuple(created)

    def ungrow_span(self, span_id: int, counts: Sequence[int], created: Sequence[int]) -> None:
        """Undo :meth:`grow_span` (same ``counts``, its answer ``created``): the span as it was."""
        sids = self._spans[span_id]
        planners = self._planners
        for i, c in enumerate(counts):
            if not c:
                continue
            if i in created:
                planners[i].rem_span(sids[i])
                sids[i] = -1
            else:
                planners[i].shift_span(sids[i], -c)

    def reduce_span(self, span_id: int, counts: Mapping[str, int]) -> bool:
        """Give back part of a multi-span (partial cancel); return True when it is gone entirely.

        ``counts`` maps resource types to the units to give back; types not
        planned here are ignored, planned types missing from ``counts`` are
        reduced by 0 (which removes their span if it holds 0 units).  A
        per-type span reduced to nothing is removed.  The whole request is
        validated first, so a failure changes nothing.  Raises PlannerError:
        EINVAL (negative id, a count larger than what the span holds), ENOENT
        (unknown span), ERANGE (negative count).
        """
        if span_id < 0:
            raise PlannerError("invalid span id", errno=EINVAL, span_id=span_id)
        sids = self._spans.get(span_id)
        if sids is None:
            raise PlannerError("unknown span", errno=ENOENT, span_id=span_id)
        planners = self._planners
        n = len(planners)
        if len(sids) < n:
            raise PlannerError("span does not match the resource types", errno=EINVAL, span_id=span_id)
        to_reduce = [0] * n
        index = self._index
        for typ, c in counts.items():
            if c < 0:
                raise PlannerError("reduction must be >= 0", errno=ERANGE, type=typ, count=c)
            i = index.get(typ)
            if i is not None:
                to_reduce[i] += c
        for i in range(n):
            sid = sids[i]
            if sid < 0 or not planners[i].is_active_span(sid):
                continue
            planned = planners[i].span_resource_count(sid)
            if to_reduce[i] > planned:
                raise PlannerError(
                    "cannot reduce a span by more than it holds",
                    errno=EINVAL,
                    span_id=span_id,
                    type=self._types[i],
                    to_remove=to_reduce[i],
                    planned=planned,
                )
        for i in range(n):
            sid = sids[i]
            if sid == -1:
                continue
            p = planners[i]
            if not p.is_active_span(sid):
                continue
            if p.reduce_span(sid, to_reduce[i]):
                sids[i] = -1
        if all(sid == -1 for sid in sids):
            del self._spans[span_id]
            return True
        return False

    def update(self, totals: Sequence[int], types: Sequence[str]) -> None:
        """Change the set of types and/or their totals, keeping existing spans.

        Retained types keep their planner and spans (see
        :meth:`Planner.update_total`), new types get an empty planner over the
        same window, types not listed are dropped with their spans, and the
        order becomes the order of ``types``.  Empty ``types`` is a no-op.
        All-or-nothing: raises PlannerError (changing nothing) with EINVAL
        (no types planned yet, mismatched lengths, duplicate types) or
        ERANGE (negative total).
        """
        if not self._planners or len(totals) != len(types):
            raise PlannerError(
                "cannot update planner_multi", errno=EINVAL, totals=len(totals), types=len(types)
            )
        if not types:
            return
        for total in totals:
            if total < 0:
                raise PlannerError("resource total must be >= 0", errno=ERANGE, total=total)
        planners = self._planners
        if list(types) == self._types:
            for i, total in enumerate(totals):
                self._totals[i] = total
                planners[i].update_total(total)
            return
        if len(set(types)) != len(types) or any(t is None for t in types):
            raise PlannerError("resource types must be distinct", errno=EINVAL, types=list(types))
        base = planners[0].base_time
        duration = planners[0].duration
        index = self._index
        old_pos = [index.get(t) for t in types]
        new_planners = [
            planners[k] if k is not None else Planner(base, duration, total, t)
            for k, total, t in zip(old_pos, totals, types)
        ]
        counts = self._iter_counts
        self._iter_counts = {t: counts.get(t, 0) if k is not None else 0 for k, t in zip(old_pos, types)}
        for sids in self._spans.values():
            sids[:] = [sids[k] if k is not None and k < len(sids) else -1 for k in old_pos]
        self._planners = new_planners
        self._types = list(types)
        self._totals = list(totals)
        self._index = {t: i for i, t in enumerate(types)}
        for p, total in zip(new_planners, totals):
            p.update_total(total)

    def reset(self, base_time: int, duration: int) -> None:
        """Reset every per-type planner to a new window (spans dropped from them).

        As in Fluxion the multi-span table and counter are left as they are.
        Raises PlannerError(EINVAL) for ``duration < 1``.
        """
        if duration < 1:
            raise PlannerError("planner duration must be >= 1", errno=EINVAL, duration=duration)
        for p in self._planners:
            p.reset(base_time, duration)

    # ------------------------------------------------------------------ spans

    def _sids(self, span_id: int) -> list[int]:
        if span_id < 0:
            raise PlannerError("invalid span id", errno=EINVAL, span_id=span_id)
        sids = self._spans.get(span_id)
        if sids is None:
            raise PlannerError("unknown span", errno=ENOENT, span_id=span_id)
        return sids

    def span_planned_at(self, span_id: int, i: int) -> int:
        """Return the units of type ``i`` held by the span (0 once given back or for a type added later).

        Raises PlannerError: EINVAL (negative id, index out of range), ENOENT (unknown span).
        """
        if span_id < 0:
            raise PlannerError("invalid span id", errno=EINVAL, span_id=span_id)
        self._check_index(i)
        sids = self._sids(span_id)
        if i >= len(sids) or sids[i] == -1:
            return 0
        return self._planners[i].span_resource_count(sids[i])

    def span_window(self, span_id: int) -> tuple[int, int] | None:
        """Return ``(start, duration)`` of the span, or None when every per-type part is gone.

        Raises PlannerError: EINVAL (negative id), ENOENT (unknown span).
        """
        for i, sid in enumerate(self._sids(span_id)):
            if sid != -1:
                pl = self._planners[i]
                return pl.span_start_time(sid), pl.span_duration(sid)
        return None

    def span_counts(self, span_id: int) -> list[int]:
        """Return the units of every type held by the span, in index order."""
        return [self.span_planned_at(span_id, i) for i in range(len(self._planners))]

    def has_span(self, span_id: int) -> bool:
        """Return whether ``span_id`` is a live multi-span."""
        return span_id in self._spans

    @property
    def span_size(self) -> int:
        """Number of multi-spans."""
        return len(self._spans)

    def span_first(self) -> int | None:
        """Return the smallest span id and start a span iteration; None (ENOENT) if none."""
        for sid in self._spans:
            self._span_pos = sid
            return sid
        self._span_pos = None
        self.errno = ENOENT
        return None

    def span_next(self) -> int | None:
        """Return the next span id in increasing order; None (ENOENT) at the end. O(spans)."""
        pos = self._span_pos
        if pos is not None:
            for sid in self._spans:
                if sid > pos:
                    self._span_pos = sid
                    return sid
        self._span_pos = None
        self.errno = ENOENT
        return None

    def span_ids(self) -> Iterator[int]:
        """Yield the live span ids in increasing order."""
        yield from list(self._spans)

    # ------------------------------------------------------------ copy / compare

    def copy(self) -> PlannerMulti:
        """Return a deep copy (Fluxion's planner_multi_copy); its span iteration starts unset."""
        new = PlannerMulti.__new__(PlannerMulti)
        new._planners = [p.copy() for p in self._planners]
        new._types = list(self._types)
        new._totals = list(self._totals)
        new._index = dict(self._index)
        new._spans = {k: list(v) for k, v in self._spans.items()}
        new._counter = self._counter
        new._iter_on_or_after = self._iter_on_or_after
        new._iter_duration = self._iter_duration
        new._iter_counts = dict(self._iter_counts)
        new._span_pos = None
        new.errno = None
        return new

    def equals(self, other: PlannerMulti) -> bool:
        """Return whether two multi-planners hold the same state (Fluxion's planner_multis_equal)."""
        if self is other:
            return True
        if (
            self._counter != other._counter
            or self._spans != other._spans
            or self._iter_on_or_after != other._iter_on_or_after
            or self._iter_duration != other._iter_duration
            or self._iter_counts != other._iter_counts
            or len(self._planners) != len(other._planners)
        ):
            return False
        for t, i in self._index.items():
            j = other._index.get(t)
            if j is None or self._totals[i] != other._totals[j]:
                return False
            if not self._planners[i].equals(other._planners[j]):
                return False
        return True
