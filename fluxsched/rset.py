"""R (RFC 20 resource sets, version 1) to and from the engine's graph, without Flux.

* :func:`engine_from_R` builds the :class:`~fluxlite.api.Engine` of an
  instance from the R that ``resource.acquire`` hands the scheduler: the JGF
  in R's ``scheduling`` key when there is one (Fluxion's rv1 writer puts it
  there, hwloc detail included), else the ``execution`` section (rv1exec).
* :func:`rv1_of` writes the R of a set of graph vertices (cores and GPUs by
  rank, the nodes' host names and properties): what ``sched.resource-status``
  answers, read from the engine rather than from a copy of its state.
* :func:`without_ranks` drops ranks from an R (hello's ``free`` ranks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.graph import UP
from fluxlite.hostlist import HostList
from fluxlite.hostlist import decode as decode_hosts
from fluxlite.idset import compress_ids, decode
from fluxlite.readers import load_graph

__all__ = ["LEAF_TYPES", "down_ranks", "engine_from_R", "rank_node", "rv1_of", "without_ranks"]

#: the resource types R_lite lists under a rank (RFC 20)
LEAF_TYPES = ("core", "gpu")


def engine_from_R(
    R: Mapping[str, Any], policy: str = "first", prune_filters: str = "ALL:core,ALL:node"
) -> Engine:
    """The engine for an instance's R: its ``scheduling`` JGF if present, else its R_lite."""
    if not isinstance(R, Mapping) or R.get("version") != 1:
        raise InputError("R must be an RFC 20 resource set of version 1")
    sched = R.get("scheduling")
    if isinstance(sched, Mapping) and sched.get("graph"):
        graph = load_graph(json.dumps(_with_broker_ranks(sched)).encode(), format="jgf")
    else:
        body = {"version": 1, "execution": R.get("execution", {})}
        graph = load_graph(json.dumps(body).encode(), format="rv1exec")
    return Engine(graph, policy=policy, prune_filters=prune_filters)


def _with_broker_ranks(sched: Mapping[str, Any]) -> dict[str, Any]:
    """The ``scheduling`` JGF with every vertex below a ranked one given that rank.

    Fluxion writes rank -1 below the node of a GRUG-generated graph (its GRUG
    reader ranks only nodes); in an instance's R every core and GPU belongs to
    its node's broker rank (R_lite says so), and the rank-based calls here
    (status, drain, release by rank) look vertices up by rank.
    """
    graph = sched["graph"]
    nodes = graph.get("nodes") or []
    if all(((n.get("metadata") or {}).get("rank", -1)) >= 0 for n in nodes if isinstance(n, Mapping)):
        return dict(sched)
    rank: dict[str, int] = {}
    for n in nodes:
        if isinstance(n, Mapping) and "id" in n:
            rank[str(n["id"])] = int((n.get("metadata") or {}).get("rank", -1))
    kids: dict[str, list[str]] = {}
    targets: set[str] = set()
    for e in graph.get("edges") or []:
        if not isinstance(e, Mapping) or (e.get("metadata") or {}).get("subsystem", "containment") != "containment":
            continue
        kids.setdefault(str(e.get("source")), []).append(str(e.get("target")))
        targets.add(str(e.get("target")))
    stack = [(k, -1) for k in rank if k not in targets]
    seen: set[str] = set()
    while stack:
        k, inherited = stack.pop()
        if k in seen or k not in rank:
            continue
        seen.add(k)
        if rank[k] < 0:
            rank[k] = inherited
        stack.extend((c, rank[k]) for c in kids.get(k, ()))
    out_nodes = []
    for n in nodes:
        if isinstance(n, Mapping) and "id" in n and rank.get(str(n["id"]), -1) >= 0:
            md = dict(n.get("metadata") or {})
            md["rank"] = rank[str(n["id"])]
            n = {**n, "metadata": md}
        out_nodes.append(n)
    return {**sched, "graph": {**graph, "nodes": out_nodes}}


def rank_node(eng: Engine, rank: int) -> int | None:
    """The graph vertex of broker ``rank``'s node (the top of its subtree), or None."""
    g = eng.graph
    vids = g.by_rank.get(rank) if rank >= 0 else None
    if not vids:
        return None
    dom = eng.traverser.dom
    for v in vids:
        p = g.parent(v, dom)
        if p is None or g.v_rank[p] != rank:
            return v
    return None


def rv1_of(
    eng: Engine,
    vertices: Iterable[int] | None = None,
    ranks: Iterable[int] | None = None,
    starttime: float = 0.0,
    expiration: float = 0.0,
) -> dict[str, Any]:
    """The R (version 1, no ``scheduling`` key) of the cores/GPUs among ``vertices`` or under ``ranks``.

    With neither, every core and GPU of the graph.  Ranks without any are left
    out, as RFC 20 has no empty R_lite entries.
    """
    g = eng.graph
    if vertices is None:
        if ranks is None:
            vertices = (v for v in g.vertices() if g.v_type[v] in LEAF_TYPES)
        else:
            vertices = (v for r in ranks for v in g.by_rank.get(r, ()) if g.v_type[v] in LEAF_TYPES)
    per_rank: dict[int, dict[str, list[int]]] = {}
    for v in vertices:
        t = g.v_type[v]
        if t in LEAF_TYPES and g.v_rank[v] >= 0:
            per_rank.setdefault(g.v_rank[v], {}).setdefault(t, []).append(g.v_id[v])
    groups: dict[str, list[int]] = {}
    sig_children: dict[str, dict[str, str]] = {}
    for rank, kids in per_rank.items():
        children = {t: compress_ids(sorted(kids[t])) for t in LEAF_TYPES if t in kids}
        sig = json.dumps(children, sort_keys=True)
        groups.setdefault(sig, []).append(rank)
        sig_children[sig] = children
    rlite = [
        {"rank": compress_ids(sorted(rs)), "children": sig_children[sig]}
        for sig, rs in sorted(groups.items(), key=lambda kv: min(kv[1]))
    ]
    hosts = HostList()
    props: dict[str, list[int]] = {}
    for rank in sorted(per_rank):
        node = rank_node(eng, rank)
        name = g.v_name[node] if node is not None else f"rank{rank}"
        hosts.append(name)
        for k, val in (g.v_props.get(node, {}) if node is not None else {}).items():
            props.setdefault(k if val == "" else f"{k}={val}", []).append(rank)
    execution: dict[str, Any] = {
        "R_lite": rlite,
        "nodelist": [hosts.encode()] if per_rank else [],
        "starttime": starttime,
        "expiration": expiration,
    }
    if props:
        execution["properties"] = {k: compress_ids(v) for k, v in sorted(props.items())}
    return {"version": 1, "execution": execution}


def down_ranks(eng: Engine) -> list[int]:
    """Ranks whose node is marked down in the engine."""
    g = eng.graph
    out = []
    for r in sorted(k for k in g.by_rank if k >= 0):
        v = rank_node(eng, r)
        if v is not None and g.v_status[v] != UP:
            out.append(r)
    return out


def without_ranks(R: Mapping[str, Any], drop: Iterable[int]) -> dict[str, Any]:
    """A copy of ``R`` without the ranks in ``drop`` (R_lite, nodelist and properties)."""
    gone = set(drop)
    ex = dict(R.get("execution", {}))
    rlite = []
    all_ranks: list[int] = []
    for ent in ex.get("R_lite", []):
        rs = decode(ent["rank"])
        all_ranks.extend(rs)
        keep = [r for r in rs if r not in gone]
        if keep:
            rlite.append({**ent, "rank": compress_ids(keep)})
    out = {k: v for k, v in R.items() if k != "scheduling"}
    ex["R_lite"] = rlite
    nodelist = ex.get("nodelist")
    if nodelist:
        names = [h for part in nodelist for h in decode_hosts(part)]
        ordered = sorted(all_ranks)
        if len(names) == len(ordered):
            hl = HostList()
            for r, h in zip(ordered, names):
                if r not in gone:
                    hl.append(h)
            ex["nodelist"] = [hl.encode()] if len(hl) else []
    if ex.get("properties"):
        newp = {}
        for k, v in ex["properties"].items():
            keep = [r for r in decode(v) if r not in gone]
            if keep:
                newp[k] = compress_ids(keep)
        ex["properties"] = newp
    out["execution"] = ex
    return out
