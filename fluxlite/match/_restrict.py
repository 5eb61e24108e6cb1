"""Matches restricted to named nodes: walk only the paths from the root to the candidates.

A job whose RFC 31 constraint names its hosts (``hostlist``) or ranks
(``ranks``), or a caller that passes ``hosts=`` to the engine, can only use
the node vertices named.  The plain walk still visits every node of the
graph and refuses the others one by one (``SelectStage._prune``), so a
match for 8 named nodes of a 5,000-node graph costs O(graph).  Here the
traverser instead learns, for each vertex on a path from the root to a
candidate node, which of its children may hold anything the job can use:

- the children on a path to a candidate (the candidates themselves included),
- the children whose subtree holds no node at all (a rack's switch, say).

A child left out holds nodes, none of them named; everything below those
nodes is refused by the constraint in the plain walk too.  What such a
child could still give is a vertex outside every node's subtree (the child
itself, a rack-level resource beside its nodes).  A request can use such a
vertex only if it has no ``node`` request below it and none above it, so
:func:`restrictable` accepts a jobspec only when every request of that kind
asks for a type that the graph holds nowhere outside a node (except at the
root, which is on every path).  With that, the restricted walk gives the
same selection, in the same order, as the plain walk: each vertex still
passes every test of the plain walk (the constraint included), only
children that could contribute nothing are not visited (tests compare both
on random graphs and requests, ``tests/fluxlite/test_restrict.py``).

Costs: the per-graph index (:class:`NodeIndex`: node vertices by name,
which vertices hold a node, the out-edge positions) is built once per
structural version of the graph, O(graph); a restricted match then costs
O(candidates x depth) to set up plus the walk of the candidates' subtrees.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fluxlite.jobspec import ConditionalConstraint, Constraint, HostlistConstraint, RankConstraint

__all__ = ["HostSetConstraint", "NodeIndex", "allowed_edges", "candidate_nodes", "restrictable"]

#: longest host name accepted in ``hosts=`` (a caller-supplied string is bounded)
MAX_HOST_NAME = 1024


@dataclass(frozen=True, slots=True)
class HostSetConstraint(Constraint):
    """The vertex's host name must be one of ``hosts`` (exact names, no hostlist syntax).

    What ``Engine.match(..., hosts=[...])`` adds (and-ed) to a jobspec's own
    constraint.  Its RFC 31 form is a ``hostlist`` of the names.
    """

    hosts: frozenset[str]

    def match(self, properties: Any, hostname: str, rank: int) -> bool:
        return hostname in self.hosts

    def to_dict(self) -> dict[str, Any]:
        return {"hostlist": [",".join(sorted(self.hosts))]}


class NodeIndex:
    """What a restricted match needs to know about one structural version of the graph.

    ``by_name``: node vertices by name; ``has_node[v]``: ``v``'s subtree
    (dominant subsystem, ``v`` included) holds a node; ``loose_types``:
    the types of vertices outside every node's subtree, the root left out;
    ``pos[e]``: edge ``e``'s position among its source's out-edges.  O(graph)
    to build.
    """

    __slots__ = ("by_name", "dom", "free_kids", "has_node", "loose_types", "n_nodes", "pos", "version")

    def __init__(self, g: Any, dom: str) -> None:
        self.version = g.version
        self.dom = dom
        vt, names = g.v_type, g.v_name
        n = len(vt)
        col = g.out[dom]
        pcol = g.parent_edge[dom]
        src = g.e_src
        self.pos: list[int] = [0] * len(g.e_src)
        self.has_node = bytearray(n)
        self.by_name: dict[str, list[int]] = {}
        self.loose_types: set[str] = set()
        self.free_kids: dict[int, list[int]] = {}
        has = self.has_node
        root = g.roots[dom]
        # top-down from the root: which vertices are outside every node's subtree
        stack = [(root, False)]
        n_nodes = 0
        while stack:
            v, inside = stack.pop()
            t = vt[v]
            if t == "node":
                inside = True
                n_nodes += 1
                self.by_name.setdefault(names[v], []).append(v)
                u = v
                while u >= 0 and not has[u]:
                    has[u] = 1
                    pe = pcol[u]
                    u = src[pe] if pe >= 0 else -1
            elif not inside and v != root:
                self.loose_types.add(t)
            kids = col[v]
            for i, e in enumerate(kids):
                self.pos[e] = i
                stack.append((g.e_dst[e], inside))
        self.n_nodes = n_nodes

    def nodefree_kids(self, g: Any, u: int) -> list[int]:
        """Out-edges of ``u`` to children whose subtree holds no node.  O(children) once, then cached."""
        got = self.free_kids.get(u)
        if got is None:
            has, dst = self.has_node, g.e_dst
            got = self.free_kids[u] = [e for e in g.out[self.dom][u] if not has[dst[e]]]
        return got


def candidate_nodes(c: Constraint, g: Any, index: NodeIndex) -> set[int] | None:
    """Node vertices that could satisfy ``c`` (a superset), found without scanning; None if unknown.

    Known for ``hostlist``, ``ranks``, :class:`HostSetConstraint`, an ``and``
    with at least one known operand, an ``or`` of known operands; a list
    naming more names or ranks than the graph has nodes is treated as
    unknown (scanning is then no dearer).  O(names + ranks).
    """
    limit = index.n_nodes
    if isinstance(c, HostSetConstraint):
        return _by_names(c.hosts, index)
    if isinstance(c, HostlistConstraint):
        names = c.names(limit)
        return None if names is None else _by_names(names, index)
    if isinstance(c, RankConstraint):
        ranks = c.ranks_upto(limit)
        if ranks is None:
            return None
        vt, by_rank, live = g.v_type, g.by_rank, g.is_live
        return {v for r in ranks for v in by_rank.get(r, ()) if live(v) and vt[v] == "node"}
    if isinstance(c, ConditionalConstraint) and c.op in ("and", "or"):
        sets = [candidate_nodes(o, g, index) for o in c.operands]
        if c.op == "and":
            known = [s for s in sets if s is not None]
            if not known:
                return None
            out = min(known, key=len)
            return out.intersection(*known)
        if not sets or any(s is None for s in sets):
            return None
        return set().union(*sets)  # type: ignore[arg-type]
    return None


def _by_names(names: Iterable[str], index: NodeIndex) -> set[int]:
    by_name = index.by_name
    out: set[int] = set()
    for name in names:
        got = by_name.get(name)
        if got:
            out.update(got)
    return out


def restrictable(resources: Sequence[Any], loose_types: set[str]) -> bool:
    """Can every request of this jobspec be served only along the paths to the nodes it may use?

    False when some request with no ``node`` request above or below it asks
    for a type the graph holds outside nodes (apart from the root): such a
    request could be served under a node-holding vertex whose nodes are all
    refused, which the restricted walk does not visit.  O(jobspec).
    """

    def walk(rs: Sequence[Any], anchored: bool) -> tuple[bool, bool]:
        any_node = False
        for r in rs:
            here = anchored or r.type == "node"
            ok, below = walk(r.with_, here)
            if not ok:
                return False, False
            has_node = r.type == "node" or below
            if not here and not has_node and r.type in loose_types:
                return False, False
            any_node = any_node or has_node
        return True, any_node

    return walk(resources, False)[0]


def allowed_edges(g: Any, dom: str, cands: Iterable[int], index: NodeIndex) -> dict[int, list[int]] | None:
    """For each vertex on a path from the root to a candidate: its out-edges worth walking, in walk order.

    The order is that of the vertex's out-edges (what the static walk
    follows).  None when a candidate is not below the root or lies below
    another candidate (a node inside a node: walk everything).
    O(candidates x depth + the node-free children of those vertices).
    """
    pcol, src = g.parent_edge[dom], g.e_src
    root = g.roots[dom]
    cset = set(cands)
    if root in cset:
        return None
    kids: dict[int, set[int]] = {}
    for v in cset:
        u = v
        while u != root:
            pe = pcol[u]
            if pe < 0:
                return None
            p = src[pe]
            if p in cset:
                return None
            got = kids.get(p)
            if got is None:
                kids[p] = {pe}
            elif pe in got:
                break  # the rest of the path is known
            else:
                got.add(pe)
            u = p
    out: dict[int, list[int]] = {}
    pos = index.pos
    for u, es in kids.items():
        es.update(index.nodefree_kids(g, u))
        out[u] = sorted(es, key=pos.__getitem__)
    if root not in out:
        out[root] = list(index.nodefree_kids(g, root))
    return out
