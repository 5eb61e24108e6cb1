"""Release exactly a set of vertices of a job, at any granularity.

The engine's partial release works by broker rank: releasing part of what
a job holds on one rank (one socket of a node it holds whole) would drop
the job's hold on the rank's root and leave the node's aggregate wrong.
:func:`release_exact` therefore releases whole ranks and gives back to the
job, with ``update_allocate``, what it keeps on those ranks.  Both steps
are the engine's own exact operations, so aggregates stay equal to a
recount.  O(vertices of the touched ranks), plus O(V) once when something
must be given back.
"""

from __future__ import annotations

from collections.abc import Iterable

from fluxlite.api import Engine
from hierarchy._jgfsub import subgraph_jgf

__all__ = ["release_exact", "vertices_held"]


def vertices_held(eng: Engine, jobid: int, vids: Iterable[int]) -> set[int]:
    """The subset of ``vids`` on which ``jobid`` holds anything."""
    return set(eng.holders(vids).get(jobid, ()))


def release_exact(
    eng: Engine, jobid: int, vids: Iterable[int], *, at: int = 0, duration: int | None = None
) -> bool:
    """Release ``vids`` (vertices with a broker rank, all held by ``jobid``); True if the job is gone.

    The caller checked ownership.  Raises what the engine raises
    (StateError, UnknownJobError); a failure of the first step changes
    nothing.
    """
    g = eng.graph
    want = {v for v in vids if g.v_rank[v] >= 0}
    if not want:
        return False
    ranks = {g.v_rank[v] for v in want}
    on_ranks = [v for r in ranks for v in g.by_rank.get(r, ())]
    held = vertices_held(eng, jobid, on_ranks)
    release = [v for v in on_ranks if v in held]
    keep = [v for v in release if v not in want]
    items: list[tuple[int, int, bool]] = []
    if keep:
        keepset = set(keep)
        for path, units, excl in eng.job_items(jobid):
            v = g.vertex_by_path(path)
            if v in keepset:
                items.append((v, units, excl))
    gone = eng.partial_cancel(jobid, subgraph_jgf(g, release), "jgf")
    if items:
        eng.update_allocate(
            jobid,
            subgraph_jgf(g, [v for v, _, _ in items], exclusive=[v for v, _, x in items if x]),
            at=at,
            duration=duration,
        )
        return False
    return gone
