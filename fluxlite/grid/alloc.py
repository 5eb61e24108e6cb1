"""Static grid allocators: choose ``k`` whole nodes among the free ones.

Pure functions over a boolean mask of free nodes (grid index -> free over the
job's window); :mod:`fluxlite.grid.ops` builds the mask from the engine's
state and hands the chosen nodes to the engine.

- :func:`choose_hilbert`: Slurm's approach -- the first run of ``k``
  consecutive positions of the generalized Hilbert curve whose nodes are
  all free.
- :func:`choose_manhattan`: a greedy compact partition ("Manhattan median"):
  from the first free node in machine order, repeatedly add the free
  neighbour of the partition that increases its total pairwise Manhattan
  distance least (ties: the smaller sum of squared Euclidean distances, a
  rounder shape; then the lower index); when the free neighbours run out,
  restart from the next first node.  A first node whose free connected
  region holds fewer than ``k`` nodes must run out, so it is skipped without
  growing (the same result, found faster).  The greedy partition is then
  polished by local search: a node of the partition moves to a free node
  next to it when that lowers the total distance and keeps the partition
  connected (greedy growth alone is myopic: from a corner it can end a few
  hops worse than a Hilbert run of the same size).
- :func:`choose_count`: the baseline, the first ``k`` free nodes in machine order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fluxlite.grid.machine import GridInfo

__all__ = ["ALLOCATORS", "choose_count", "choose_hilbert", "choose_manhattan", "free_regions"]


def choose_hilbert(gi: GridInfo, free: np.ndarray, k: int) -> list[int] | None:
    """First fit of ``k`` consecutive free Hilbert-curve positions; grid indices, or None."""
    if k <= 0 or k > gi.n:
        return None
    f = free[gi.hilbert_order]
    c = np.concatenate(([0], np.cumsum(f, dtype=np.int64)))
    ok = np.flatnonzero(c[k:] - c[:-k] == k)
    if len(ok) == 0:
        return None
    i = int(ok[0])
    return [int(v) for v in gi.hilbert_order[i : i + k]]


def choose_count(gi: GridInfo, free: np.ndarray, k: int) -> list[int] | None:
    """The first ``k`` free nodes in machine order (no shape); or None."""
    idx = np.flatnonzero(free)
    if k <= 0 or len(idx) < k:
        return None
    return [int(v) for v in idx[:k]]


def free_regions(gi: GridInfo, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label the connected regions of free nodes: (label per node, -1 if busy; size per label)."""
    n = gi.n
    label = np.full(n, -1, dtype=np.int64)
    sizes: list[int] = []
    nb = gi.neighbours
    fl = free.tolist()
    for s in range(n):
        if not fl[s] or label[s] >= 0:
            continue
        lab = len(sizes)
        label[s] = lab
        stack = [s]
        size = 0
        while stack:
            u = stack.pop()
            size += 1
            for w in nb(u):
                if fl[w] and label[w] < 0:
                    label[w] = lab
                    stack.append(w)
        sizes.append(size)
    return label, np.array(sizes, dtype=np.int64)


def grow_compact(gi: GridInfo, free: np.ndarray, start: int, k: int) -> list[int] | None:
    """The greedy compact partition of ``k`` free nodes grown from ``start``; None when it runs out."""
    part = [start]
    inpart = np.zeros(gi.n, dtype=bool)
    inpart[start] = True
    dsum = gi.dist[start].copy()
    d2sum = gi.dist2[start].copy()
    cand = np.zeros(gi.n, dtype=bool)
    nb = gi.neighbours
    for w in nb(start):
        if free[w]:
            cand[w] = True
    big = int(gi.n) * int(gi.dist2.max() + 1) + 1
    order_key = np.arange(gi.n, dtype=np.int64)
    while len(part) < k:
        idx = np.flatnonzero(cand)
        if len(idx) == 0:
            return None
        key = (dsum[idx] * big + d2sum[idx]) * gi.n + order_key[idx]
        best = int(idx[int(np.argmin(key))])
        part.append(best)
        inpart[best] = True
        cand[best] = False
        dsum += gi.dist[best]
        d2sum += gi.dist2[best]
        for w in nb(best):
            if free[w] and not inpart[w]:
                cand[w] = True
    return part


def improve_compact(
    gi: GridInfo, free: np.ndarray, part: list[int], max_moves: int | None = None
) -> list[int]:
    """Local search: move single nodes to free spots while the total distance drops and the partition stays connected."""
    part = list(part)
    if len(part) < 2:
        return part
    inp = np.zeros(gi.n, dtype=bool)
    inp[part] = True
    dist = gi.dist
    moves = max_moves if max_moves is not None else 4 * len(part)
    dsum = dist[part].sum(axis=0)
    for _ in range(moves):
        # candidate spots: free, outside, next to the partition
        near = np.zeros(gi.n, dtype=bool)
        for u in part:
            near[list(gi.neighbours(u))] = True
        cand = np.flatnonzero(near & free & ~inp)
        if len(cand) == 0:
            break
        pa = np.array(part, dtype=np.int64)
        delta = dsum[cand][None, :] - dist[np.ix_(pa, cand)] - dsum[pa][:, None]
        flat = np.argsort(delta, axis=None, kind="stable")
        moved = False
        ncand = len(cand)
        for f in flat[:32].tolist():
            i, j = divmod(f, ncand)
            if delta[i, j] >= 0:
                break
            a, b = int(pa[i]), int(cand[j])
            trial = [x for x in part if x != a]
            trial.append(b)
            if gi.connected(trial):
                part = trial
                inp[a] = False
                inp[b] = True
                dsum += dist[b] - dist[a]
                moved = True
                break
        if not moved:
            break
    return part


def choose_manhattan(gi: GridInfo, free: np.ndarray, k: int) -> list[int] | None:
    """Greedy compact partition of ``k`` free nodes (see the module docstring); or None."""
    if k <= 0 or int(free.sum()) < k:
        return None
    if k == 1:
        return [int(np.flatnonzero(free)[0])]
    label, sizes = free_regions(gi, free)
    big = np.flatnonzero(sizes >= k)
    if len(big) == 0:
        return None
    ok = np.isin(label, big)
    for start in np.flatnonzero(ok):
        got = grow_compact(gi, free, int(start), k)
        if got is not None:
            return improve_compact(gi, free, got)
    return None


#: policy name -> chooser(grid, free mask, k) -> grid indices or None
ALLOCATORS: dict[str, Callable[[GridInfo, np.ndarray, int], list[int] | None]] = {
    "hilbert": choose_hilbert,
    "manhattan": choose_manhattan,
    "count": choose_count,
}
