"""libstdc++'s ``std::sort`` replayed step by step (bits/stl_algo.h, bits/stl_heap.h).

Fluxion orders edge groups with ``std::sort`` (introsort, not stable): among equal scores the
winner is whatever introsort leaves in front, so fluxlite repeats every comparison and move.
:func:`std_sort` takes a comparator; :func:`std_sort_keyed` does the same moves on plain keys
compared with ``<``; ``_partial_sort`` is the heap sort introsort falls back on (also used by
:mod:`fluxlite.match._sortprefix`).  Nothing here knows about scoring: :mod:`fluxlite.match._scoring`
and :mod:`fluxlite.match._sortprefix` both build on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["std_sort", "std_sort_keyed"]

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
