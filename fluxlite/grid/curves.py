"""Orders of the cells of a W x H grid: a generalized Hilbert curve and a snake.

:func:`hilbert_order` follows the recursive "generalized Hilbert" construction
for arbitrary rectangles (the idea of the ``gilbert`` algorithm): split the
rectangle along its major axis into two halves, or into three blocks (a
half-height block, the long remainder, and a mirrored block) so that every
block starts where the previous one ended and the walk stays a path of unit
steps.  Odd lengths are avoided at the splits so that each block's end sits
on a cell of the right parity.  A rectangle whose side along the curve's
direction has the wrong parity would need one diagonal step; the curve is
then laid along the other side, which always has the right parity when the
grid has an even number of cells, and both orientations work when it is odd.
:func:`snake_order` is the boustrophedon scan (row by row, alternating
direction).  Both return cell indices ``y * width + x``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator

import numpy as np

__all__ = ["hilbert_cells", "hilbert_order", "is_unit_path", "snake_order"]


def _sgn(v: int) -> int:
    return (v > 0) - (v < 0)


def _walk(x: int, y: int, ax: int, ay: int, bx: int, by: int) -> Iterator[tuple[int, int]]:
    """Cells of the block at (x, y) with major axis (ax, ay) and minor axis (bx, by)."""
    w = abs(ax + ay)
    h = abs(bx + by)
    dax, day = _sgn(ax), _sgn(ay)
    dbx, dby = _sgn(bx), _sgn(by)
    if h == 1:
        for _ in range(w):
            yield x, y
            x, y = x + dax, y + day
        return
    if w == 1:
        for _ in range(h):
            yield x, y
            x, y = x + dbx, y + dby
        return
    ax2, ay2 = ax // 2, ay // 2
    bx2, by2 = bx // 2, by // 2
    w2 = abs(ax2 + ay2)
    h2 = abs(bx2 + by2)
    if 2 * w > 3 * h:
        # long block: two halves along the major axis
        if w2 % 2 and w > 2:
            ax2, ay2 = ax2 + dax, ay2 + day
        yield from _walk(x, y, ax2, ay2, bx, by)
        yield from _walk(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by)
    else:
        # up along the minor axis, across, and back down
        if h2 % 2 and h > 2:
            bx2, by2 = bx2 + dbx, by2 + dby
        yield from _walk(x, y, bx2, by2, ax2, ay2)
        yield from _walk(x + bx2, y + by2, ax, ay, bx - bx2, by - by2)
        yield from _walk(
            x + (ax - dax) + (bx2 - dbx),
            y + (ay - day) + (by2 - dby),
            -bx2,
            -by2,
            -(ax - ax2),
            -(ay - ay2),
        )


def is_unit_path(cells: list[tuple[int, int]]) -> bool:
    """True if consecutive cells are grid neighbours (one unit step apart)."""
    return all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in itertools.pairwise(cells))


def hilbert_cells(width: int, height: int) -> list[tuple[int, int]]:
    """The (x, y) cells of a ``width`` x ``height`` grid along a generalized Hilbert curve.

    Every cell appears once and consecutive cells are neighbours.  O(W * H).
    """
    if width < 1 or height < 1:
        raise ValueError(f"grid sides must be positive, got {width}x{height}")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        # the longer side first (rounder blocks), then the other orientation
        tries = [(width, 0, 0, height), (0, height, width, 0)]
        if height > width:
            tries.reverse()
        best: list[tuple[int, int]] = []
        for ax, ay, bx, by in tries:
            cells = list(_walk(0, 0, ax, ay, bx, by))
            if is_unit_path(cells):
                return cells
            best = best or cells
        # not reached for any grid we know of; fall back on the snake
        return [(i % width, i // width) for i in snake_order(width, height)]
    finally:
        sys.setrecursionlimit(limit)


def hilbert_order(width: int, height: int) -> np.ndarray:
    """Cell indices ``y * width + x`` along :func:`hilbert_cells`."""
    return np.array([y * width + x for x, y in hilbert_cells(width, height)], dtype=np.int64)


def snake_order(width: int, height: int) -> np.ndarray:
    """Cell indices row by row, left to right on even rows and right to left on odd rows."""
    out = []
    for y in range(height):
        xs = range(width) if y % 2 == 0 else range(width - 1, -1, -1)
        out.extend(y * width + x for x in xs)
    return np.array(out, dtype=np.int64)
