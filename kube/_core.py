"""The one core both forms share: the cluster's graph and the pods' jobs, on one Engine.

:class:`KubeCore` owns a :class:`fluxlite.api.Engine` and nothing else that
holds allocation state: every placement, grow and release is an engine
operation, and the bookkeeping kept here is only *which* engine job a group
is and *which* vertices each pod took (so a pod's exit shrinks exactly those).

Graph.  ``cluster0 -> [zone] -> [rack] -> node -> core*, memory*, <ext>*``:
one ``core`` per allocatable CPU, one ``memory`` vertex per memory unit
(1 GiB by default), one vertex per unit of each configured extended resource
(``nvidia.com/gpu`` -> ``gpu``).  A node's labels are its properties.  Every
node subgraph is built as JGF and loaded by the engine's JGF reader: the
initial cluster with :func:`fluxlite.readers.load_graph`, later nodes with
:meth:`Engine.attach` (``O(node subgraph + depth)``); a removed node is
:meth:`Engine.remove_subgraph`; cordoned or NotReady nodes are
:meth:`Engine.set_status` ``down``.

Jobs.  A group (see :func:`kube._model.pod_group`) is one engine job: its
first pod is a MatchAllocate, each further pod a MatchGrow of that job
(first onto the nodes the job already holds, with ``grow_locality="node"``),
and a pod that goes away is a shrink of exactly its vertices.  A gang (a
group with a minimum member count) is placed all-or-nothing: its members
are allocated and grown in one step, and if one cannot be placed the job is
cancelled, so no partial gang ever holds resources.  Pods bound by other
schedulers are accounted as one job each on their node.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

import jgf
from fluxlite.api import Engine
from fluxlite.errors import BusyError, InputError, StateError, UnsatisfiableError
from fluxlite.jobspec import parse_jobspec
from fluxlite.writers.base import known_format, register
from kube._affinity import PodMeta
from kube._model import NodeInfo, PodRequest
from kube.config import KubeConfig

__all__ = ["KubeCore", "Placement", "PodAlloc"]

DOM = "containment"
_FMT = "kube-items"
_SS = {"containment": ""}
_RECENT = 8
#: candidate nodes offered to a narrowed match, and nodes looked at to find them (see KubeCore.candidates)
_CANDIDATES = 8
_SCAN = 256
#: policies whose choice is the first fitting node in node order (so a narrowed match agrees)
_NARROWABLE = ("low", "first")


class _ItemsWriter:
    """A match writer that records ``[path, units, exclusive, type]`` per vertex (no text layout)."""

    __slots__ = ("items",)
    emit_exclusive_subtrees = True
    emits_edges = False

    def __init__(self) -> None:
        self.items: list[Any] = []

    def emit_vtx(self, prefix: str, g: Any, vid: int, needs: int, agfilter: Any = None,
                 exclusive: bool = False, ephemeral: Any = None) -> None:  # fmt: skip
        self.items.append((g.path(vid, DOM), needs, exclusive, g.v_type[vid]))

    def emit_edg(self, prefix: str, g: Any, eid: int) -> None:
        pass

    def emit_tm(self, start: int, end: int) -> None:
        pass

    def emit_attrs(self, key: str, value: str) -> None:
        pass

    def emit(self) -> str:
        out = orjson.dumps(self.items).decode()
        self.items = []
        return out

    def emit_json(self) -> object | None:
        return None

    def empty(self) -> bool:
        return not self.items

    def reset(self) -> None:
        self.items = []


if not known_format(_FMT):
    register(_FMT, _ItemsWriter)


@dataclass
class Placement:
    """Where one pod went: its node and the vertices it holds."""

    node: str
    items: list[tuple[str, int, bool]]  # (path, units, exclusive) for every vertex it touches
    jobid: int
    grew: bool
    match_s: float = 0.0  # wall-clock time of the match (and the grow's local try)
    match_cpu_s: float = 0.0  # CPU time of this thread for it (immune to other threads and processes)

    def record(self, node_path: str) -> dict[str, Any]:
        """The pod annotation that lets a restarted shim rebuild this placement."""
        n = len(node_path)
        own = [[p[n + 1 :], u, int(x)] for p, u, x in self.items if p.startswith(node_path)]
        return {"v": 1, "node": self.node, "path": node_path, "own": own}


@dataclass
class PodAlloc:
    group: str
    node: str
    jobid: int
    paths: list[str]  # exclusive vertices: exactly what a shrink releases
    foreign: bool = False
    meta: PodMeta | None = None  # labels etc. that other pods' affinity rules look at


@dataclass
class _Group:
    key: str
    jobid: int | None = None
    pods: set[str] = field(default_factory=set)
    nodes: dict[str, int] = field(default_factory=dict)  # node -> pods of the group there
    #: the group's nodes where room is likeliest: the latest placed on or freed, newest last (at most
    #: _RECENT), which a grow tries first - all its nodes would make the try O(group) per pod
    recent: dict[str, None] = field(default_factory=dict)

    def touch(self, node: str) -> None:
        self.recent.pop(node, None)
        self.recent[node] = None
        if len(self.recent) > _RECENT:
            del self.recent[next(iter(self.recent))]


class KubeCore:
    """The cluster graph and the group -> job bookkeeping on one engine."""

    def __init__(self, cfg: KubeConfig | None = None, nodes: Iterable[NodeInfo] = ()) -> None:
        from fluxlite.readers import load_graph

        self.cfg = cfg or KubeConfig()
        self._uniq = 0
        self._rank = 0
        self._containers: dict[str, int] = {}  # path -> uniq of cluster/zone/rack vertices
        self.nodes: dict[str, NodeInfo] = {}
        self.node_path: dict[str, str] = {}
        self.groups: dict[str, _Group] = {}
        self.pods: dict[str, PodAlloc] = {}
        self.per_node: dict[str, int] = {}  # node -> pods the engine holds there
        self._full: set[str] = set()  # nodes at their pod count
        self._js_cache: dict[Any, Any] = {}
        self._taint_keys: frozenset[str] | None = None  # taint_keys(), recomputed after a node change
        #: node names in the order candidates are offered (the order nodes were added: their rank)
        self._order: list[str] = []
        self._pos: dict[str, int] = {}  # node -> index in _order
        #: every node before this index of _order had no core free when last looked at
        self._cursor = 0
        #: matches narrowed to candidate nodes / full matches (see :meth:`place`)
        self.narrowed = [0, 0]
        #: False: every placement is a full match (the same answers, slower; tests compare the two)
        self.narrow = True
        self.stats: dict[str, list[float]] = {"allocate": [], "grow": []}
        nodes = list(nodes)
        vs: list[dict[str, Any]] = []
        es: list[dict[str, Any]] = []
        self._in_doc: set[str] = set()
        self._container_vertex("/cluster0", "cluster", "cluster0", None, vs, es)
        for info in nodes:
            self._node_jgf(info, vs, es)
        graph = load_graph(jgf.write(vs, es, style="compact"), format="jgf")
        self.engine = Engine(graph, policy=self.cfg.policy, prune_filters=self.cfg.prune_filters())
        for info in nodes:
            self.nodes[info.name] = info
            self._enlist(info.name)
            if not info.up:
                self.engine.set_status(self.node_path[info.name], "down")

    # ------------------------------------------------------------------ graph
    def _container_vertex(
        self, path: str, rtype: str, name: str, parent: str | None, vs: list[Any], es: list[Any]
    ) -> str:
        if path in self._in_doc:
            return path
        self._in_doc.add(path)
        u = self._containers.get(path)
        if u is None:
            u = self._containers[path] = self._uniq
            self._uniq += 1
        vs.append(jgf.node_dict(uniq_id=u, type=rtype, name=name, id=0, paths={DOM: path}))
        if parent is not None:
            es.append(jgf.edge_dict(self._containers[parent], u))
        return path

    def _node_jgf(self, info: NodeInfo, vs: list[Any], es: list[Any]) -> str:
        parent = self._container_vertex("/cluster0", "cluster", "cluster0", None, vs, es)
        if info.zone:
            parent = self._container_vertex(f"{parent}/{info.zone}", "zone", info.zone, parent, vs, es)
        if info.rack:
            parent = self._container_vertex(f"{parent}/{info.rack}", "rack", info.rack, parent, vs, es)
        rank = self._rank
        self._rank += 1
        npath = f"{parent}/{info.name}"
        nu = self._uniq
        self._uniq += 1
        vs.append(
            jgf.node_dict(
                uniq_id=nu, type="node", basename=info.name, name=info.name, id=rank, rank=rank,
                paths={DOM: npath}, properties=info.properties(),
            )
        )  # fmt: skip
        es.append(jgf.edge_dict(self._containers[parent], nu))
        kids = [("core", info.cores, "")]
        kids.append(
            ("memory", info.memory, "GB" if self.cfg.memory_unit in ("1Gi", "1G") else self.cfg.memory_unit)
        )
        kids += [(t, n, "") for t, n in info.extended]
        if info.storage:
            kids.append(
                (
                    "storage",
                    info.storage,
                    "GB" if self.cfg.storage_unit in ("1Gi", "1G") else self.cfg.storage_unit,
                )
            )
        u = self._uniq
        for rtype, count, unit in kids:
            for i in range(count):
                vs.append(
                    {
                        "id": str(u),
                        "metadata": {
                            "type": rtype, "basename": rtype, "name": f"{rtype}{i}", "id": i, "uniq_id": u,
                            "rank": rank, "exclusive": False, "unit": unit, "size": 1,
                            "paths": {DOM: f"{npath}/{rtype}{i}"},
                        },
                    }
                )  # fmt: skip
                es.append({"source": str(nu), "target": str(u)})
                u += 1
        self._uniq = u
        self.node_path[info.name] = npath
        return npath

    def add_node(self, info: NodeInfo) -> None:
        """Attach a new node's subgraph (no rebuild).  O(node subgraph + depth)."""
        if info.name in self.nodes:
            self.update_node(info)
            return
        vs: list[Any] = []
        es: list[Any] = []
        saved = (self._uniq, self._rank, dict(self._containers))
        # the ancestors ride along in the document: the reader finds them by path and reuses them
        self._in_doc = set()
        self._node_jgf(info, vs, es)
        try:
            self.engine.attach(jgf.write(vs, es, style="compact"), source=f"node {info.name}")
        except BaseException:
            self._uniq, self._rank, self._containers = saved
            self.node_path.pop(info.name, None)
            raise
        self.nodes[info.name] = info
        self._taint_keys = None
        self._enlist(info.name)
        if not info.up:
            self.engine.set_status(self.node_path[info.name], "down")

    def _enlist(self, name: str) -> None:
        self._pos[name] = len(self._order)
        self._order.append(name)
        self._cursor = min(self._cursor, self._pos[name])

    def update_node(self, info: NodeInfo) -> str:
        """Apply a changed Node: status (set-status), labels (properties), shape (re-attach if free).

        Returns what changed (``""``, ``"status"``, ``"labels"``, ``"shape"``, or
        ``"shape-deferred"`` when the node's subgraph cannot change while pods hold it).
        """
        old = self.nodes.get(info.name)
        if old is None:
            self.add_node(info)
            return "added"
        changed = ""
        if old.shape != info.shape:
            if any(p.node == info.name for p in self.pods.values()):
                changed = "shape-deferred"
                info = NodeInfo(old.name, old.cores, old.memory, old.extended, old.zone, old.rack,
                                info.labels, info.taints, info.up, info.reason)  # fmt: skip
            else:
                self.remove_node(info.name)
                self.add_node(info)
                return "shape"
        path = self.node_path[info.name]
        if old.labels != info.labels or old.taints != info.taints:
            g = self.engine.graph
            v = g.vertex_by_path(path)
            if v is not None:
                props = g.properties(v)
                for k in list(props):
                    del props[k]
                for k, val in info.properties().items():
                    g.set_property(v, k, val)
            changed = changed or "labels"
        if old.up != info.up:
            self.engine.set_status(path, "up" if info.up else "down")
            changed = changed or "status"
        self.nodes[info.name] = info
        self._taint_keys = None
        self._cursor = min(self._cursor, self._pos.get(info.name, 0))
        return changed

    def remove_node(self, name: str) -> list[str]:
        """Remove a node's subgraph; pods recorded on it lose their records.  Returns those pod keys."""
        path = self.node_path.get(name)
        if path is None:
            return []
        gone = [k for k, p in self.pods.items() if p.node == name]
        for k in gone:
            self._forget(k)
        self.engine.remove_subgraph(path=path, force=True)
        del self.node_path[name]
        del self.nodes[name]
        self._taint_keys = None
        self._order.remove(name)
        self._pos = {n: i for i, n in enumerate(self._order)}
        self._cursor = 0
        # a zone or rack left empty goes too
        g = self.engine.graph
        parent = path.rsplit("/", 1)[0]
        while parent.count("/") > 1:
            v = g.vertex_by_path(parent)
            if v is None or len(g.subtree(v, DOM)) > 1:
                break
            self.engine.remove_subgraph(path=parent, force=True)
            self._containers.pop(parent, None)
            parent = parent.rsplit("/", 1)[0]
        for grp in self.groups.values():
            if grp.jobid is not None and grp.jobid not in self.engine.jobs:
                grp.jobid = None
        return gone

    def taint_keys(self) -> frozenset[str]:
        """Blocking taint keys present on any node.  Kept per node change, so O(1) per pod
        (a recount over every node for every pod cost O(nodes) per placement)."""
        if self._taint_keys is None:
            self._taint_keys = frozenset(t for n in self.nodes.values() for t in n.taints)
        return self._taint_keys

    # ------------------------------------------------------------------ jobspecs
    def jobspec(self, req: PodRequest, constraint: dict[str, Any] | None) -> Any:
        """The pod's jobspec: ``node[1] -> slot[1] -> core, memory, <ext>`` (+ constraint).  Cached."""
        key = (req, orjson.dumps(constraint, option=orjson.OPT_SORT_KEYS) if constraint else b"")
        js = self._js_cache.get(key)
        if js is not None:
            return js
        inner: list[dict[str, Any]] = []
        if not req.exclusive_node:
            inner.append({"type": "core", "count": req.cores})
            if req.memory:
                inner.append({"type": "memory", "count": req.memory})
            if req.storage:
                inner.append({"type": "storage", "count": req.storage})
            inner += [{"type": t, "count": n} for t, n in req.extended]
        else:
            inner.append({"type": "core", "count": 1})
        node: dict[str, Any] = {
            "type": "node",
            "count": 1,
            "with": [{"type": "slot", "count": 1, "label": "pod", "with": inner}],
        }
        if req.exclusive_node:
            node["exclusive"] = True
        system: dict[str, Any] = {"duration": 0}
        if constraint:
            system["constraints"] = constraint
        doc = {
            "version": 9999,
            "resources": [node],
            "attributes": {"system": system},
            "tasks": [{"command": ["pod"], "slot": "pod", "count": {"per_slot": 1}}],
        }
        js = parse_jobspec(orjson.dumps(doc), source="pod")
        if len(self._js_cache) > 4096:
            self._js_cache.clear()
        self._js_cache[key] = js
        return js

    def satisfiable(self, req: PodRequest, constraint: dict[str, Any] | None) -> bool:
        """Could any node of the cluster (up or down, free or not) ever hold this pod?"""
        from fluxlite.jobspec import parse_constraint

        c = parse_constraint(constraint) if constraint else None
        g = self.engine.graph
        for name, info in self.nodes.items():
            if not req.fits(info):
                continue
            if c is None:
                return True
            v = g.vertex_by_path(self.node_path[name])
            if v is not None and c.match(g.properties(v), name, g.v_rank[v]):
                return True
        return False

    def capacity(self, req: PodRequest) -> int:
        """How many pods shaped like ``req`` the cluster could ever hold (every node empty, up or down).

        Reads one snapshot of the node table (no engine state, so callers need
        not hold the lock that serialises placements).  O(nodes).
        """
        total = 0
        for info in list(self.nodes.values()):
            if req.exclusive_node:
                total += 1
                continue
            fit = info.cores // req.cores
            if req.memory:
                fit = min(fit, info.memory // req.memory)
            if req.storage:
                fit = min(fit, info.storage // req.storage)
            if info.max_pods:
                fit = min(fit, info.max_pods)
            have = dict(info.extended)
            for t, n in req.extended:
                fit = min(fit, have.get(t, 0) // n)
            total += fit
        return total

    # ------------------------------------------------------------------ placement
    def _match(self, js: Any, jobid: int | None, grow: bool, hosts: Iterable[str] | None = None) -> Any:
        # op "allocate": the pod's busy/never distinction is made by :meth:`satisfiable`;
        # ``hosts``: the engine walks only the paths to those nodes (cost independent of the graph)
        return self.engine.match(js, op="allocate", jobid=jobid, fmt=_FMT, _grow=grow, hosts=hosts)

    def _placement(self, r: Any, grew: bool, t0: float, c0: float) -> Placement:
        emitted = orjson.loads(r.text)
        items = [(p, n, bool(x)) for p, n, x, _t in emitted]
        node = next(p for p, _n, _x, t in emitted if t == "node")
        name = node.rsplit("/", 1)[1]
        return Placement(name, items, r.jobid, grew, time.perf_counter() - t0, time.thread_time() - c0)

    def full_nodes(self) -> set[str]:
        """Nodes holding as many pods as their ``status.allocatable.pods`` (kept as pods come and go)."""
        return self._full

    def placed(self) -> list[tuple[str, PodMeta]]:
        """``(node, meta)`` of every held pod whose metadata is known (for affinity and spread)."""
        return [(p.node, p.meta) for p in self.pods.values() if p.meta is not None]

    def free(self, node: str) -> dict[str, int]:
        """Units of each pruned type free on ``node`` now, read from the engine's subtree aggregate."""
        g = self.engine.graph
        v = g.vertex_by_path(self.node_path[node])
        p = self.engine.traverser.subplan[DOM][v]
        return {t: p.avail_resources_at(0, i) for i, t in enumerate(p.resource_types)}

    def candidates(self, req: PodRequest, js: Any, limit: int = _CANDIDATES, scan: int = _SCAN) -> list[str]:
        """Up to ``limit`` nodes that can hold ``req`` now, first in node order (what the engine's
        ``low``/``first`` policies prefer): up, not at their pod count, passing the jobspec's
        constraint, with the units free in the engine's subtree aggregates (read, not copied).

        Like kube-scheduler's ``percentageOfNodesToScore``, it stops early: after ``limit``
        candidates or ``scan`` nodes looked at.  Nodes with no core free at all are skipped for
        good by a cursor (moved back when a pod leaves or a node changes), so the cost is
        O(scan), not O(nodes).  Empty: no candidate found cheaply (the caller falls back to a
        full match, which decides).
        """
        if not self.narrow or req.exclusive_node or self.cfg.policy not in _NARROWABLE:
            return []
        g = self.engine.graph
        plans = self.engine.traverser.subplan.get(DOM)
        if plans is None:
            return []
        need = [("core", req.cores), ("memory", req.memory), ("storage", req.storage), *req.extended]
        need = [(t, n) for t, n in need if n]
        c = getattr(js, "constraint", None)
        out: list[str] = []
        order, nodes, paths, full = self._order, self.nodes, self.node_path, self._full
        i = self._cursor
        advancing = True
        end = min(len(order), i + scan)
        while i < end and len(out) < limit:
            name = order[i]
            i += 1
            v = g.vertex_by_path(paths[name])
            p = plans[v] if v is not None else None
            if p is None:
                return []
            free = {t: p.avail_resources_at(0, k) for k, t in enumerate(p.resource_types)}
            if advancing:
                if free.get("core", 1) == 0 or name in full:
                    self._cursor = i
                    end = min(len(order), i + scan)
                    continue
                advancing = False
            if name in full or not nodes[name].up:
                continue
            if any(free.get(t, n) < n for t, n in need):
                continue
            if c is not None and not c.match(g.properties(v), name, g.v_rank[v]):
                continue
            out.append(name)
        return out

    def place(
        self,
        pod: str,
        group: str,
        req: PodRequest,
        constraint: dict[str, Any] | None = None,
        tiers: Sequence[Sequence[str]] | None = None,
    ) -> Placement:
        """Place one pod of ``group``: MatchAllocate for the group's first pod, MatchGrow after.

        ``tiers``: node names in order of preference (a filter and a score from
        :mod:`kube._affinity`): each tier is tried as a hostlist constraint, best
        first; none given: every node.  Raises :class:`BusyError` (fits some node,
        not now, or the tiers leave no node) or :class:`UnsatisfiableError` (no
        node of the cluster can ever hold it); then nothing changed.  ``O(match x tiers)``.
        """
        if tiers is not None:
            tiers = [t for t in tiers if t]
            if not tiers:
                if not self.satisfiable(req, constraint):
                    raise UnsatisfiableError("no node of the cluster can ever hold the pod", pod=pod)
                raise BusyError("no node passes the pod's placement rules", pod=pod)
            for i, tier in enumerate(tiers):
                here = {"hostlist": [",".join(sorted(tier))]}
                try:
                    return self.place(pod, group, req, {"and": [constraint, here]} if constraint else here)
                except (BusyError, UnsatisfiableError):
                    if i == len(tiers) - 1:
                        if not self.satisfiable(req, constraint):
                            raise UnsatisfiableError(
                                "no node of the cluster can ever hold the pod", pod=pod
                            ) from None
                        raise BusyError(
                            "no node the pod's placement rules allow has its resources free", pod=pod
                        ) from None
        if pod in self.pods:
            raise StateError(f"pod {pod} already holds resources", pod=pod)
        grp = self.groups.get(group)
        if grp is None:
            grp = self.groups[group] = _Group(group)
        js = self.jobspec(req, constraint)
        t0 = time.perf_counter()
        c0 = time.thread_time()
        r = None
        grow = grp.jobid is not None
        if grow and self.cfg.grow_locality == "node" and grp.recent and not req.exclusive_node:
            r = self._match(js, grp.jobid, True, hosts=list(grp.recent))
        if r is None or not r.ok:
            hosts = self.candidates(req, js)
            if hosts:
                self.narrowed[0] += 1
                r = self._match(js, grp.jobid, grow, hosts=hosts)
        if r is None or not r.ok:
            self.narrowed[1] += 1
            r = self._match(js, grp.jobid, grow)
        if not r.ok:
            if not grp.pods and grp.jobid is None:
                del self.groups[group]
            if self.satisfiable(req, constraint):
                raise BusyError("no node has the pod's resources free now", pod=pod)
            raise UnsatisfiableError("no node of the cluster can ever hold the pod", pod=pod)
        pl = self._placement(r, grow, t0, c0)
        self.stats["grow" if grow else "allocate"].append(pl.match_s)
        self._remember(pod, grp, pl)
        return pl

    def place_gang(
        self,
        pods: Sequence[str] | Sequence[tuple[str, PodRequest, dict[str, Any] | None]],
        group: str,
        req: PodRequest | None = None,
        constraint: dict[str, Any] | None = None,
        tiers: Callable[[str], Sequence[Sequence[str]] | None] | None = None,
        on_placed: Callable[[str], None] | None = None,
    ) -> list[Placement]:
        """All-or-nothing placement of a gang: every member placed, or none and nothing changed.

        ``pods`` are keys (all shaped like ``req``) or ``(key, request,
        constraint)`` triples.  ``tiers(key)``, asked just before each member is
        placed, gives its node tiers (see :meth:`place`), so rules between
        members (inter-pod affinity inside the gang) see the members placed
        before it; ``on_placed(key)`` runs after each member is placed (to record
        what those rules read).  Raises what :meth:`place` raises for the first
        member that does not fit, after releasing the members placed before it.
        """
        members = [(p, req, constraint) if isinstance(p, str) else p for p in pods]
        grp = self.groups.get(group)
        fresh = grp is None or grp.jobid is None
        done: list[str] = []
        out: list[Placement] = []
        try:
            for key, r, c in members:
                if r is None:
                    raise InputError(f"gang member {key} has no request")
                out.append(self.place(key, group, r, c, tiers(key) if tiers is not None else None))
                done.append(key)
                if on_placed is not None:
                    on_placed(key)
        except (BusyError, UnsatisfiableError) as exc:
            for p in reversed(done):
                self.release(p)
            if fresh and group in self.groups and not self.groups[group].pods:
                del self.groups[group]
            exc.fit = len(done)  # type: ignore[attr-defined]  # how many members fitted before this one
            raise
        return out

    def _remember(self, pod: str, grp: _Group, pl: Placement, foreign: bool = False) -> None:
        grp.jobid = pl.jobid
        grp.pods.add(pod)
        grp.nodes[pl.node] = grp.nodes.get(pl.node, 0) + 1
        grp.touch(pl.node)
        excl = [p for p, _n, x in pl.items if x]
        self.pods[pod] = PodAlloc(grp.key, pl.node, pl.jobid, excl, foreign)
        here = self.per_node[pl.node] = self.per_node.get(pl.node, 0) + 1
        info = self.nodes.get(pl.node)
        if info is not None and info.max_pods and here >= info.max_pods:
            self._full.add(pl.node)

    def release(self, pod: str) -> bool:
        """Shrink the pod's job by exactly the pod's vertices (cancel when it was the last).

        Returns False if the pod held nothing (idempotent).  O(pod's vertices + depth).
        """
        rec = self.pods.get(pod)
        if rec is None:
            return False
        if rec.jobid in self.engine.jobs and rec.paths:
            # StateError: the vertices were already taken away (node removed by force)
            with contextlib.suppress(StateError):
                self.engine.shrink(rec.jobid, paths=rec.paths)
        self._forget(pod)
        return True

    def _forget(self, pod: str) -> None:
        rec = self.pods.pop(pod)
        self._full.discard(rec.node)
        self._cursor = min(self._cursor, self._pos.get(rec.node, self._cursor))
        left_here = self.per_node.get(rec.node, 0) - 1
        if left_here > 0:
            self.per_node[rec.node] = left_here
        else:
            self.per_node.pop(rec.node, None)
        grp = self.groups.get(rec.group)
        if grp is None:
            return
        grp.pods.discard(pod)
        left = grp.nodes.get(rec.node, 0) - 1
        if left > 0:
            grp.touch(rec.node)  # room was made on a node the group still holds
        else:
            grp.recent.pop(rec.node, None)
        if left > 0:
            grp.nodes[rec.node] = left
        else:
            grp.nodes.pop(rec.node, None)
        if not grp.pods:
            if grp.jobid is not None and grp.jobid in self.engine.jobs:
                self.engine.cancel(grp.jobid)
            del self.groups[rec.group]

    # ------------------------------------------------------------------ accounting / restart
    def account(self, pod: str, node: str, req: PodRequest) -> Placement:
        """Account a pod another scheduler bound to ``node``: its own job, on that node only.

        Raises :class:`BusyError` when the node does not have the pod's
        resources free (the other scheduler overcommitted it) and
        :class:`InputError` for an unknown node; then nothing changed.
        """
        if node not in self.nodes:
            raise InputError(f"pod {pod} is bound to unknown node {node}")
        return self.place(pod, f"foreign/{pod}", req, {"hostlist": [node]})

    def restore(self, pod: str, group: str, record: dict[str, Any]) -> Placement:
        """Re-allocate a pod's resources from its bind-time annotation (after a restart).

        The first pod of a group makes the job; later ones are added to it
        (``update_allocate``).  Raises :class:`InputError` if the record names
        vertices that do not exist (any more) and :class:`StateError` if they
        are not free; then nothing changed.
        """
        from fluxlite.writers.jgf import subgraph_jgf

        if pod in self.pods:
            raise StateError(f"pod {pod} already holds resources", pod=pod)
        g = self.engine.graph
        npath = self.node_path.get(record.get("node", ""))
        if npath is None or npath != record.get("path"):
            raise InputError(f"pod {pod}: recorded node {record.get('node')!r} is not in the graph")
        vids: list[int] = []
        excl: list[int] = []
        items: list[tuple[str, int, bool]] = []
        for rel, units, x in record.get("own", ()):
            path = f"{npath}/{rel}" if rel else npath
            v = g.vertex_by_path(path)
            if v is None:
                raise InputError(f"pod {pod}: recorded vertex {path} is not in the graph")
            vids.append(v)
            if x:
                excl.append(v)
            items.append((path, units, bool(x)))
        anc = g.ancestors(vids[0], DOM) if vids else []
        grp = self.groups.get(group)
        if grp is None:
            grp = self.groups[group] = _Group(group)
        jobid = grp.jobid if grp.jobid is not None else max(self.engine.jobs, default=0) + 1
        try:
            self.engine.update_allocate(jobid, subgraph_jgf(g, [*anc, *vids], exclusive=excl), fmt=None)
        except BaseException:
            if not grp.pods:
                del self.groups[group]
            raise
        pl = Placement(record["node"], items, jobid, grp.jobid is not None)
        self._remember(pod, grp, pl)
        return pl

    # ------------------------------------------------------------------ reports
    def summary(self) -> dict[str, Any]:
        g = self.engine.graph
        return {
            "nodes": len(self.nodes),
            "nodes_down": sum(1 for n in self.nodes.values() if not n.up),
            "vertices": len(g),
            "groups": len(self.groups),
            "pods": len(self.pods),
            "jobs": len(self.engine.jobs),
        }
