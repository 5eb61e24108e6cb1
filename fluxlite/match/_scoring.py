"""Scoring bookkeeping of the depth-first-and-up (DFU) match walk.

While the traverser walks the resource graph, every vertex that *could* serve
a jobspec request reports an *edge group* to its parent: its score (higher or
lower is better depending on the policy), how many units it offers, whether it
is wanted exclusively, and the graph edges that lead to it.  A vertex that
matched a jobspec resource with children then picks the best ``k`` edge
groups of each requested child type (``choose_best_k``); the chosen edges are
marked so that the update walk later allocates exactly them.

The selection must order edge groups exactly as Fluxion does, including how
ties between equal scores are broken, because fluxlite's outputs are compared
byte for byte with Fluxion's.  Fluxion sorts with ``std::sort`` from GNU
libstdc++ (introsort, not stable); :func:`std_sort` reproduces that algorithm
step by step, and is only used when a tie is actually present (otherwise any
correct sort gives the same order).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

__all__ = ["MATCH_MET", "MATCH_UNMET", "Dfu", "Evals", "std_sort"]

MATCH_UNMET = 0
MATCH_MET = 1

# An edge group is a tuple (score, count, exclusive, root, edges) where edges is
# a tuple of (count, needs, exclusive, eid) tuples.  Egroup fields by index:
SCORE, COUNT, EXCL, ROOT, EDGES = 0, 1, 2, 3, 4


class Evals:
    """All edge groups of one resource type seen below one vertex."""

    __slots__ = ("best_i", "best_k", "egroups", "iter_cur", "keys", "qual_count", "total_count")

    def __init__(self) -> None:
        self.egroups: list[tuple] = []
        #: the scores of ``egroups`` as a numpy array, when a bulk producer has
        #: them (valid only while its length is that of ``egroups``)
        self.keys: Any = None
        self.qual_count = 0
        self.total_count = 0
        self.best_k = 0
        self.best_i = 0
        self.iter_cur = 0

    def add(self, eg: tuple) -> None:
        self.total_count += eg[COUNT]
        if eg[SCORE] > 0:  # cutline is 0
            self.qual_count += eg[COUNT]
        self.egroups.append(eg)

    def merge(self, o: Evals) -> None:
        self.qual_count += o.qual_count
        self.total_count += o.total_count
        if not self.egroups:
            self.keys = o.keys
        self.egroups.extend(o.egroups)

    def choose_best_k(self, k: int, descending: bool) -> bool:
        """Order the edge groups best-first and mark the first ones covering ``k`` units."""
        if k == 0 or k > self.qual_count:
            return False
        egs = self.egroups
        keys = self.keys
        self.keys = None
        if keys is not None and len(keys) == len(egs) and len(egs) > _PREFIX_MIN:
            i = _choose_prefix(egs, keys, k, descending)
        else:
            sort_egroups(egs, descending)
            i = 0
            left = k
            while left > 0:
                left -= egs[i][COUNT]
                i += 1
        self.best_k = k
        self.best_i = i
        return True


#: above this many edge groups with their scores at hand, only the chosen front is sorted
_PREFIX_MIN = 256


def _choose_prefix(egs: list[tuple], keys: Any, k: int, descending: bool) -> int:
    """Move the first groups of std::sort's order covering ``k`` units to the front; return how many.

    The groups behind them are left in an unspecified order (nothing reads
    past ``best_i``).  See :mod:`fluxlite.match._sortprefix`.
    """
    from fluxlite.match._sortprefix import std_sort_prefix_blocks

    front: list[int] = []
    left = k
    i = 0
    for block in std_sort_prefix_blocks(-keys if descending else keys):
        for j in block.tolist():
            front.append(j)
            if left > 0:
                left -= egs[j][COUNT]
                i += 1
        if left <= 0:
            break
    # a permutation of egs with ``front`` first: O(len(front))
    m = len(front)
    items = [egs[j] for j in front]
    taken = set(front)
    displaced = [egs[p] for p in range(m) if p not in taken]
    holes = [j for j in front if j >= m]
    for h, d in zip(holes, displaced, strict=True):
        egs[h] = d
    egs[:m] = items
    return i


def sort_egroups(egs: list[tuple], descending: bool) -> None:
    """Sort edge groups by score exactly as libstdc++'s std::sort would."""
    n = len(egs)
    if n < 2:
        return
    if n <= 16:
        # libstdc++ sorts up to 16 elements by insertion, which is stable -- so is Python's sort
        egs.sort(key=_score, reverse=descending)
        return
    scores = [eg[0] for eg in egs]
    if len(set(scores)) == n:
        # No ties: the sorted order is unique.  Ties with n <= 16: libstdc++
        # uses insertion sort, which is stable -- so is Python's sort.
        egs.sort(key=_score, reverse=descending)
        return
    # ties: libstdc++'s introsort order, replayed over the (negated when descending) scores
    std_sort_keyed([-s for s in scores] if descending else scores, egs)


#: an edge group's score (the sort key; itemgetter runs in C, a def per call would not)
_score = itemgetter(SCORE)


class Dfu:
    """The scoring API object of one vertex visit (Fluxion's ``scoring_api_t``).

    ``evals`` maps a resource type to its :class:`Evals`; ``overall_score``
    and ``avail`` are how a child passes its result up to the parent.
    """

    __slots__ = ("avail", "evals", "hier_constrain_now", "overall_score")

    def __init__(self) -> None:
        self.evals: dict[str, Evals] = {}
        self.hier_constrain_now = False
        self.overall_score = -1
        self.avail = 0

    def get(self, t: str) -> Evals:
        ev = self.evals.get(t)
        if ev is None:
            ev = self.evals[t] = Evals()
        return ev

    def add(self, t: str, eg: tuple) -> None:
        ev = self.evals.get(t)
        if ev is None:
            ev = self.evals[t] = Evals()
        ev.add(eg)

    def qualified_count(self, t: str) -> int:
        ev = self.evals.get(t)
        return 0 if ev is None else ev.qual_count

    def total_count(self, t: str) -> int:
        ev = self.evals.get(t)
        return 0 if ev is None else ev.total_count

    def merge(self, o: Dfu) -> None:
        for t, oev in o.evals.items():
            ev = self.evals.get(t)
            if ev is None:
                ev = self.evals[t] = Evals()
            ev.merge(oev)

    def choose_accum_best_k(self, t: str, k: int, descending: bool) -> None:
        ev = self.get(t)
        if ev.choose_best_k(k, descending):
            self.hier_constrain_now = True

    def choose_accum_all(self, t: str, descending: bool) -> None:
        ev = self.get(t)
        if ev.choose_best_k(ev.qual_count, descending):
            self.hier_constrain_now = True


# ---------------------------------------------------------------------------
# libstdc++ std::sort, step by step (bits/stl_algo.h, bits/stl_heap.h)

_THRESHOLD = 16


def std_sort(a: list[Any], comp: Callable[[Any, Any], bool]) -> None:
    """Sort ``a`` in place exactly as GNU libstdc++'s ``std::sort(begin, end, comp)``."""
    n = len(a)
    if n < 2:
        return
    _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), comp)
    _final_insertion_sort(a, 0, n, comp)


def _introsort_loop(a: list, first: int, last: int, depth: int, comp: Callable) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _partial_sort(a, first, last, last, comp)
            return
        depth -= 1
        cut = _unguarded_partition_pivot(a, first, last, comp)
        _introsort_loop(a, cut, last, depth, comp)
        last = cut


def _move_median_to_first(a: list, result: int, x: int, y: int, z: int, comp: Callable) -> None:
    if comp(a[x], a[y]):
        if comp(a[y], a[z]):
            a[result], a[y] = a[y], a[result]
        elif comp(a[x], a[z]):
            a[result], a[z] = a[z], a[result]
        else:
            a[result], a[x] = a[x], a[result]
    elif comp(a[x], a[z]):
        a[result], a[x] = a[x], a[result]
    elif comp(a[y], a[z]):
        a[result], a[z] = a[z], a[result]
    else:
        a[result], a[y] = a[y], a[result]


def _unguarded_partition(a: list, first: int, last: int, pivot: int, comp: Callable) -> int:
    while True:
        while comp(a[first], a[pivot]):
            first += 1
        last -= 1
        while comp(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _unguarded_partition_pivot(a: list, first: int, last: int, comp: Callable) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, comp)
    return _unguarded_partition(a, first + 1, last, first, comp)


def _insertion_sort(a: list, first: int, last: int, comp: Callable) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if comp(a[i], a[first]):
            val = a[i]
            a[first + 1 : i + 1] = a[first:i]
            a[first] = val
        else:
            _unguarded_linear_insert(a, i, comp)


def _unguarded_linear_insert(a: list, last: int, comp: Callable) -> None:
    val = a[last]
    nxt = last - 1
    while comp(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _final_insertion_sort(a: list, first: int, last: int, comp: Callable) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, comp)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, i, comp)
    else:
        _insertion_sort(a, first, last, comp)


def _adjust_heap(a: list, first: int, hole: int, length: int, value: Any, comp: Callable) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if comp(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    # __push_heap
    parent = (hole - 1) // 2
    while hole > top and comp(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _make_heap(a: list, first: int, last: int, comp: Callable) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        value = a[first + parent]
        _adjust_heap(a, first, parent, length, value, comp)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(a: list, first: int, last: int, result: int, comp: Callable) -> None:
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, comp)


def _partial_sort(a: list, first: int, middle: int, last: int, comp: Callable) -> None:
    _make_heap(a, first, middle, comp)
    for i in range(middle, last):
        if comp(a[i], a[first]):
            _pop_heap(a, first, middle, i, comp)
    # sort_heap
    while middle - first > 1:
        middle -= 1
        _pop_heap(a, first, middle, middle, comp)


# ---------------------------------------------------------------------------
# The same std::sort over plain keys compared with ``<`` (no comparator calls):
# every comparison gives what ``comp`` would, so every move is the same, and
# each move is applied to ``keys`` and ``items`` alike.


def std_sort_keyed(keys: list[Any], items: list[Any]) -> None:
    """Sort ``items`` as ``std_sort(items, comp)`` would when ``comp(x, y)`` is ``key(x) < key(y)``.

    ``keys[i]`` is the key of ``items[i]``; both lists are permuted in place.
    About 3x faster than :func:`std_sort` with a lambda comparator.
    """
    n = len(keys)
    if n < 2:
        return
    _k_introsort_loop(keys, items, 0, n, 2 * (n.bit_length() - 1))
    _k_final_insertion_sort(keys, items, 0, n)


def _k_introsort_loop(k: list, a: list, first: int, last: int, depth: int) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _k_partial_sort(k, a, first, last, last)
            return
        depth -= 1
        # _unguarded_partition_pivot: median of three to ``first``, then partition around it
        mid = first + (last - first) // 2
        x, y, z = first + 1, mid, last - 1
        if k[x] < k[y]:
            if k[y] < k[z]:
                m = y
            elif k[x] < k[z]:
                m = z
            else:
                m = x
        elif k[x] < k[z]:
            m = x
        elif k[y] < k[z]:
            m = z
        else:
            m = y
        k[first], k[m] = k[m], k[first]
        a[first], a[m] = a[m], a[first]
        pivot = k[first]  # the pivot slot is never swapped during the partition
        lo, hi = first + 1, last
        while True:
            while k[lo] < pivot:
                lo += 1
            hi -= 1
            while pivot < k[hi]:
                hi -= 1
            if not lo < hi:
                break
            k[lo], k[hi] = k[hi], k[lo]
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1
        _k_introsort_loop(k, a, lo, last, depth)
        last = lo


def _k_insertion_sort(k: list, a: list, first: int, last: int) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if k[i] < k[first]:
            kv, av = k[i], a[i]
            k[first + 1 : i + 1] = k[first:i]
            a[first + 1 : i + 1] = a[first:i]
            k[first], a[first] = kv, av
        else:
            _k_unguarded_linear_insert(k, a, i)


def _k_unguarded_linear_insert(k: list, a: list, last: int) -> None:
    kv, av = k[last], a[last]
    nxt = last - 1
    while kv < k[nxt]:
        k[last] = k[nxt]
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    k[last], a[last] = kv, av


def _k_final_insertion_sort(k: list, a: list, first: int, last: int) -> None:
    if last - first > _THRESHOLD:
        _k_insertion_sort(k, a, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):
            _k_unguarded_linear_insert(k, a, i)
    else:
        _k_insertion_sort(k, a, first, last)


def _k_adjust_heap(k: list, a: list, first: int, hole: int, length: int, kv: Any, av: Any) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if k[first + child] < k[first + child - 1]:
            child -= 1
        k[first + hole] = k[first + child]
        a[first + hole] = a[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        k[first + hole] = k[first + child - 1]
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and k[first + parent] < kv:
        k[first + hole] = k[first + parent]
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    k[first + hole] = kv
    a[first + hole] = av


def _k_pop_heap(k: list, a: list, first: int, last: int, result: int) -> None:
    kv, av = k[result], a[result]
    k[result], a[result] = k[first], a[first]
    _k_adjust_heap(k, a, first, 0, last - first, kv, av)


def _k_partial_sort(k: list, a: list, first: int, middle: int, last: int) -> None:
    length = middle - first
    if length >= 2:  # make_heap
        parent = (length - 2) // 2
        while True:
            _k_adjust_heap(k, a, first, parent, length, k[first + parent], a[first + parent])
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if k[i] < k[first]:
            _k_pop_heap(k, a, first, middle, i)
    while middle - first > 1:  # sort_heap
        middle -= 1
        _k_pop_heap(k, a, first, middle, middle)
