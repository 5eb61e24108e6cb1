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

__all__ = ["node_vertices", "release_exact", "release_set", "release_vertices", "vertices_held"]


def vertices_held(eng: Engine, jobid: int, vids: Iterable[int]) -> set[int]:
    """The subset of ``vids`` on which ``jobid`` holds anything (tagged, allocated or reserved).

    ``set(eng.holders(vids).get(jobid, ()))`` without building every other job's lists: a pass per
    column, each over the vertices not found yet.  O(len(vids)).
    """
    tr = eng.traverser
    rest = vids if isinstance(vids, list) else list(vids)
    out: set[int] = set()
    for col in (tr.tags, tr.allocs, tr.resvs):
        got = [v for v in rest if (d := col[v]) and jobid in d]
        if got:
            out.update(got)
            rest = [v for v in rest if v not in out]
            if not rest:
                break
    return out


def node_vertices(g: Any, dom: str, vids: Iterable[int]) -> list[int]:
    """The vertices of ``vids`` that lie in a node's subtree (a node or below it), in order.

    Leaves out only the rank-less vertices above the nodes (the cluster vertex a match writer
    includes).  On a graph read from a match writer's JGF (a child's), sockets and cores have rank -1,
    so a filter on the vertex's own rank would keep only the nodes.  O(len(vids) + depth), memoised
    per vertex.
    """
    seen: dict[int, bool] = {}
    out: list[int] = []
    rank = g.v_rank
    pcol = g.parent_edge.get(dom)  # (g.parent(u, dom), read from the columns)
    src = g.e_src
    for v in vids:
        chain: list[int] = []
        u = v
        ok = False
        while True:
            known = seen.get(u)
            if known is not None:
                ok = known
                break
            chain.append(u)
            if rank[u] >= 0:
                ok = True
                break
            e = pcol[u] if pcol is not None else -1
            if e < 0:
                break
            u = src[e]
        for w in chain:
            seen[w] = ok
        if ok:
            out.append(v)
    return out


def release_set(eng: Engine, jobid: int, vids: Iterable[int], *, in_nodes: bool = False) -> list[int]:
    """What :func:`release_exact` releases of ``vids``: the named vertices in nodes' subtrees, less
    every named vertex with a held child that is not named (a match writer's JGF of one socket also
    names its node and the cluster; the node stays held).  ``in_nodes``: ``vids`` are a
    :func:`node_vertices` answer already (not filtered again).  O(len(vids) x depth).
    """
    g = eng.graph
    dom = eng.dom
    want = dict.fromkeys(vids if in_nodes else node_vertices(g, dom, vids))
    if not want:
        return []
    # children first, so a vertex that stays keeps its ancestors
    kids = {v: g.children(v, dom) for v in want}
    unnamed = {c for cs in kids.values() for c in cs if c not in want}
    still = vertices_held(eng, jobid, unnamed) if unnamed else set()
    if not still:  # (no named vertex keeps a held child: nothing to carry up)
        return list(want)
    for v in sorted(want, key=lambda v: len(g.ancestors(v, dom)), reverse=True):
        if any(c in still for c in kids[v]):
            still.add(v)
    return [v for v in want if v not in still]


def release_exact(eng: Engine, jobid: int, vids: Iterable[int]) -> bool:
    """Release ``vids`` (subtrees held by ``jobid``; see :func:`release_set`); True if the job is gone.

    The caller checked ownership.  Raises what the engine raises
    (StateError, UnknownJobError, CommandError); then nothing changed.
    """
    return release_vertices(eng, jobid, release_set(eng, jobid, vids))


def release_vertices(eng: Engine, jobid: int, vids: Iterable[int]) -> bool:
    """Release exactly ``vids``, a :func:`release_set` answer; True if the job is gone.  As :func:`release_exact`."""
    g = eng.graph
    dom = eng.dom
    want = set(vids)
    if not want:
        return False
    # the vertices whose parent is not released (g.parent(v, dom) read from the columns)
    pedge = g.parent_edge.get(dom)
    src = g.e_src
    if pedge is None:
        tops = list(want)
    else:
        tops = [v for v in want if (e := pedge[v]) < 0 or src[e] not in want]
    path = g.paths.get(dom, {}).get
    return eng.shrink(jobid, paths=[path(v, "") for v in tops])
