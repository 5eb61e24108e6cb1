"""The first elements of libstdc++'s ``std::sort`` order, without sorting the rest.

Fluxion picks the best ``k`` edge groups of a type by sorting *all* of them
with ``std::sort`` (introsort, not stable), so among equal scores the winner
is whatever introsort leaves in front.  :func:`fluxlite.match._stdsort.std_sort`
replays that algorithm element by element, which costs O(n log n) Python
steps -- hundreds of milliseconds for the 32,768 socket slots of a
16,384-node graph, when only the first one or two are wanted.

:func:`std_sort_prefix` gives the same leading elements exactly, in O(n)
numpy work:

- introsort's partitions are disjoint, so the elements that end up in
  front depend only on the partitions of the ranges that contain the front
  (the leftmost chain), never on how the ranges to their right are sorted;
- one ``__unguarded_partition`` (Hoare, pivot moved to the front by
  median-of-three) is computed at once: its k-th swap exchanges the k-th
  element from the left that is not below the pivot with the k-th element
  from the right that is not above it, for as long as the first lies left
  of the second;
- the final insertion sort moves an element only past strictly greater
  ones, and every element left of a partition boundary is at most every
  element right of it, so it sorts each leaf range (<= 16 elements) stably
  and never across ranges;
- a range that exhausts the depth limit is heap-sorted by the same
  ``__partial_sort`` replay as the full version.

Keys are compared with ``<`` (ascending); pass negated scores for a
descending comparator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from fluxlite.match._stdsort import _partial_sort

__all__ = ["std_sort_prefix_blocks"]

_THRESHOLD = 16


def std_sort_prefix_blocks(keys: np.ndarray) -> Iterator[np.ndarray]:
    """Positions of ``keys`` in ``std::sort(keys, <)`` order, yielded front to back in blocks.

    Concatenated, the blocks are the whole permutation; stop iterating once
    enough elements have been seen (the ranges behind the front are then
    never rearranged).  ``keys`` is not modified.
    """
    n = len(keys)
    arr = np.array(keys, dtype=np.int64, copy=True)
    idx = np.arange(n, dtype=np.int64)
    if n < 2:
        yield idx
        return
    yield from _blocks(arr, idx, 2 * (n.bit_length() - 1))


def _blocks(arr: np.ndarray, idx: np.ndarray, depth: int) -> Iterator[np.ndarray]:
    """introsort_loop over one range held as its own (keys, positions) arrays."""
    while len(arr) > _THRESHOLD:
        if arr[0] == arr.min() == arr.max():
            yield from _equal_blocks(idx, int(arr[0]), 0, 1, 0, len(arr), depth)
            return
        if depth == 0:
            pairs = list(zip(arr.tolist(), idx.tolist(), strict=True))
            m = len(pairs)
            _partial_sort(pairs, 0, m, m, lambda a, b: a[0] < b[0])
            yield np.asarray([p[1] for p in pairs], dtype=np.int64)
            return
        depth -= 1
        larr, lidx, right = _partition_pivot(arr, idx)
        # introsort recurses on [cut, last) and loops on [first, cut); the two
        # are independent, so the front range is produced first here, and
        # the back range is only built when the consumer gets that far
        yield from _blocks(larr, lidx, depth)
        arr, idx = right()
    yield idx[np.argsort(arr, kind="stable")]


def _equal_blocks(
    base: np.ndarray, key: int, s: int, a: int, b: int, n: int, depth: int
) -> Iterator[np.ndarray]:
    """introsort_loop over ``n`` equal keys whose position i holds ``base[h(i)]``.

    ``h(0) = s`` and ``h(i) = a * i + b`` for i >= 1.  On equal keys every
    comparison is false, so each partition is fixed: the median-of-three
    swaps the front with the middle (``n // 2``), and the Hoare scans swap
    position ``i`` with ``n - i`` for ``1 <= i <= (n - 1) // 2``, cutting at
    ``(n + 1) // 2``.  The front part's map stays of the same form, so a
    level costs O(1); the back part is built only when it is reached.
    """
    while n > _THRESHOLD:
        if depth == 0:
            pos = np.arange(n, dtype=np.int64) * a + b
            pos[0] = s
            yield from _blocks(np.full(n, key, dtype=np.int64), base[pos], 0)
            return
        depth -= 1
        mid = n // 2
        cut = (n + 1) // 2
        m = (n - 1) // 2
        yield from _equal_blocks(base, key, a * mid + b, -a, a * n + b, cut, depth)
        # the back part [cut, n): position i holds what the partition moved there
        i = np.arange(cut, n, dtype=np.int64)
        j = np.where(i >= n - m, n - i, i)  # where its value was after the median swap (j >= 1)
        src = j * a + b
        src[j == mid] = s  # the median swap put the front's value at mid
        yield from _blocks(np.full(n - cut, key, dtype=np.int64), base[src], depth)
        return
    pos = np.arange(n, dtype=np.int64) * a + b
    if n:
        pos[0] = s
    yield base[pos]


def _swap(arr: np.ndarray, idx: np.ndarray, i: int, j: int) -> None:
    arr[i], arr[j] = arr[j], arr[i]
    idx[i], idx[j] = idx[j], idx[i]


def _partition_pivot(arr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, Callable[[], tuple]]:
    """libstdc++ ``__unguarded_partition_pivot`` on a whole range.

    Returns the front part's (keys, positions) after the partition and a
    function giving the back part's.  ``arr``/``idx`` get the median-of-three
    swap and are otherwise left as they were (the back part is computed from
    them).
    """
    last = len(arr)
    mid = last // 2
    # __move_median_to_first(first, first + 1, mid, last - 1)
    x, y, z = 1, mid, last - 1
    ax, ay, az = int(arr[x]), int(arr[y]), int(arr[z])
    if ax < ay:
        if ay < az:
            _swap(arr, idx, 0, y)
        elif ax < az:
            _swap(arr, idx, 0, z)
        else:
            _swap(arr, idx, 0, x)
    elif ax < az:
        _swap(arr, idx, 0, x)
    elif ay < az:
        _swap(arr, idx, 0, z)
    else:
        _swap(arr, idx, 0, y)
    p = arr[0]
    seg = arr[1:]
    left = np.nonzero(seg >= p)[0] + 1  # where the left scan stops: not below the pivot
    right = (np.nonzero(seg <= p)[0] + 1)[::-1]  # where the right scan stops: not above it
    # the k-th swap pairs left[k] and right[k] while left[k] < right[k] (left
    # ascends, right descends: the swapping k form a prefix, found by bisection)
    lo, hi = 0, min(len(left), len(right))
    while lo < hi:
        j = (lo + hi) // 2
        if left[j] < right[j]:
            lo = j + 1
        else:
            hi = j
    m = lo
    # after m swaps the left scan stops at the next original stopper, or at
    # the leftmost position the right scan filled (it holds a stopper)
    if m == 0:
        cut = int(left[0])
    elif m < len(left) and left[m] < right[m - 1]:
        cut = int(left[m])
    else:
        cut = int(right[m - 1])
    ls, rs = left[:m], right[:m]  # every ls is before the cut, every rs at or after it
    larr = arr[:cut].copy()
    lidx = idx[:cut].copy()
    if m:
        larr[ls] = arr[rs]
        lidx[ls] = idx[rs]

    def back() -> tuple[np.ndarray, np.ndarray]:
        rarr = arr[cut:].copy()
        ridx = idx[cut:].copy()
        if m:
            rarr[rs - cut] = arr[ls]
            ridx[rs - cut] = idx[ls]
        return rarr, ridx

    return larr, lidx, back
