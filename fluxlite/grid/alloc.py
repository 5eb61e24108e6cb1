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
  region holds fewer than ``k`` nodes must run out, and one whose region is
  big enough never does, so each region is measured once (breadth-first)
  and skipped without growing when too small (the same result, found faster).  The greedy partition is then
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

__all__ = [
    "ABLATION_ALLOCATORS",
    "ALLOCATORS",
    "choose_count",
    "choose_hilbert",
    "choose_manhattan",
    "free_regions",
]


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


def _region(gi: GridInfo, fl: list[bool], seen: bytearray, s: int) -> int:
    """Mark the free region of ``s`` in ``seen``; return its size.  O(region)."""
    nb = gi.neighbours
    seen[s] = 1
    stack = [s]
    size = 0
    while stack:
        u = stack.pop()
        size += 1
        for w in nb(u):
            if fl[w] and not seen[w]:
                seen[w] = 1
                stack.append(w)
    return size


def free_regions(gi: GridInfo, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label the connected regions of free nodes: (label per node, -1 if busy; size per label).  O(n)."""
    fl = free.tolist()
    label = [-1] * gi.n
    sizes: list[int] = []
    nb = gi.neighbours
    for s in range(gi.n):
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
    return np.array(label, dtype=np.int64), np.array(sizes, dtype=np.int64)


def grow_compact(
    gi: GridInfo, free: np.ndarray, start: int, k: int, strict: bool = False
) -> list[int] | None:
    """The greedy compact partition of ``k`` free nodes grown from ``start``; None when it runs out.

    Candidates are the free neighbours of the partition; each carries its sum
    of distances to the partition (and of squared distances, the tie-break),
    updated as nodes join.  O(k x border) scalar steps.  ``strict``: every
    neighbour is a candidate, free or not, and the growth fails as soon as the
    best one is busy (the growth of figure 8, lines 10-18, read literally).
    """
    dist, dist2 = gi.dist_rows, gi.dist2_rows
    nb = gi.neighbours
    fl = free.tolist()
    part = [start]
    taken = {start}
    # every node's sums of distances to the partition so far (a node becoming a candidate
    # reads its sums here instead of adding them up over the partition)
    dsum = gi.dist[start].copy()
    d2sum = gi.dist2[start].copy()
    #: candidate -> [sum of distances to the partition, sum of squared distances]
    cand: dict[int, list[int]] = {}
    for w in nb(start):
        if strict or fl[w]:
            cand[w] = [dist[start][w], dist2[start][w]]
    while len(part) < k:
        if not cand:
            return None
        best = min(cand, key=lambda c: (cand[c][0], cand[c][1], c))
        if strict and not fl[best]:
            return None
        del cand[best]
        part.append(best)
        taken.add(best)
        drow, d2row = dist[best], dist2[best]
        for c, acc in cand.items():
            acc[0] += drow[c]
            acc[1] += d2row[c]
        dsum += gi.dist[best]
        d2sum += gi.dist2[best]
        for w in nb(best):
            if (strict or fl[w]) and w not in taken and w not in cand:
                cand[w] = [int(dsum[w]), int(d2sum[w])]
    return part


def improve_compact(
    gi: GridInfo, free: np.ndarray, part: list[int], max_moves: int | None = None
) -> list[int]:
    """Local search: move single nodes to free spots while the total distance drops and the partition stays connected."""
    part = list(part)
    if len(part) < 2:
        return part
    n = gi.n
    inp = np.zeros(n + 1, dtype=bool)
    inp[part] = True
    freex = np.zeros(n + 1, dtype=bool)
    freex[:n] = free
    nbm = gi.nbr_matrix
    dist = gi.dist
    moves = max_moves if max_moves is not None else 4 * len(part)
    dsum = dist[part].sum(axis=0)
    for _ in range(moves):
        # candidate spots: free, outside, next to the partition
        near = np.zeros(n + 1, dtype=bool)
        near[nbm[part].ravel()] = True
        cand = np.flatnonzero(near & freex & ~inp)
        if len(cand) == 0:
            break
        pa = np.array(part, dtype=np.int64)
        delta = dsum[cand][None, :] - dist[np.ix_(pa, cand)] - dsum[pa][:, None]
        if delta.min() >= 0:
            break
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


def choose_manhattan(gi: GridInfo, free: np.ndarray, k: int, polish: bool = True) -> list[int] | None:
    """Greedy compact partition of ``k`` free nodes (see the module docstring); or None.

    ``polish=False``: no local search after the growth (an ablation).
    """
    if k <= 0 or int(free.sum()) < k:
        return None
    fl = free.tolist()
    seen = bytearray(gi.n)
    got = None
    # first nodes in machine order; every node of a region smaller than k would
    # run out of free neighbours, so one look at each region decides it
    for start in range(gi.n):
        if not fl[start] or seen[start]:
            continue
        if k == 1:
            return [start]
        if _region(gi, fl, seen, start) < k:
            continue
        got = grow_compact(gi, free, start, k)
        if got is not None:
            break
    if got is None:
        return None
    # two or three nodes of a mesh: the greedy choice is already optimal (not
    # on a torus, where a short ring of three is more compact than an L)
    if not polish or k <= 2 or (k == 3 and not gi.torus):
        return got
    return improve_compact(gi, free, got)


def choose_manhattan_strict(gi: GridInfo, free: np.ndarray, k: int) -> list[int] | None:
    """An ablation of :func:`choose_manhattan`: the literal reading of the journal's figure 8.

    The journal's text (section 3.2) says the free neighbours are found first and the one that
    increases the total Manhattan distance least joins the partition; its pseudocode (figure 8,
    lines 10-18) selects the distance-minimal neighbours first and ends the growth when a
    selected one is not free.  This chooser follows the pseudocode for the growth (so a
    partition must take the most compact shape around its first node, or fail there) and the
    text for the first nodes (each free node in machine order is tried).  No local search.
    """
    if k <= 0 or int(free.sum()) < k:
        return None
    for start in np.flatnonzero(free).tolist():
        got = [start] if k == 1 else grow_compact(gi, free, start, k, strict=True)
        if got is not None:
            return got
    return None


def choose_manhattan_first_seed(
    gi: GridInfo, free: np.ndarray, k: int, strict: bool = False
) -> list[int] | None:
    """An ablation of :func:`choose_manhattan`: one first node per time interval (figure 8, lines 19-23).

    The journal's text (section 3.2) tries the next nodes as new first nodes when the growth
    fails; its pseudocode instead releases the partition and takes the next valid time interval
    (lines 21-23), so only the first free node in machine order (lines 4-9) is ever a first
    node.  This chooser grows from that node only (the text's growth through free neighbours, or
    with ``strict`` the pseudocode's lines 10-18), with no local search (the paper has none), and
    returns None when it runs out, so the simulator moves on to the next start time.
    """
    if k <= 0 or int(free.sum()) < k:
        return None
    start = int(np.flatnonzero(free)[0])
    return [start] if k == 1 else grow_compact(gi, free, start, k, strict=strict)


def choose_manhattan_strict_first_seed(gi: GridInfo, free: np.ndarray, k: int) -> list[int] | None:
    """Figure 8's pseudocode read literally throughout: strict growth from the first free node only."""
    return choose_manhattan_first_seed(gi, free, k, strict=True)


def choose_manhattan_no_polish(gi: GridInfo, free: np.ndarray, k: int) -> list[int] | None:
    """An ablation of :func:`choose_manhattan` without its local search (the paper describes none)."""
    return choose_manhattan(gi, free, k, polish=False)


#: policy name -> chooser(grid, free mask, k) -> grid indices or None
ALLOCATORS: dict[str, Callable[[GridInfo, np.ndarray, int], list[int] | None]] = {
    "hilbert": choose_hilbert,
    "manhattan": choose_manhattan,
    "count": choose_count,
}
#: choosers for ablations only (``GridOps.allocate_deadline(policy=...)``; not match policies)
ABLATION_ALLOCATORS: dict[str, Callable[[GridInfo, np.ndarray, int], list[int] | None]] = {
    "manhattan-strict": choose_manhattan_strict,
    "manhattan-first-seed": choose_manhattan_first_seed,
    "manhattan-strict-first-seed": choose_manhattan_strict_first_seed,
    "manhattan-no-polish": choose_manhattan_no_polish,
}
