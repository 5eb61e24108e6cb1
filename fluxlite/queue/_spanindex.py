"""Sorted span starts and ends of bare whole nodes, for the length of one scheduling pass.

A conservative pass re-places every pending job, and each placement asks,
for every node, "is it free during ``[at, at + wall)``, and when does it
free up before ``at``?" (:meth:`Queue._reservable_nodes`).  The engine keeps
a node's spans as a dict (``Traverser.vspans`` / ``xspans``), so answering
from it is O(spans of the node): with thousands of reservations held, each
node carries hundreds of spans and the scan grows with the queue depth.

This index answers both from two sorted lists per node (the starts and the
ends of every span of the node, whatever its amount, as the scan reads
them), O(log spans):

* some span meets ``[at, end)`` iff more spans start before ``end`` than end
  by ``at`` (every span that ends by ``at`` also starts before ``end``);
* when none does, the spans that start before ``at`` are the ones that end
  by ``at``, so the node frees up at the last end ``<= at`` (or is idle).

It is not a copy of allocation state the queue keeps: it lives for one pass
(opened by the pass's third node scan, so an EASY pass keeps the plain
scan; closed when :meth:`Queue.schedule` returns), is built per node from the
engine's own dicts on first use, and follows only the queue's own engine
calls in that pass (the job's spans on its nodes, read from the engine
before and after each call).  A node whose span count no longer matches the
engine's is rebuilt from the engine before it is read, so a change the
queue did not make cannot be missed unless it added and removed spans of
the same node in between.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from operator import itemgetter
from typing import Any

__all__ = ["SpanIndex"]

_first = itemgetter(0)
_second = itemgetter(1)


class SpanIndex:
    """Per bare node: (sorted starts, sorted ends) of its spans in ``vspans`` and ``xspans``."""

    __slots__ = ("_nodes", "_tr")

    def __init__(self, traverser: Any) -> None:
        self._tr = traverser
        self._nodes: dict[int, tuple[list[int], list[int]]] = {}

    def _count(self, v: int) -> int:
        tr = self._tr
        a, b = tr.vspans[v], tr.xspans[v]
        return (len(a) if a else 0) + (len(b) if b else 0)

    def _build(self, v: int) -> tuple[list[int], list[int]]:
        tr = self._tr
        a, b = tr.vspans[v], tr.xspans[v]
        starts: list[int] = []
        ends: list[int] = []
        for d in (a, b):
            if d:
                vals = d.values()
                starts.extend(map(_first, vals))
                ends.extend(map(_second, vals))
        starts.sort()
        ends.sort()
        got = self._nodes[v] = (starts, ends)
        return got

    def lists(self, v: int) -> tuple[list[int], list[int]]:
        """The node's (starts, ends), rebuilt from the engine if its span count changed."""
        got = self._nodes.get(v)
        if got is None or len(got[0]) != self._count(v):
            return self._build(v)
        return got

    def free_from(self, v: int, now: int, at: int, end: int) -> int | None:
        """None if a span of ``v`` meets ``[at, end)``; else when ``v`` frees up (``now`` if idle since ``now``)."""
        starts, ends = self.lists(v)
        k = bisect_right(ends, at)
        if bisect_left(starts, end) > k:
            return None
        if k and ends[k - 1] > now:
            return ends[k - 1]
        return now

    # ------------------------------------------------------------------ following the queue's changes
    def job_windows(self, jobid: int) -> dict[int, list[tuple[int, int]]]:
        """The windows of ``jobid``'s spans on every indexed node it holds (read before the engine changes it)."""
        nodes = self._nodes
        if not nodes:
            return {}
        tr = self._tr
        out: dict[int, list[tuple[int, int]]] = {}
        for v in tr.job_vertices(jobid):
            if v not in nodes:
                continue
            w: list[tuple[int, int]] = []
            xs = tr.xspans[v]
            if xs and jobid in xs:
                x = xs[jobid]
                w.append((x[0], x[1]))
            sp = tr.vspans[v]
            if sp:
                for col in (tr.allocs, tr.resvs):
                    m = col[v]
                    if m and jobid in m:
                        s = sp.get(m[jobid])
                        if s is not None:
                            w.append((s[0], s[1]))
            out[v] = w
        return out

    def changed(self, jobid: int, before: dict[int, list[tuple[int, int]]]) -> None:
        """``jobid``'s spans changed in the engine: drop its old windows, add its current ones."""
        nodes = self._nodes
        for v, ws in before.items():
            got = nodes.get(v)
            if got is None:
                continue
            starts, ends = got
            for s, e in ws:
                i = bisect_left(starts, s)
                j = bisect_left(ends, e)
                if i < len(starts) and starts[i] == s and j < len(ends) and ends[j] == e:
                    del starts[i], ends[j]
                else:  # not what the engine had: read the node again when it is next asked
                    del nodes[v]
                    break
        for v, ws in self.job_windows(jobid).items():
            got = nodes.get(v)
            if got is None:
                continue
            for s, e in ws:
                insort(got[0], s)
                insort(got[1], e)
