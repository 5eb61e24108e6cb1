"""Release exactly a set of vertices of a job, at any granularity.

A thin layer over :meth:`fluxlite.api.Engine.shrink`: the vertices (a
union of subtrees, as a child's shrink request or a MatchGrow subgraph
names them) are reduced to the roots of those subtrees; rank-less
ancestors above the nodes (the cluster vertex a match writer includes)
are left out.
The engine releases each subtree and lowers every ancestor's aggregate;
a failure changes nothing.  O(released subtrees + ancestors).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fluxlite.api import Engine

__all__ = ["release_exact", "vertices_held"]


def vertices_held(eng: Engine, jobid: int, vids: Iterable[int]) -> set[int]:
    """The subset of ``vids`` on which ``jobid`` holds anything."""
    return set(eng.holders(vids).get(jobid, ()))


def _below_a_rank(g: Any, dom: str, v: int) -> bool:
    """True if ``v`` or one of its ancestors has a rank: a vertex of a node's subtree.

    Only the rank-less vertices above the nodes (the cluster vertex a match writer includes) are
    left out.  A socket or core read from a JGF has rank -1 (Fluxion writes -1 below the node), so
    the vertex's own rank alone would drop every sub-node subtree.  O(depth).
    """
    u: int | None = v
    while u is not None:
        if g.v_rank[u] >= 0:
            return True
        u = g.parent(u, dom)
    return False


def release_exact(eng: Engine, jobid: int, vids: Iterable[int]) -> bool:
    """Release ``vids`` (subtrees held by ``jobid``); True if the job is gone.

    The caller checked ownership.  Raises what the engine raises
    (StateError, UnknownJobError, CommandError); then nothing changed.
    """
    g = eng.graph
    dom = eng.dom
    want = {v for v in vids if _below_a_rank(g, dom, v)}
    if not want:
        return False
    tops = [v for v in want if g.parent(v, dom) not in want]
    return eng.shrink(jobid, paths=[g.path(v, dom) for v in tops])
