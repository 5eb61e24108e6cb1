"""The first elements of libstdc++'s ``std::sort`` order, without sorting the rest.

Fluxion picks the best ``k`` edge groups of a type by sorting *all* of them
with ``std::sort`` (introsort, not stable), so among equal scores the winner
is whatever introsort leaves in front.  :func:`fluxlite.match._scoring.std_sort`
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

from collections.abc import Iterator

import numpy as np

from fluxlite.match._scoring import _partial_sort

__all__ = ["std_sort_prefix_blocks"]

_THRESHOLD = 16


def std_sort_prefix_blocks(keys: np.ndarray) -> Iterator[np.ndarray]:
    """Positions of ``keys`` in ``std::sort(keys, <)`` order, yielded front to back in blocks.

    Concatenated, the blocks are the whole permutation; stop iterating once
    enough elements have been seen.  ``keys`` is not modified.
    """
    n = len(keys)
    arr = np.array(keys, dtype=np.int64, copy=True)
    idx = np.arange(n, dtype=np.int64)
    if n < 2:
        yield idx
        return
    yield from _blocks(arr, idx, 0, n, 2 * (n.bit_length() - 1))


def _blocks(arr: np.ndarray, idx: np.ndarray, first: int, last: int, depth: int) -> Iterator[np.ndarray]:
    while last - first > _THRESHOLD:
        if depth == 0:
            pairs = list(zip(arr[first:last].tolist(), idx[first:last].tolist(), strict=True))
            m = len(pairs)
            _partial_sort(pairs, 0, m, m, lambda a, b: a[0] < b[0])
            yield np.asarray([p[1] for p in pairs], dtype=np.int64)
            return
        depth -= 1
        cut = _partition_pivot(arr, idx, first, last)
        # introsort recurses on [cut, last) and loops on [first, cut); the two
        # are independent, so the front range is produced first here
        yield from _blocks(arr, idx, first, cut, depth)
        first = cut
    seg = arr[first:last]
    yield idx[first:last][np.argsort(seg, kind="stable")]


def _swap(arr: np.ndarray, idx: np.ndarray, i: int, j: int) -> None:
    arr[i], arr[j] = arr[j], arr[i]
    idx[i], idx[j] = idx[j], idx[i]


def _partition_pivot(arr: np.ndarray, idx: np.ndarray, first: int, last: int) -> int:
    """libstdc++ ``__unguarded_partition_pivot`` on ``[first, last)``; returns the cut."""
    mid = first + (last - first) // 2
    # __move_median_to_first(first, first + 1, mid, last - 1)
    x, y, z = first + 1, mid, last - 1
    ax, ay, az = int(arr[x]), int(arr[y]), int(arr[z])
    if ax < ay:
        if ay < az:
            _swap(arr, idx, first, y)
        elif ax < az:
            _swap(arr, idx, first, z)
        else:
            _swap(arr, idx, first, x)
    elif ax < az:
        _swap(arr, idx, first, x)
    elif ay < az:
        _swap(arr, idx, first, z)
    else:
        _swap(arr, idx, first, y)
    p = arr[first]
    lo = first + 1
    seg = arr[lo:last]
    left = np.flatnonzero(seg >= p) + lo  # where the left scan stops: not below the pivot
    right = (np.flatnonzero(seg <= p) + lo)[::-1]  # where the right scan stops: not above it
    k = min(len(left), len(right))
    cross = np.flatnonzero(left[:k] >= right[:k])
    m = int(cross[0]) if len(cross) else k
    if m:
        ls, rs = left[:m], right[:m]
        tmp = arr[ls]
        arr[ls] = arr[rs]
        arr[rs] = tmp
        tmp = idx[ls]
        idx[ls] = idx[rs]
        idx[rs] = tmp
    # after m swaps the left scan stops at the next original stopper, or at
    # the leftmost position the right scan filled (it holds a stopper)
    if m == 0:
        return int(left[0])
    if m < len(left) and left[m] < right[m - 1]:
        return int(left[m])
    return int(right[m - 1])
