"""The window index: which children of a wide vertex pass the aggregate prune during ``[at, end)``.

The reservation search (``allocate_orelse_reserve``) walks the graph once per
candidate start time, and on a busy graph most children of a wide vertex are
then pruned by their subtree aggregate (:meth:`PlannerMulti.avail_during`).
Asking each child in turn costs a walk step per child per candidate.  This
index holds the children's aggregate timelines side by side, one padded row
per child (scheduled times and free units per type), so that one query
answers for every child with a few array operations.

Rows follow the planners: :meth:`WindowIndex.touch` marks a child whose
aggregate changed and the row is copied again from its planner at the next
query (O(points of that child)).  The answer is exactly
``PlannerMulti.avail_during(at, end - at, counts)`` per child, including
Fluxion's corner cases (a window before the first point passes, a window
past the plan end fails).

Compiled, the module answers by one typed loop over the children instead
(:meth:`WindowIndex.alive_rows`): it reads each child's planners where they
are, so nothing is copied and no array operation pays its call overhead (about
fifteen of them per query: on L0's busy session the arrays took a sixth of a
reservation search's time; the loop is a few hundred instructions a child).
Both paths give the same answer (``tests/fluxlite/test_window_index.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed (see fluxlite._cyshim)
    from fluxlite import _cyshim as cython

__all__ = ["WindowIndex"]

_PAD = np.iinfo(np.int64).max


class WindowIndex:
    """Padded per-child timelines of one resource-type tuple, for window queries over all children."""

    __slots__ = (
        "_col",
        "_dirty",
        "_ends",
        "_ref_dirty",
        "_refs",
        "_rem",
        "_times",
        "_tl",
        "_totals",
        "_verts",
        "_width",
        "version",
    )

    def __init__(self, col: list[Any], verts: Sequence[int], types: Sequence[str], version: int) -> None:
        self._col = col
        self._verts = list(verts)
        self._tl = list(types)
        self.version = version
        n, k = len(self._verts), len(self._tl)
        self._width = 4
        self._times = np.full((k, n, self._width), _PAD, dtype=np.int64)
        self._rem = np.zeros((k, n, self._width), dtype=np.int64)
        #: per type and row: total units (-1: the row has no comparable aggregate: always alive)
        self._totals = np.zeros((k, n), dtype=np.int64)
        self._ends = np.full(n, _PAD, dtype=np.int64)
        self._dirty: set[int] | None = None  # None: every row
        #: alive_rows: per row, its planners' lists (see _row_refs), made at the first query; the rows
        #: touched since the last one
        self._refs: list[Any] | None = None
        self._ref_dirty: set[int] = set()

    def touch(self, row: int) -> None:
        """The aggregate of the child in ``row`` changed: copy it again before the next query."""
        if self._dirty is not None:
            self._dirty.add(row)
        self._ref_dirty.add(row)

    def _widen(self, width: int) -> None:
        w = self._width
        while w < width:
            w *= 2
        k, n, _ = self._times.shape
        times = np.full((k, n, w), _PAD, dtype=np.int64)
        rem = np.zeros((k, n, w), dtype=np.int64)
        times[:, :, : self._width] = self._times
        rem[:, :, : self._width] = self._rem
        self._times, self._rem, self._width = times, rem, w

    def _copy_row(self, row: int) -> None:
        p = self._col[self._verts[row]]
        times_a, rem_a = self._times, self._rem
        if p is None or p._types != self._tl:
            self._totals[:, row] = -1
            self._ends[row] = _PAD
            times_a[:, row, :] = _PAD
            return
        pls = p._planners
        self._ends[row] = pls[0]._end
        for k, pl in enumerate(pls):
            self._totals[k, row] = pl._total
            times = pl._times
            if times is None:
                times_a[k, row, :] = _PAD
                continue
            m = len(times)
            if m >= self._width:
                # the last column stays padding (see alive); a planner's last point has every
                # unit free (its last span's end), so this is belt and braces
                self._widen(m + 1)
                times_a, rem_a = self._times, self._rem
            times_a[k, row, :m] = times
            times_a[k, row, m:] = _PAD
            rem_a[k, row, :m] = pl._rem

    def _sync(self) -> None:
        dirty = self._dirty
        rows = range(len(self._verts)) if dirty is None else sorted(dirty)
        for row in rows:
            self._copy_row(row)
        self._dirty = set()

    def alive(self, at: int, end: int, need: Sequence[tuple[int, int]]) -> Any:
        """Boolean array over the children: ``need`` ((type index, units) pairs) free during ``[at, end)``.

        Compiled: :meth:`alive_rows`; pure Python: :meth:`alive_arrays` (the same answer).
        """
        if cython.compiled:
            return self.alive_rows(at, end, need)
        return self.alive_arrays(at, end, need)

    def alive_arrays(self, at: int, end: int, need: Sequence[tuple[int, int]]) -> Any:
        """Boolean array over the children: ``need`` ((type index, units) pairs) free during ``[at, end)``.

        Each row's points are compared in one flat pass over the rows side by side (contiguous
        arrays: a few C loops whatever the number of rows); a row's last column is always padding,
        so a comparison of a point with the next one never reads the next row's first point as
        the point that follows.
        """
        if self._dirty is None or self._dirty:
            self._sync()
        n, w = len(self._verts), self._width
        ok = self._ends >= end
        for k, c in need:
            times = self._times[k].reshape(-1)
            # the points whose state the window sees: the last one at or before ``at`` and those
            # inside (times ascend, padding is past any end): a point before ``end`` not followed
            # by another at or before ``at`` (for booleans, a > b is a and not b)
            le = times <= at
            cover = times < end
            np.greater(cover[:-1], le[1:], out=cover[:-1])
            cover &= self._rem[k].reshape(-1) < c
            short = cover.reshape(n, w).any(axis=1)
            # a window before a row's first point passes (Fluxion's planner)
            short &= le.reshape(n, w)[:, 0]
            ok &= self._totals[k] >= c
            np.greater(ok, short, out=ok)
        ok |= self._totals[0] < 0
        return ok

    def _row_refs(self, row: int) -> tuple[int, tuple[tuple[list[int] | None, list[int] | None, int], ...]] | None:
        """Row ``row``'s planners as (plan end, per type (times, free units, total)), or None when the
        child has no aggregate of these types (always alive).  The lists are the planners' own."""
        p = self._col[self._verts[row]]
        if p is None or p._types != self._tl:
            return None
        pls = p._planners
        return pls[0]._end, tuple([(pl._times, pl._rem, pl._total) for pl in pls])

    @cython.locals(
        n=cython.Py_ssize_t,
        i=cython.Py_ssize_t,
        lo=cython.Py_ssize_t,
        hi=cython.Py_ssize_t,
        mid=cython.Py_ssize_t,
        a=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        m=cython.Py_ssize_t,
        x=cython.Py_ssize_t,
        c=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        total=cython.Py_ssize_t,
        at_c=cython.Py_ssize_t,
        end_c=cython.Py_ssize_t,
        ok=cython.bint,
        refs=list,
        times=list,
        rem=list,
        out=bytearray,
        ent=tuple,
        per=tuple,
        tr=tuple,
    )
    def alive_rows(self, at: int, end: int, need: Sequence[tuple[int, int]]) -> Any:
        """:meth:`alive` read from the children's planners, child by child (no copies, no arrays).

        Per child, as :meth:`PlannerMulti.avail_during` answers: a child without an aggregate of
        these types passes; else the window must end by the plan's end, and for each needed type
        the pool must be large enough and every point the window sees (the last at or before
        ``at``, then those before ``end``) must have the units free, unless the window starts
        before the first point (Fluxion's planner passes it).  Each child's planner lists are
        referred to, not copied (refreshed for the children :meth:`touch` named); the searches
        are typed binary searches.
        """
        refs = self._refs
        pending = self._ref_dirty
        if refs is None:
            refs = self._refs = [self._row_refs(i) for i in range(len(self._verts))]
        elif pending:
            for i in pending:
                refs[i] = self._row_refs(i)
        self._ref_dirty = set()
        at_c = at
        end_c = end
        n = len(refs)
        out = bytearray(n)
        for i in range(n):
            ent = refs[i]
            if ent is None:
                out[i] = 1
                continue
            x = ent[0]
            if x < end_c:
                continue
            per = ent[1]
            ok = True
            for k, c in need:
                tr = per[k]
                total = tr[2]
                if total < c:
                    ok = False
                    break
                if tr[0] is None:
                    continue
                times = tr[0]
                m = len(times)
                x = times[0]
                if x > at_c:
                    continue
                # a: the last point at or before at (bisect_right - 1)
                lo = 1
                hi = m
                while lo < hi:
                    mid = (lo + hi) >> 1
                    x = times[mid]
                    if x <= at_c:
                        lo = mid + 1
                    else:
                        hi = mid
                a = lo - 1
                rem = tr[1]
                j = a
                while j < m:
                    x = times[j]
                    if j > a and x >= end_c:
                        break
                    x = rem[j]
                    if x < c:
                        ok = False
                        break
                    j += 1
                if not ok:
                    break
            if ok:
                out[i] = 1
        return np.frombuffer(out, dtype=np.bool_)
