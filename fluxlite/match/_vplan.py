"""Per-vertex timelines: how much of one vertex is taken, and by which job, over time.

Every vertex has a pool of ``size`` units (1 for a core, 16 for a 16 GB memory
vertex).  Almost all vertices carry no span or a handful (one per job using
them), so a timeline here is a plain dict ``span_id -> (start, end, amount)``
and queries scan it: O(k) for k spans, with no per-vertex object at all for
a vertex that was never allocated (the common case costs nothing).

This is the "schedule" of Fluxion's resource vertices; the subtree aggregates
(pruning filters), which do see many spans, use the full planner in
:mod:`fluxlite.planner`.
"""

from __future__ import annotations

__all__ = ["avail_during", "overlaps"]


def avail_during(spans: dict[int, tuple[int, int, int]] | None, size: int, at: int, duration: int) -> int:
    """Minimum number of free units over ``[at, at + duration)``.  O(k^2) for k spans, k tiny."""
    if not spans:
        return size
    end = at + duration
    if len(spans) == 1:  # the usual case: one job's span
        for s, e, a in spans.values():
            return size - a if s < end and e > at else size
    # Usage is piecewise constant; its maximum over the window is reached at
    # ``at`` or at the start of a span inside the window.
    live = [(s, e, a) for (s, e, a) in spans.values() if s < end and e > at]
    if not live:
        return size
    if len(live) == 1:
        return size - live[0][2]
    if len(live) == 2:
        # intervals that meet the window and each other share a point inside it (Helly, 1-D)
        (s1, e1, a1), (s2, e2, a2) = live
        return size - (a1 + a2 if s1 < e2 and s2 < e1 else (a1 if a1 > a2 else a2))
    worst = 0
    for t in {at, *(s for s, _, _ in live if s > at)}:
        used = 0
        for s, e, a in live:
            if s <= t < e:
                used += a
        if used > worst:
            worst = used
    return size - worst


def overlaps(spans: dict[int, tuple[int, int]] | None, at: int, duration: int) -> bool:
    """True if any ``(start, end)`` in ``spans`` intersects ``[at, at + duration)``.  O(k)."""
    if not spans:
        return False
    end = at + duration
    for s, e in spans.values():
        if s < end and e > at:
            return True
    return False
