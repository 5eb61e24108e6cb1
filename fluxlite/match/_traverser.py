"""The depth-first-and-up (DFU) traverser: match, allocate, reserve, cancel.

This is fluxlite's engine.  It walks the dominant subsystem of the resource
graph depth first, asks the match policy to score every vertex that can serve
the jobspec, picks the best ones bottom-up, and then walks the chosen edges
once more to record the allocation (update) and emit it through a match
writer.  The algorithm and its corner cases follow Fluxion's ``dfu_impl``
closely, because fluxlite must produce the same selections as Fluxion for the
same inputs.

State per vertex (columns indexed by the vertex handle, kept aligned with the
graph through the observer interface):

``vspans``
    the vertex's own timeline (exclusive allocations/reservations of it),
``allocs`` / ``resvs``
    job id -> span id of those,
``tags`` / ``xspans``
    jobs that use the vertex or anything below it (exclusivity checks),
``subplan`` / ``job2span``
    the subtree aggregate planner (pruning filter) and each job's span in it.

Complexity: an allocation touches O(allocated + depth) vertices; pruning by
aggregates keeps a match from descending into subtrees that cannot serve it.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fluxlite.graph import UP, ResourceGraph
from fluxlite.jobspec import Tristate
from fluxlite.match._prune import PruneFilters, TypeOrder
from fluxlite.match._scoring import MATCH_MET, MATCH_UNMET, Dfu
from fluxlite.match._vplan import avail_during, overlaps
from fluxlite.match.policies import MatchPolicy
from fluxlite.planner import PlannerMulti

__all__ = [
    "AT_ALLOC",
    "AT_RESERVE",
    "AT_SATISFIABILITY",
    "SYSTEM_DEFAULT_DURATION",
    "SYSTEM_MAX_DURATION",
    "JobMeta",
    "Traverser",
    "calc_count",
    "calc_effective_max",
]

SYSTEM_DEFAULT_DURATION = 43200
SYSTEM_MAX_DURATION = 3153600000
UINT_MAX = 4294967295
UINT64_MAX = 18446744073709551615

AT_ALLOC = 0
AT_RESERVE = 1
AT_SATISFIABILITY = 2

# match kinds
_RESOURCE_MATCH, _SLOT_MATCH, _NONE_MATCH, _PRISTINE_NONE_MATCH = 0, 1, 2, 3

# exploration modes: who chooses among the children explored at a vertex
_MODE_FULL = 0  # an ancestor, among candidates from several subtrees: visit all
_MODE_LOCAL = 1  # this vertex (it matched a resource with children requests)
_MODE_SLOT = 2  # this vertex, forming slots of fixed shape
_MODE_ROOT = 3  # the graph root, a pass-through whose children are all candidates

_TRISTATE_TRUE = Tristate.TRUE
_TRISTATE_FALSE = Tristate.FALSE


def calc_count(r: Any, qc: int) -> int:
    """How many units of resource request ``r`` to select when ``qc`` qualify (Fluxion's calc_count)."""
    c = r.count
    lo, hi = c.min, c.max
    if lo > hi or lo > qc:
        return 0
    op = c.oper
    operand = c.operand
    if op == "+":
        count = qc if qc < hi else hi
        rng = count - lo
        return count - (rng % operand if operand else 0)
    if op == "*":
        if operand == 1:
            return lo
        count = 0
        cur = lo
        while cur <= qc and cur <= hi:
            count = cur
            cur *= operand
            if operand == 0:
                break
        return count
    if op == "^":
        if operand < 2 or lo == 1:
            return lo
        count = 0
        cur = lo
        while cur <= qc and cur <= hi:
            base = cur
            count = cur
            for _ in range(1, operand):
                cur *= base
        return count
    return 0


_NO_MEMO = (-1,)


def _request_sig(resources: Sequence[Any]) -> tuple:
    """A hashable value equal for structurally equal requests."""
    return tuple(
        (r.type, r.count, r.unit, r.label, r.id, r.exclusive, _request_sig(r.with_)) for r in resources
    )


def calc_effective_max(r: Any) -> int:
    return calc_count(r, UINT_MAX)


@dataclass(slots=True)
class JobMeta:
    """What one match is for: job id, window and kind (Fluxion's jobmeta_t)."""

    jobid: int
    at: int
    now: int
    duration: int
    alloc_type: int = AT_ALLOC
    constraint: Any = None
    queue: str = ""


class _ScoreFactor:
    __slots__ = ("add_by", "factor", "multiply_by")

    def __init__(self, add_by: int, multiply_by: int) -> None:
        self.add_by = add_by
        self.multiply_by = multiply_by
        self.factor = 0

    def calc(self, base: int, tie: int) -> int:
        mul = (base + self.add_by) * self.multiply_by
        t = abs(_cmod(tie, self.multiply_by) - 1)
        self.factor = mul + t
        return self.factor


class _Shared(dict):  # type: ignore[type-arg]
    """A per-vertex dict shared by many leaves of one allocation (copy before changing it)."""

    __slots__ = ()


def _drop(col: list[Any], u: int, key: int) -> Any:
    """Remove ``key`` from the dict ``col[u]`` without changing a dict shared with other vertices."""
    d = col[u]
    if len(d) == 1:
        col[u] = None
        return d[key]
    if type(d) is _Shared:
        d = col[u] = dict(d)
    return d.pop(key)


def _own(col: list[Any], u: int) -> dict[Any, Any]:
    """The dict ``col[u]``, created or copied so that changing it affects only ``u``."""
    d = col[u]
    if d is None:
        d = col[u] = {}
    elif type(d) is _Shared:
        d = col[u] = dict(d)
    return d


def _cmod(a: int, b: int) -> int:
    """C's % (truncates toward zero)."""
    r = abs(a) % b
    return -r if a < 0 else r


class Traverser:
    """Fluxion-compatible DFU traverser over a :class:`ResourceGraph`."""

    def __init__(
        self,
        graph: ResourceGraph,
        policy: MatchPolicy,
        subsystems: Sequence[str] = ("containment",),
        prune_filters: str = "ALL:core,ALL:node",
        graph_start: int = 0,
        graph_end: int = SYSTEM_MAX_DURATION,
    ) -> None:
        self.g = graph
        self.policy = policy
        self.subsystems = list(subsystems)
        self.dom = self.subsystems[0]
        self.graph_start = graph_start
        self.graph_end = graph_end
        self.types = TypeOrder()
        for v in graph.vertices():
            self.types.intern(graph.v_type[v])
        self.prune = PruneFilters(prune_filters, self.types)
        self.descending = policy.descending
        self.factors: dict[str, _ScoreFactor] = {}
        if policy.node_centric:
            self.factors["node"] = _ScoreFactor(1, 10000)
        self.base_exclusive_types: set[str] = {"node"} if policy.node_exclusive else set()
        self.exclusive_types: set[str] = set(self.base_exclusive_types)
        self.stop_on_k = policy.stop_on_first
        #: exact shortcuts over Fluxion's walk (best-first visits with early stops,
        #: skipping subtrees the aggregates rule out, memoized child evaluations);
        #: False gives the plain walk -- the same results, slower (tests compare them)
        self.shortcuts = True
        self.multilevel = 0
        # traversal bookkeeping
        self.token = 0
        self.trav_level = 0
        self.preorder = 0
        self.postorder = 0
        self.total_preorder = 0
        self.total_postorder = 0
        self.err_msg = ""
        self.errno: str | int = 0
        self._colors: dict[str, dict[int, int]] = {}
        self._color_base = 0
        # per-vertex state columns
        n = len(graph.v_type)
        self.vspans: list[dict[int, tuple[int, int, int]] | None] = [None] * n
        self.allocs: list[dict[int, int] | None] = [None] * n
        self.resvs: list[dict[int, int] | None] = [None] * n
        self.tags: list[dict[int, int] | None] = [None] * n
        self.xspans: list[dict[int, tuple[int, int]] | None] = [None] * n
        self.subplan: dict[str, list[PlannerMulti | None]] = {}
        self.job2span: dict[str, list[dict[int, int] | None]] = {}
        self._span_seq = 0
        self._leaf_sid = 0
        self._leaf_shared: dict[int, tuple[Any, ...]] = {}
        # per-edge marks of the last select (needs, exclusive, token)
        ne = len(graph.e_src)
        self.e_needs: list[int] = [0] * ne
        self.e_excl: list[bool] = [False] * ne
        self.e_token: list[int] = [0] * ne
        self.e_weight: list[int] = [UINT64_MAX] * ne
        # root virtual edges: subsystem -> (needs, excl, token)
        self.v_rt_edges: dict[str, tuple[int, bool, int]] = {}
        # by_outedges: vid -> sorted keys (-weight, -uniq_id, eid); built lazily
        self._outedges: dict[int, list[tuple[int, int, int]]] = {}
        self._outedges_built = False
        self.nodes_up = 0
        self._select_root = -1
        #: (subsystem, vertex, job) -> older aggregate spans of a job grown with another window
        self._extra_spans: dict[tuple[str, int, int], list[int]] = {}
        self._levels = ["      " + "---" * i for i in range(256)]
        self._locality = policy.order == "locality"
        self._kids_cache: dict[tuple[int, str], dict[str, tuple[list[int], bool, bool, bool]]] = {}
        self._kids_version = -1
        self._child_types: dict[int, frozenset[str]] = {}
        self._leaf_kids: dict[int, str | None] = {}
        #: (wide vertex, job) -> children the job was given (None: unknown, scan them all)
        self._wide_kids: dict[tuple[int, int], list[int] | None] = {}
        self._t0 = graph_start
        #: edges marked with the current token (for wide vertices, whose out-edges are too many to scan)
        self._marked: list[int] = []
        self._marked_by: dict[int, list[int]] | None = None
        self._skip: dict[tuple[int, str, str], tuple[dict[int, int], tuple[str, ...], Any, int]] = {}
        self._skip_of: dict[int, tuple[int, str, str]] = {}
        self._ranges: dict[tuple, tuple[int, list]] = {}
        self._pt_plans: dict[tuple, tuple] = {}
        #: memo of the root's children's evaluations (see _explore_passthrough):
        #: context, child -> (epoch, rc, exclusive, Dfu, marks, preorder, postorder)
        self._memo_ctx: tuple | None = None
        self._memo: dict[int, tuple] = {}
        #: per-vertex change counters, bumped by every update/cancel walk through the vertex
        self._epoch: dict[int, int] = {}
        #: marks of memoized children, applied when the update walk enters them
        self._deferred: dict[int, list[tuple[int, int, bool]]] = {}
        graph.add_observer(self)
        self.initialized = False

    # ------------------------------------------------------------ observers
    def vertex_added(self, vid: int) -> None:
        self.memo_clear()
        self.types.intern(self.g.v_type[vid])
        cols: list[list[Any]] = [self.vspans, self.allocs, self.resvs, self.tags, self.xspans]
        cols.extend(self.subplan.values())
        cols.extend(self.job2span.values())
        for col in cols:
            if vid == len(col):
                col.append(None)
            elif vid < len(col):
                col[vid] = None
            else:
                col.extend([None] * (vid + 1 - len(col)))
        self._outedges.pop(vid, None)

    def vertices_added(self, vids: Sequence[int]) -> None:
        """Bulk form of :meth:`vertex_added`.  O(len(vids))."""
        self.memo_clear()
        g = self.g
        for t in {g.v_type[v] for v in vids}:
            self.types.intern(t)
        cols: list[list[Any]] = [self.vspans, self.allocs, self.resvs, self.tags, self.xspans]
        cols.extend(self.subplan.values())
        cols.extend(self.job2span.values())
        hi = max(vids, default=-1)
        for col in cols:
            if len(col) <= hi:
                col.extend([None] * (hi + 1 - len(col)))
            for v in vids:
                if col[v] is not None:
                    col[v] = None
        oe = self._outedges
        if oe:
            for v in vids:
                oe.pop(v, None)

    def vertex_removed(self, vid: int) -> None:
        self.memo_clear()
        for col in (self.vspans, self.allocs, self.resvs, self.tags, self.xspans):
            if vid < len(col):
                col[vid] = None
        for col in (*self.subplan.values(), *self.job2span.values()):
            if vid < len(col):
                col[vid] = None
        self._outedges.pop(vid, None)

    def _sync_edges(self) -> None:
        n = len(self.g.e_src)
        if len(self.e_needs) < n:
            k = n - len(self.e_needs)
            self.e_needs.extend([0] * k)
            self.e_excl.extend([False] * k)
            self.e_token.extend([0] * k)
            self.e_weight.extend([UINT64_MAX] * k)

    # ------------------------------------------------------------ colors
    def _reset_color(self) -> None:
        self._colors = {}

    def _stop_explore(self, tgt: int, ss: str) -> bool:
        c = self._colors.get(ss)
        return c is not None and tgt in c

    def _set_color(self, v: int, ss: str) -> None:
        c = self._colors.get(ss)
        if c is None:
            c = self._colors[ss] = {}
        c[v] = 1

    def tick(self) -> None:
        self.token += 1
        self._marked = []
        self._deferred = {}
        self._reset_color()

    def memo_clear(self) -> None:
        """Forget memoized evaluations (after a change that no update/cancel walk made)."""
        self._memo = {}
        self._memo_ctx = None

    # ------------------------------------------------------------ initialize
    def initialize(self) -> None:
        """(Re)build every subtree aggregate from the graph (Fluxion's prime_pruning_filter).

        O(V).  Existing job spans in aggregates are dropped, so call it only on a
        graph without allocations (load, attach of free resources, removal).
        """
        self.memo_clear()
        self._sync_edges()
        n = len(self.g.v_type)
        for col in (self.vspans, self.allocs, self.resvs, self.tags, self.xspans):
            if len(col) < n:
                col.extend([None] * (n - len(col)))
        self._reset_color()
        self._skip.clear()
        self._skip_of.clear()
        for ss in self.subsystems:
            if ss not in self.g.roots:
                raise LookupError(f"subsystem {ss!r} has no root in this graph")
            old = self.subplan.get(ss)
            self.subplan[ss] = [None] * n
            j2s = self.job2span.get(ss)
            if j2s is None or len(j2s) < n:
                self.job2span[ss] = (j2s or []) + [None] * (n - len(j2s or []))
            self._prime(ss, self.g.roots[ss], {}, old)
        self._reset_color()
        self._count_nodes_up()
        if self.stop_on_k and not self._outedges_built:
            self._build_outedges()
        self.initialized = True

    def _count_nodes_up(self) -> None:
        vt, st = self.g.v_type, self.g.v_status
        self.nodes_up = sum(1 for v in self.g.vertices() if vt[v] == "node" and st[v] == UP)

    def _accum_if(self, t: str, count: int, acc: dict[str, int]) -> None:
        if t in self.prune.total:
            acc[t] = acc.get(t, 0) + count

    def _prime(self, ss: str, u: int, to_parent: dict[str, int], old: list | None) -> None:
        g = self.g
        self._set_color(u, ss)
        t = g.v_type[u]
        self._accum_if(t, g.v_size[u], to_parent)
        if not any(g.out[s][u] for s in g.out):
            # Like Fluxion, every leaf type is tracked at the cluster level
            # even when the filter spec does not name it.
            if t not in self.prune.total:
                self.prune.add("cluster", t)
                self._accum_if(t, g.v_size[u], to_parent)
            return
        dfv: dict[str, int] = {}
        dst = g.e_dst
        col = self._colors[ss]
        for e in g.out[ss][u]:
            v = dst[e]
            if v in col:
                continue
            self._prime(ss, v, dfv, old)
        for tt, c in dfv.items():
            self._accum_if(tt, c, to_parent)
        ptypes = self.prune.types_for(t)
        if not ptypes:
            return
        avail = [dfv.get(pt, 0) for pt in ptypes]
        self.subplan[ss][u] = PlannerMulti(self.graph_start, self.graph_end - self.graph_start, avail, ptypes)

    # ------------------------------------------------------------ outedges (first policy)
    def _build_outedges(self) -> None:
        g = self.g
        uniq = g.v_uniq
        self._outedges = {}
        for ss_col in g.out.values():
            for u, lst in enumerate(ss_col):
                if lst:
                    keys = self._outedges.setdefault(u, [])
                    for e in lst:
                        keys.append((-self.e_weight[e], -uniq[g.e_dst[e]], e))
        for keys in self._outedges.values():
            keys.sort()
        self._outedges_built = True

    def _outedge_order(self, u: int) -> list[tuple[int, int, int]] | None:
        if not self._outedges_built:
            self._build_outedges()
        keys = self._outedges.get(u)
        if keys is None:
            g = self.g
            lst = [e for col in g.out.values() for e in col[u]]
            if not lst:
                return None
            keys = sorted((-self.e_weight[e], -g.v_uniq[g.e_dst[e]], e) for e in lst)
            self._outedges[u] = keys
        return keys

    def _upd_by_outedges(self, ss: str, meta: JobMeta, u: int, e: int) -> None:
        g = self.g
        tgt = g.e_dst[e]
        col = self.subplan.get(ss)
        p = col[tgt] if col is not None else None
        if p is None:
            return
        n = p.resources_len
        if n == 0:
            return
        avail = p.avail_resources_at(meta.now, n - 1)
        if avail == 0 and p.span_size == 0:
            return
        keys = self._outedge_order(u)
        if keys is None:
            return
        old = (-self.e_weight[e], -g.v_uniq[tgt], e)
        i = bisect.bisect_left(keys, old)
        if i < len(keys) and keys[i] == old:
            del keys[i]
        w = 0 if avail < 0 else avail
        self.e_weight[e] = w
        bisect.insort(keys, (-w, -g.v_uniq[tgt], e))

    # ------------------------------------------------------------ jobspec priming
    def prime_jobspec(
        self, resources: Sequence[Any], to_parent: dict[str, int], ud: dict[int, dict[str, int]]
    ) -> None:
        """Aggregate requested pruning-type counts into each request node (Fluxion's user_data)."""
        for r in resources:
            self.types.intern(r.type)
            if r.exclusive is _TRISTATE_TRUE:
                self.exclusive_types.add(r.type)
            self._accum_if(r.type, r.count.min, to_parent)
            mine = ud.setdefault(id(r), {})
            self.prime_jobspec(r.with_, mine, ud)
            for t, c in mine.items():
                self._accum_if(t, r.count.min * c, to_parent)

    # ------------------------------------------------------------ pruning
    def _exclusivity(self, resources: Sequence[Any], u: int) -> bool:
        t = self.g.v_type[u]
        for r in resources:
            if r.exclusive is _TRISTATE_TRUE and r.type == t:
                return True
        return False

    def _avail(self, u: int, at: int, duration: int) -> int:
        return avail_during(self.vspans[u], self.g.v_size[u], at, duration)

    def _by_excl(self, meta: JobMeta, u: int, excl_in: bool, r: Any) -> int:
        rex = r.exclusive
        if excl_in and rex is _TRISTATE_FALSE:
            self.errno = "EINVAL"
            self.err_msg += f"by_excl: exclusivity conflicts at jobspec={r.label} : vertex={self.g.v_name[u]}"
            return -1
        if excl_in or rex is _TRISTATE_TRUE:
            if meta.alloc_type == AT_ALLOC and self.allocs[u]:
                return -1
            xs = self.xspans[u]
            if xs is not None and overlaps(xs, meta.at, meta.duration):
                return -1
        return 0

    def _by_subplan(self, meta: JobMeta, ss: str, u: int, r: Any) -> int:
        col = self.subplan.get(ss)
        p = col[u] if col is not None else None
        if p is None:
            return 0
        ud = self._ud.get(id(r))
        if not ud:
            return 0
        counts = [ud.get(t, 0) for t in p.resource_types]
        return 0 if p.avail_during(meta.at, meta.duration, counts) else -1

    def _prune(self, meta: JobMeta, excl: bool, ss: str, u: int, resources: Sequence[Any]) -> int:
        g = self.g
        if meta.alloc_type != AT_SATISFIABILITY and g.v_status[u] != UP:
            return -1
        t = g.v_type[u]
        if meta.constraint is not None and t == "node" and not self._constraint_match(meta.constraint, u):
            return -1
        if self._avail(u, meta.at, meta.duration) == 0:
            return -1
        for r in resources:
            rt = r.type
            if t != rt and rt != "slot":
                continue
            if rt != "slot" and self._by_excl(meta, u, excl, r) == -1:
                return -1
            if self._by_subplan(meta, ss, u, r) == -1:
                return -1
        return 0

    def _constraint_match(self, constraint: Any, u: int) -> bool:
        g = self.g
        return bool(constraint.match(g.properties(u), g.v_name[u], g.v_rank[u]))

    # ------------------------------------------------------------ match tests
    def _test(
        self, u: int, resources: Sequence[Any], pristine: bool
    ) -> tuple[int, Sequence[Any], int, bool, str]:
        t = self.g.v_type[u]
        slot_r = None
        match_r = None
        nslots = 0
        matched = False
        for r in resources:
            if r.type == t:
                if matched:
                    self.err_msg += f"test: siblings in jobspec request same resource type : {t}.\n"
                    return _NONE_MATCH, resources, nslots, pristine, ""
                match_r = r
                for c in r.with_:
                    if c.type == "slot":
                        slot_r = c
                        nslots = calc_effective_max(c)
                matched = True
            elif r.type == "slot":
                if matched:
                    self.err_msg += f"test: siblings in jobspec request same resource type : {t}.\n"
                    return _NONE_MATCH, resources, nslots, pristine, ""
                slot_r = r
                nslots = calc_effective_max(r)
                matched = True
        if slot_r is not None and self._slot_match(u, slot_r):
            return _SLOT_MATCH, slot_r.with_, nslots, False, slot_r.label
        if match_r is not None:
            return _RESOURCE_MATCH, match_r.with_, nslots, False, ""
        return (_PRISTINE_NONE_MATCH if pristine else _NONE_MATCH), resources, nslots, pristine, ""

    def _slot_match(self, u: int, slot_r: Any) -> bool:
        g = self.g
        if self._kids_version != g.version:
            self._kids_cache.clear()
            self._child_types.clear()
            self._leaf_kids.clear()
            self._kids_version = g.version
        child_types = self._child_types.get(u)
        if child_types is None:
            vt, dst = g.v_type, g.e_dst
            child_types = self._child_types[u] = frozenset(
                vt[dst[e]] for col in g.out.values() for e in col[u]
            )
        return all(c.type in child_types for c in slot_r.with_)

    # ------------------------------------------------------------ policy callbacks
    def _dom_discover_vtx(self, u: int) -> int:
        f = self.factors.get(self.g.v_type[u])
        if f is not None:
            vid = self.g.v_id[u]
            if vid < -1:
                return -1
            self.multilevel += f.calc(vid + 1, self.g.v_uniq[u])
        return 0

    def _dom_finish_vtx(self, u: int, resources: Sequence[Any], dfu: Dfu) -> int:
        g = self.g
        t = g.v_type[u]
        score = MATCH_MET
        desc = self.descending
        for r in resources:
            if r.type != t:
                continue
            for c in r.with_:
                qc = dfu.qualified_count(c.type)
                count = calc_count(c, qc)
                if count == 0:
                    score = MATCH_UNMET
                    break
                dfu.choose_accum_best_k(c.type, count, desc)
        if self.policy.order == "locality":
            overall = (score + g.v_id[u] + 1) if score == MATCH_MET else score
        else:
            f = self.factors.get(t)
            if f is not None:
                self.multilevel -= f.factor
            overall = (score + self.multilevel + g.v_id[u] + 1) if score == MATCH_MET else score
        dfu.overall_score = overall
        return 0 if score == MATCH_MET else -1

    def _dom_finish_graph(self, resources: Sequence[Any], dfu: Dfu) -> int:
        score = MATCH_MET
        for r in resources:
            qc = dfu.qualified_count(r.type)
            count = calc_count(r, qc)
            if count == 0:
                score = MATCH_UNMET
                break
            if self.policy.order == "locality":
                self._choose_locality(dfu, r.type, count)
            else:
                dfu.choose_accum_best_k(r.type, count, self.descending)
        dfu.overall_score = score
        self.multilevel = 0
        return 0 if score == MATCH_MET else -1

    def _choose_locality(self, dfu: Dfu, t: str, count: int) -> None:
        """Prefer scores in the highest contiguous run (Fluxion's interval_greater)."""
        ev = dfu.get(t)
        scores = sorted({eg[0] for eg in ev.egroups})
        runs: dict[int, tuple[int, int]] = {}
        i = 0
        while i < len(scores):
            j = i
            while j + 1 < len(scores) and scores[j + 1] == scores[j] + 1:
                j += 1
            for k in range(i, j + 1):
                runs[scores[k]] = (scores[i], scores[j])
            i = j + 1
        from fluxlite.match._scoring import std_sort

        if k := count:
            if k > ev.qual_count:
                return
            std_sort(ev.egroups, lambda a, b: runs[a[0]] > runs[b[0]])
            left = k
            i = 0
            while left > 0:
                left -= ev.egroups[i][1]
                i += 1
            ev.best_k = k
            ev.best_i = i
            dfu.hier_constrain_now = True

    # ------------------------------------------------------------ select
    def select(self, resources: Sequence[Any], root: int, meta: JobMeta, excl: bool) -> int:
        self.tick()
        self.preorder = 0
        self.postorder = 0
        dfu = Dfu()
        self._select_root = root
        rc, x_in = self._dom_dfv(meta, root, resources, True, excl, dfu)
        if rc == 0:
            avail = dfu.avail
            dfu.add(self.g.v_type[root], (dfu.overall_score, avail, excl, True, ((avail, avail, excl, -1),)))
            rc, needs = self._resolve_graph(root, resources, dfu, excl)
            self.v_rt_edges[self.dom] = (needs, x_in, self.token)
        return rc

    def _dom_dfv(
        self, meta: JobMeta, u: int, resources: Sequence[Any], pristine: bool, excl: bool, to_parent: Dfu
    ) -> tuple[int, bool]:
        x_in = excl or self._exclusivity(resources, u)
        sm, nxt, nslots, check_pres, _label = self._test(u, resources, pristine)
        self.preorder += 1
        if sm == _NONE_MATCH:
            return -1, excl
        dom = self.dom
        if self._prune(meta, x_in, dom, u, resources) == -1 or self._dom_discover_vtx(u) != 0:
            return -1, excl
        if self._need_colors:
            self._set_color(u, dom)
        dfu = Dfu()
        if sm == _SLOT_MATCH:
            # The slot is chosen here when u matched a resource that holds it;
            # when the slot came down from a pass-through ancestor, its egroups
            # go up and an ancestor chooses among them.
            local = self._matched_type(u, resources)
            self._dom_slot(meta, u, nxt, nslots, check_pres, dfu, local)
        elif sm == _RESOURCE_MATCH:
            self._dom_exp(meta, u, nxt, check_pres, x_in, dfu, _MODE_LOCAL)
        else:
            mode = _MODE_ROOT if u == self._select_root else _MODE_FULL
            self._dom_exp(meta, u, nxt, check_pres, x_in, dfu, mode)
        avail = self._avail(u, meta.at, meta.duration)
        if avail == 0:
            return -1, x_in
        if self._dom_finish_vtx(u, resources, dfu) != 0:
            return -1, x_in
        rc = self._resolve(dfu, to_parent)
        if rc != 0:
            return rc, x_in
        to_parent.avail = avail
        to_parent.overall_score = dfu.overall_score
        self.postorder += 1
        return 0, x_in

    def _matched_type(self, u: int, resources: Sequence[Any]) -> bool:
        t = self.g.v_type[u]
        return any(r.type == t for r in resources)

    def _dom_exp(
        self, meta: JobMeta, u: int, resources: Sequence[Any], pristine: bool, excl: bool, dfu: Dfu, mode: int
    ) -> int:
        rc = -1
        single = len(self.subsystems) == 1
        for ss in self.subsystems:
            rc = self._explore(
                meta, u, ss, resources, pristine, excl, ss == self.dom, dfu, 1, mode if single else 0
            )
        return rc

    def _explore(
        self,
        meta: JobMeta,
        u: int,
        ss: str,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        dfv: bool,
        dfu: Dfu,
        multiplier: int,
        mode: int = 0,
    ) -> int:
        if self.stop_on_k:
            return self._explore_dynamically(meta, u, ss, resources, pristine, excl, dfv, dfu, multiplier)
        if dfv and mode and self.shortcuts:
            plan = self._greedy_plan(u, ss, resources, mode, multiplier)
            if plan is not None:
                return self._explore_greedy(meta, u, ss, resources, pristine, excl, dfu, plan)
            if mode == _MODE_ROOT:
                pt = self._passthrough_plan(u, ss, resources)
                if pt is not None:
                    return self._explore_passthrough(meta, u, ss, resources, pristine, excl, dfu, pt)
        return self._explore_statically(meta, u, ss, resources, pristine, excl, dfv, dfu)

    # ------------------------------------------------------------ ordered exploration
    def _kids_by_type(self, u: int, ss: str) -> dict[str, tuple[list[int], bool, bool, bool]]:
        """Children of ``u`` grouped by type: (edges by ascending id, ids distinct, all size 1, all leaves).

        Cached per (vertex, subsystem) until the graph's structure changes.  O(children).
        """
        g = self.g
        if self._kids_version != g.version:
            self._kids_cache.clear()
            self._child_types.clear()
            self._leaf_kids.clear()
            self._kids_version = g.version
        key = (u, ss)
        got = self._kids_cache.get(key)
        if got is not None:
            return got
        dst, vt, vid, vs = g.e_dst, g.v_type, g.v_id, g.v_size
        single = len(g.out) == 1
        col = g.out[ss]
        groups: dict[str, list[int]] = {}
        for e in col[u]:
            t = vt[dst[e]]
            lst = groups.get(t)
            if lst is None:
                groups[t] = [e]
            else:
                lst.append(e)
        got = {}
        for t, eids in groups.items():
            ids = [vid[dst[e]] for e in eids]
            ascending = all(a < b for a, b in itertools.pairwise(ids))
            if ascending:
                distinct = True
            else:
                order = sorted(range(len(eids)), key=ids.__getitem__)
                eids = [eids[i] for i in order]
                distinct = len(set(ids)) == len(ids)
            size1 = all(vs[dst[e]] == 1 for e in eids)
            if single:
                leaves = not any(col[dst[e]] for e in eids)
            else:
                leaves = all(self._is_leaf(dst[e]) for e in eids)
            got[t] = (eids, distinct, size1, leaves)
        self._kids_cache[key] = got
        return got

    def _is_leaf(self, v: int) -> bool:
        for col in self.g.out.values():
            if col[v]:
                return False
        return True

    # ------------------------------------------------------------ skipping sure-dead candidates
    _SKIP_MIN = 64  # children of one type below which a plain scan is cheaper

    def set_now(self, now: int) -> None:
        """Declare the instance's current time: matches at ``now`` may skip full subtrees quickly."""
        if now != self._t0:
            self._t0 = now
            self._skip.clear()
            self._skip_of.clear()

    def _skip_index(
        self, u: int, ss: str, t: str, eids: list[int]
    ) -> tuple[dict[int, int], tuple[str, ...], Any]:
        """Free units at time t0 of each child's subtree, per aggregate type, in candidate order."""
        key = (u, ss, t)
        got = self._skip.get(key)
        if got is not None and got[3] == self.g.version:
            return got[0], got[1], got[2]
        g = self.g
        dst = g.e_dst
        col = self.subplan.get(ss)
        types: tuple[str, ...] = ()
        for e in eids:
            p = col[dst[e]] if col is not None else None
            if p is not None:
                types = tuple(p.resource_types)
                break
        pos = {dst[e]: i for i, e in enumerate(eids)}
        free = np.full((max(len(types), 1), len(eids)), UINT_MAX, dtype=np.int64)
        t0 = self._t0
        for i, e in enumerate(eids):
            p = col[dst[e]] if col is not None else None
            if p is not None and tuple(p.resource_types) == types:
                for k in range(len(types)):
                    free[k, i] = p.avail_resources_at(t0, k)
        self._skip[key] = (pos, types, free, g.version)
        for c in pos:
            self._skip_of[c] = key
        return pos, types, free

    def _agg_touched(self, ss: str, v: int) -> None:
        """Vertex ``v``'s aggregate changed: refresh its entry in its parent's skip index.  O(types)."""
        key = self._skip_of.get(v)
        if key is None or key[1] != ss:
            return
        got = self._skip.get(key)
        if got is None:
            return
        pos, types, free, _version = got
        i = pos.get(v)
        p = self.subplan[ss][v]
        if i is None or p is None or tuple(p.resource_types) != types:
            return
        t0 = self._t0
        for k in range(len(types)):
            free[k, i] = p.avail_resources_at(t0, k)

    def _alive_mask(self, meta: JobMeta, u: int, ss: str, r: Any, kid_type: str, eids: list[int]) -> Any:
        """Boolean array over ``eids`` (children of one type, ascending id): may the subtree hold ``r`` now?

        None means "all of them": the index cannot tell (another time, no
        aggregate counts in the request).  Candidates left out would all be
        pruned by their aggregate; skipping them changes no result.
        """
        ud = self._ud.get(id(r))
        if not ud or meta.at != self._t0 or meta.alloc_type == AT_SATISFIABILITY:
            return None
        _pos, types, free = self._skip_index(u, ss, kid_type, eids)
        mask = None
        for k, t in enumerate(types):
            need = ud.get(t, 0)
            if need > 0:
                row = free[k] >= need
                mask = row if mask is None else (mask & row)
        return mask

    def _alive(self, meta: JobMeta, u: int, ss: str, r: Any, eids: list[int]) -> Sequence[int] | None:
        """Positions in ``eids`` (ascending) whose subtree may hold ``r`` (children of ``r``'s type)."""
        mask = self._alive_mask(meta, u, ss, r, r.type, eids)
        return None if mask is None else np.flatnonzero(mask)

    def _dynamic_alive(
        self, meta: JobMeta, u: int, ss: str, resources: Sequence[Any]
    ) -> tuple[dict[int, int], list[bool]] | None:
        """(child -> position, alive flags) for the children of ``u`` if they are of one requested type."""
        kids = self._kids_by_type(u, ss)
        if len(kids) != 1:
            return None
        (kt,) = kids
        rs = [r for r in resources if r.type == kt]
        if len(rs) != 1:
            return None
        eids = kids[kt][0]
        mask = self._alive_mask(meta, u, ss, rs[0], kt, eids)
        if mask is None:
            return None
        pos = self._skip[(u, ss, kt)][0]
        return pos, mask.tolist()

    # ------------------------------------------------------------ best-first through a pass-through root
    def _subtree_ranges(
        self, u: int, ss: str, kid_type: str, types: frozenset[str]
    ) -> list[dict[str, tuple[int, int, int]]]:
        """Per child of ``u`` of ``kid_type`` (ascending id): type -> (min id, max id, max size) in its subtree.

        Structural (ids and sizes only): cached until the graph's structure
        changes.  O(subtree of u) once.
        """
        key = (u, ss, kid_type, types)
        got = self._ranges.get(key)
        if got is not None and got[0] == self.g.version:
            return got[1]
        g = self.g
        col = g.out[ss]
        dst, vt, vid, vs = g.e_dst, g.v_type, g.v_id, g.v_size
        out: list[dict[str, tuple[int, int, int]]] = []
        for e in self._kids_by_type(u, ss)[kid_type][0]:
            acc: dict[str, list[int]] = {}
            stack = [dst[e]]
            while stack:
                v = stack.pop()
                t = vt[v]
                if t in types:
                    i, sz = vid[v], vs[v]
                    a = acc.get(t)
                    if a is None:
                        acc[t] = [i, i, sz]
                    else:
                        if i < a[0]:
                            a[0] = i
                        if i > a[1]:
                            a[1] = i
                        if sz > a[2]:
                            a[2] = sz
                for e2 in col[v]:
                    stack.append(dst[e2])
            out.append({t: (a[0], a[1], a[2]) for t, a in acc.items()})
        self._ranges[key] = (g.version, out)
        return out

    def _passthrough_plan(self, u: int, ss: str, resources: Sequence[Any]) -> tuple | None:
        """Can the root's children (all of one unrequested type) be visited best-bound-first, exactly?

        Every edge group that reaches the root for the single requested type
        has a score that is a known monotone function of vertex ids (no score
        factors), so each child subtree's id ranges bound the best score it
        can offer.  Children are visited in order of that bound and the visit
        stops once the chosen groups are settled: the last one chosen has a
        score no other group found shares and better than any unvisited
        child can offer.  Otherwise every child is visited and the groups are
        merged in graph order, exactly as a full visit would leave them.
        Returns (resource, child type, child edges, order, bounds) or None.
        """
        if (
            self._locality
            or self.factors
            or self._need_colors
            or len(self.subsystems) != 1
            or len(resources) != 1
        ):
            return None
        r = resources[0]
        kids = self._kids_by_type(u, ss)
        if len(kids) != 1:
            return None
        (kid_type,) = kids
        if kid_type == r.type or kid_type == "slot":
            return None
        need = calc_effective_max(r)
        if need == 0 or need >= UINT_MAX:
            return None
        desc = self.descending
        if r.type == "slot":
            shape: list[tuple[str, int, int]] = []
            for c in r.with_:
                hi = calc_effective_max(c)
                if c.count.min == 0 or hi >= UINT_MAX or any(t == c.type for t, _, _ in shape):
                    return None
                shape.append((c.type, c.count.min, hi))
        else:
            shape = [(r.type, 1, 1)]
        sig = (r.type, tuple(shape), desc)
        ckey = (u, ss, kid_type, sig)
        got = self._pt_plans.get(ckey)
        if got is not None and got[0] == self.g.version:
            return (r, need, *got[1:])
        ranges = self._subtree_ranges(u, ss, kid_type, frozenset(t for t, _, _ in shape))
        slot = r.type == "slot"
        worst = -1 if desc else UINT_MAX * 4
        bounds = []
        for rg in ranges:
            # edge-group score of a vertex: MATCH_MET + 1 + id; of a slot: MATCH_MET + its members' sum
            b = MATCH_MET if slot else 0
            for t, lo, hi in shape:
                x = rg.get(t)
                if x is None:
                    b = worst
                    break
                mn, mx, msz = x
                if desc:
                    b += hi * (MATCH_MET + 1 + mx) if slot else MATCH_MET + 1 + mx
                else:
                    k = -(-lo // msz) if slot else 1
                    b += k * (MATCH_MET + 1 + mn)
            bounds.append(b)
        order = np.argsort(
            -np.asarray(bounds, dtype=np.int64) if desc else np.asarray(bounds, dtype=np.int64), kind="stable"
        )
        sorted_bounds = np.asarray(bounds, dtype=np.int64)[order]
        eids = kids[kid_type][0]
        self._pt_plans[ckey] = (self.g.version, kid_type, eids, order, sorted_bounds)
        return (r, need, kid_type, eids, order, sorted_bounds)

    def _explore_passthrough(
        self,
        meta: JobMeta,
        u: int,
        ss: str,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        dfu: Dfu,
        pt: tuple,
    ) -> int:
        r, need, kid_type, eids, order, bounds = pt
        desc = self.descending
        mask = self._alive_mask(meta, u, ss, r, kid_type, eids)
        if mask is not None:
            keep = mask[order]
            order = order[keep]
            bounds = bounds[keep]
        order_l = order.tolist()
        bounds_l = bounds.tolist()
        g = self.g
        dst, vt = g.e_dst, g.v_type
        key = r.type
        found: list[tuple[int, int]] = []
        best = None
        visited: list[tuple[int, Dfu]] = []
        n = len(order_l)
        # A child's evaluation depends only on its subtree's state and on the
        # request: reuse it while no update/cancel walk went through the child.
        ctx = (
            _request_sig(resources),
            meta.at,
            meta.duration,
            meta.alloc_type,
            excl,
            pristine,
            meta.constraint,
        )
        if ctx != self._memo_ctx:
            self._memo = {}
            self._memo_ctx = ctx
        memo, epoch, deferred = self._memo, self._epoch, self._deferred
        col = g.out[ss]
        marked = self._marked
        e_needs, e_excl = self.e_needs, self.e_excl
        for j in range(n):
            if best is not None:
                nb = bounds_l[j]
                if (best > nb if desc else best < nb) and self._settled(found, need, nb, desc):
                    break
            e = eids[order_l[j]]
            tgt = dst[e]
            ep = epoch.get(tgt, 0)
            got = memo.get(tgt)
            if got is None and not col[tgt]:
                # a leaf child: its updates do not pass through _upd_dfv; never memoized
                got = _NO_MEMO
            if got is not None and got[0] == ep:
                _ep, rc, x, cd, marks, pre, post = got
                self.preorder += pre
                self.postorder += post
                if rc != 0:
                    continue
                if marks:
                    deferred[tgt] = marks
            else:
                m0, pre0, post0 = len(marked), self.preorder, self.postorder
                err0 = (self.err_msg, self.errno)
                cd = Dfu()
                rc, x = self._dom_dfv(meta, tgt, resources, pristine, excl, cd)
                if rc == 0:
                    count = cd.avail
                    cd.add(vt[tgt], (cd.overall_score, count, x, False, ((count, count, x, e),)))
                if (self.err_msg, self.errno) == err0 and got is not _NO_MEMO:
                    marks = [(m, e_needs[m], e_excl[m]) for m in marked[m0:]]
                    memo[tgt] = (ep, rc, x, cd, marks, self.preorder - pre0, self.postorder - post0)
                if rc != 0:
                    continue
            visited.append((e, cd))
            ev = cd.evals.get(key)
            if ev is not None:
                for eg in ev.egroups:
                    s = eg[0]
                    found.append((s, eg[1]))
                    if best is None or (s > best if desc else s < best):
                        best = s
        if not visited:
            return -1
        seq = g.e_seq
        visited.sort(key=lambda item: seq[item[0]])
        for _e, cd in visited:
            dfu.merge(cd)
        return 0

    @staticmethod
    def _settled(found: list[tuple[int, int]], need: int, next_bound: int, desc: bool) -> bool:
        """Are the best groups covering ``need`` units fixed, whatever the unvisited children hold?"""
        fs = sorted(found, key=lambda sc: sc[0], reverse=desc)
        acc = 0
        for i, (s, c) in enumerate(fs):
            acc += c
            if acc >= need:
                if not (s > next_bound if desc else s < next_bound):
                    return False
                if i + 1 < len(fs) and fs[i + 1][0] == s:
                    return False
                return i == 0 or fs[i - 1][0] != s
        return False

    def _greedy_plan(
        self, u: int, ss: str, resources: Sequence[Any], mode: int, scale: int
    ) -> list[tuple[Any, list[int], int, bool]] | None:
        """Can the children of ``u`` be visited best-first with an early stop, exactly?

        Yes when the choice among them is made right here (or at the graph
        root for a pass-through root), every candidate's score is known before
        visiting it (its id), scores of one type are distinct, and the number
        needed is bounded.  Returns (resource, edges best-first, need, leaves)
        per requested type, or None.
        """
        if self._locality and mode == _MODE_ROOT:
            return None
        kids = self._kids_by_type(u, ss)
        if mode == _MODE_ROOT and (len(resources) != 1 or set(kids) != {resources[0].type}):
            return None
        plan = []
        for r in resources:
            if r.type == "slot":
                return None
            entry = kids.get(r.type)
            if entry is None:
                continue
            eids, distinct, size1, leaves = entry
            if not distinct:
                return None
            need = calc_effective_max(r)
            if need == 0 or need >= UINT_MAX:
                return None
            if mode == _MODE_SLOT:
                if not size1 or r.count.min != r.count.max:
                    return None
                need *= scale
            plan.append((r, eids, need, leaves and not r.with_))
        return plan

    def _explore_greedy(
        self,
        meta: JobMeta,
        u: int,
        ss: str,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        dfu: Dfu,
        plan: list[tuple[Any, list[int], int, bool]],
    ) -> int:
        g = self.g
        dst = g.e_dst
        factors = self.factors
        desc = self.descending
        rc2 = -1
        for r, eids, need, leaves in plan:
            t = r.type
            ev = dfu.get(t)
            qc = 0
            if not leaves and len(eids) >= self._SKIP_MIN:
                alive = self._alive(meta, u, self.dom, r, eids)
                if alive is not None:
                    src = eids
                    eids = (src[i] for i in (alive[::-1] if desc else alive))  # type: ignore[assignment]
                elif desc:
                    eids = eids[::-1]
            elif desc:
                eids = eids[::-1]
            if leaves and t not in factors and t != "node" and not (excl and r.exclusive is _TRISTATE_FALSE):
                # leaf children evaluated inline: dom_dfv of a leaf without the call
                if self._eval_leaves(meta, eids, r, excl, ev, need - qc):
                    rc2 = 0
                continue
            for e in eids:
                tgt = dst[e]
                rc, x = self._dom_dfv(meta, tgt, resources, pristine, excl, dfu)
                if rc != 0:
                    continue
                score, count = dfu.overall_score, dfu.avail
                ev.add((score, count, x, False, ((count, count, x, e),)))
                rc2 = 0
                if score > 0:
                    qc += count
                    if qc >= need:
                        break
        return rc2

    def _explore_statically(
        self,
        meta: JobMeta,
        u: int,
        ss: str,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        dfv: bool,
        dfu: Dfu,
    ) -> int:
        g = self.g
        rc2 = -1
        col = g.out.get(ss)
        if col is None:
            return rc2
        dst, vt = g.e_dst, g.v_type
        colors = self._colors.get(ss) if self._need_colors else None
        for e in col[u]:
            tgt = dst[e]
            if colors is not None and tgt in colors:
                continue
            if dfv:
                rc, x = self._dom_dfv(meta, tgt, resources, pristine, excl, dfu)
            else:
                rc, x = self._aux_upv(meta, tgt, ss, resources, pristine, excl, dfu)
            if rc == 0:
                count = dfu.avail
                eg = (dfu.overall_score, count, x, False, ((count, count, x, e),))
                if dfv:
                    dfu.add(vt[tgt], eg)
                else:
                    dfu.add((ss, vt[tgt]), eg)  # type: ignore[arg-type]
                rc2 = 0
        return rc2

    def _explore_dynamically(
        self,
        meta: JobMeta,
        u: int,
        ss: str,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        dfv: bool,
        dfu: Dfu,
        multiplier: int,
    ) -> int:
        g = self.g
        keys = self._outedge_order(u)
        if keys is None:
            return -1
        dst, vt, ess = g.e_dst, g.v_type, g.e_ss
        sat_types: set[str] = set()
        required = [(r.type, multiplier * calc_effective_max(r)) for r in resources]
        colors = self._colors.get(ss) if self._need_colors else None
        leaf_ok = dfv and colors is None and len(g.out) == 1 and self._leaf_requests(resources)
        col = g.out[ss] if leaf_ok else None
        if leaf_ok:
            by_type = {r.type: r for r in resources}
            vid = g.v_id
            base = MATCH_MET + 1 + (0 if self._locality else self.multilevel)
            if len(resources) == 1:
                r = resources[0]
                if (
                    not r.with_
                    and not (excl and r.exclusive is _TRISTATE_FALSE)
                    and self._leaf_kids_type(u, keys) == r.type
                ):
                    return self._leaves_dynamically(meta, keys, r, required[0][1], excl, dfu)
        rc2 = -1
        # After a few failed children of a wide vertex, consult the skip index:
        # children whose aggregates rule them out are passed over unvisited.
        misses = 0 if (dfv and self.shortcuts and len(keys) >= self._SKIP_MIN) else -1
        alive: list[bool] | None = None
        apos: dict[int, int] = {}
        for _w, _uq, e in keys:
            if ess[e] != ss:
                continue
            tgt = dst[e]
            if colors is not None and tgt in colors:
                continue
            if alive is not None:
                i = apos.get(tgt)
                if i is not None and not alive[i]:
                    continue
            elif misses > 2:
                misses = -1
                got = self._dynamic_alive(meta, u, ss, resources)
                if got is not None:
                    apos, alive = got
                    i = apos.get(tgt)
                    if i is not None and not alive[i]:
                        continue
            t = vt[tgt]
            if t in sat_types:
                continue
            if col is not None and not col[tgt]:
                # a leaf: dom_dfv inlined
                self.preorder += 1
                r = by_type.get(t)
                if r is None or r.with_:
                    continue
                x = excl or r.exclusive is _TRISTATE_TRUE
                if excl and r.exclusive is _TRISTATE_FALSE:
                    self._by_excl(meta, tgt, x, r)
                    continue
                count = self._leaf_units(meta, tgt, x)
                if count == 0:
                    continue
                self.postorder += 1
                dfu.add(t, (base + vid[tgt], count, x, False, ((count, count, x, e),)))
            else:
                if dfv:
                    rc, x = self._dom_dfv(meta, tgt, resources, pristine, excl, dfu)
                else:
                    rc, x = self._aux_upv(meta, tgt, ss, resources, pristine, excl, dfu)
                if rc != 0:
                    if misses >= 0:
                        misses += 1
                    continue
                count = dfu.avail
                key = t if dfv else (ss, t)
                dfu.add(key, (dfu.overall_score, count, x, False, ((count, count, x, e),)))  # type: ignore[arg-type]
            enough = True
            for rt, req in required:
                k = rt if dfv else (ss, rt)
                if dfu.total_count(k) >= req:  # type: ignore[arg-type]
                    sat_types.add(rt)
                else:
                    enough = False
            rc2 = 0
            if enough:
                break
        return rc2

    def _leaf_kids_type(self, u: int, keys: list[tuple[int, int, int]]) -> str | None:
        """The type of ``u``'s children if they are all leaves of one type (single subsystem), else None."""
        g = self.g
        if self._kids_version != g.version:
            self._kids_cache.clear()
            self._child_types.clear()
            self._leaf_kids.clear()
            self._kids_version = g.version
        got = self._leaf_kids.get(u, False)
        if got is not False:
            return got  # type: ignore[return-value]
        dst, vt = g.e_dst, g.v_type
        col = next(iter(g.out.values()))
        t = vt[dst[keys[0][2]]]
        for _w, _uq, e in keys:
            v = dst[e]
            if vt[v] != t or col[v]:
                t = None
                break
        self._leaf_kids[u] = t
        return t

    def _leaves_dynamically(
        self, meta: JobMeta, keys: list[tuple[int, int, int]], r: Any, req: int, excl: bool, dfu: Dfu
    ) -> int:
        """_explore_dynamically over children that are all leaves of the one requested type ``r``."""
        ev = dfu.get(r.type)
        if ev.total_count >= req:
            return -1
        got = self._eval_leaves(meta, (e for _w, _uq, e in keys), r, excl, ev, req - ev.total_count)
        return 0 if got else -1

    def _leaf_units(self, meta: JobMeta, v: int, x: bool) -> int:
        """Units of leaf ``v`` usable by the request over the window (0: none).

        The same test as :meth:`_eval_leaves`' loop, which keeps it inline for speed.
        """
        g = self.g
        if meta.alloc_type != AT_SATISFIABILITY and g.v_status[v] != UP:
            return 0
        sp = self.vspans[v]
        count = g.v_size[v] if sp is None else avail_during(sp, g.v_size[v], meta.at, meta.duration)
        if count and x:
            if meta.alloc_type == AT_ALLOC and self.allocs[v]:
                return 0
            xs = self.xspans[v]
            if xs is not None and overlaps(xs, meta.at, meta.duration):
                return 0
        return count

    def _eval_leaves(self, meta: JobMeta, eids: Iterable[int], r: Any, excl: bool, ev: Any, want: int) -> int:
        """dom_dfv of leaf children (of ``r``'s type, in ``eids`` order) without the calls.

        Appends an edge group per usable leaf to ``ev`` until ``want`` units
        are found; returns the units found.
        """
        g = self.g
        dst, vstat, vsize, vid = g.e_dst, g.v_status, g.v_size, g.v_id
        vspans, allocs, xspans = self.vspans, self.allocs, self.xspans
        status = meta.alloc_type != AT_SATISFIABILITY
        alloc_check = meta.alloc_type == AT_ALLOC
        at, dur = meta.at, meta.duration
        base = MATCH_MET + 1 + (0 if self._locality else self.multilevel)
        x = excl or r.exclusive is _TRISTATE_TRUE
        egs = ev.egroups
        n0 = len(egs)
        visited = 0
        got = 0
        for e in eids:
            v = dst[e]
            visited += 1
            if status and vstat[v] != UP:
                continue
            sp = vspans[v]
            avail = vsize[v] if sp is None else avail_during(sp, vsize[v], at, dur)
            if avail == 0:
                continue
            if x:
                if alloc_check and allocs[v]:
                    continue
                xs = xspans[v]
                if xs is not None and overlaps(xs, at, dur):
                    continue
            egs.append((base + vid[v], avail, x, False, ((avail, avail, x, e),)))
            got += avail
            if got >= want:
                break
        self.preorder += visited
        self.postorder += len(egs) - n0
        ev.total_count += got
        ev.qual_count += got  # every leaf score is above the cutline
        return got

    def _leaf_requests(self, resources: Sequence[Any]) -> bool:
        """True if leaves can be evaluated inline against ``resources`` (distinct types, no slot, no factor)."""
        types = [r.type for r in resources]
        if len(set(types)) != len(types) or "slot" in types:
            return False
        return not any(t in self.factors or t == "node" for t in types)

    def _aux_upv(
        self,
        meta: JobMeta,
        u: int,
        aux: str,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        to_parent: Dfu,
    ) -> tuple[int, bool]:
        if aux not in self.g.roots:
            return -1, excl
        if self._prune(meta, excl, aux, u, resources) == -1:
            return -1, excl
        upv = Dfu()
        if u != self.g.roots[aux]:
            self._explore(meta, u, aux, resources, pristine, excl, False, upv, 1)
        if self._avail(u, meta.at, meta.duration) == 0:
            return -1, excl
        return self._resolve(upv, to_parent), excl

    def _cnt_slot(self, slot_shape: Sequence[Any], dfu_slot: Dfu) -> int:
        qual = UINT_MAX
        for elem in slot_shape:
            ev = dfu_slot.evals.get(elem.type)
            qc = ev.qual_count if ev is not None else 0
            qg = len(ev.egroups) if ev is not None else 0
            count = calc_count(elem, qc)
            fit = 0 if count == 0 else qc // count
            if fit > qg:
                fit = qg
            if fit < qual:
                qual = fit
        return qual

    def _dom_slot(
        self,
        meta: JobMeta,
        u: int,
        slot_shape: Sequence[Any],
        nslots: int,
        pristine: bool,
        dfu: Dfu,
        local: bool = False,
    ) -> int:
        dfu_slot = Dfu()
        mode = _MODE_SLOT if local and len(self.subsystems) == 1 else 0
        rc = self._explore(meta, u, self.dom, slot_shape, pristine, True, True, dfu_slot, nslots, mode)
        if rc != 0:
            return -1
        for t in list(dfu_slot.evals):
            dfu_slot.choose_accum_all(t, self.descending)
        qual = self._cnt_slot(slot_shape, dfu_slot)
        groups = []
        iters: dict[str, int] = {}
        for _ in range(qual):
            score = MATCH_MET
            edges = []
            for elem in slot_shape:
                ev = dfu_slot.evals.get(elem.type)
                qc = ev.qual_count if ev is not None else 0
                count = calc_count(elem, qc)
                j = 0
                while j < count:
                    i = iters.get(elem.type, 0)
                    if ev is None or i >= len(ev.egroups):
                        self.err_msg += "dom_slot: not enough slots.\n"
                        return -1
                    iters[elem.type] = i + 1
                    eg = ev.egroups[i]
                    ecount, _n, _x, eid = eg[4][0]
                    edges.append((ecount, ecount, True, eid))
                    score += eg[0]
                    j += ecount
            groups.append((score, 1, True, False, tuple(edges)))
        for grp in groups:
            dfu.add("slot", grp)
        return 0 if qual else -1

    # ------------------------------------------------------------ resolve
    def _resolve(self, dfu: Dfu, to_parent: Dfu) -> int:
        if dfu.overall_score > MATCH_UNMET:
            if dfu.hier_constrain_now:
                for ss in self.subsystems:
                    self._enforce(ss, dfu, False)
            else:
                to_parent.merge(dfu)
        return 0

    def _enforce(self, ss: str, dfu: Dfu, unconstrained: bool) -> None:
        g = self.g
        dom = ss == self.dom
        token = self.token
        e_needs, e_excl, e_token = self.e_needs, self.e_excl, self.e_token
        marked = self._marked
        for key, ev in dfu.evals.items():
            if dom:
                if isinstance(key, tuple):
                    continue
            elif not (isinstance(key, tuple) and key[0] == ss):
                continue
            if not ev.best_k:
                continue
            egs = ev.egroups
            for i in range(ev.best_i):
                eg = egs[i]
                if eg[3]:  # root
                    continue
                for _c, needs, x, eid in eg[4]:
                    e_needs[eid] = needs
                    e_excl[eid] = bool(x)
                    if e_token[eid] != token:
                        e_token[eid] = token
                        marked.append(eid)
                    if unconstrained and dom:
                        self._mark_unconstrained_up(ss, g.e_src[eid], dfu)

    def _mark_unconstrained_up(self, ss: str, parent_v: int, dfu: Dfu) -> None:
        g = self.g
        pcol = g.parent_edge.get(ss)
        if pcol is None:
            return
        token = self.token
        pe = pcol[parent_v]
        while pe >= 0:
            if self.e_token[pe] == token:
                break
            parent_v = g.e_src[pe]
            tgt = g.e_dst[pe]
            tt = g.v_type[tgt]
            ev = dfu.evals.get(tt)
            if ev is not None and not ev.best_k:
                self.e_needs[pe] = g.v_size[tgt]
                self.e_excl[pe] = False
                self.e_token[pe] = token
                self._marked.append(pe)
            pe = pcol[parent_v]

    def _resolve_graph(self, root: int, resources: Sequence[Any], dfu: Dfu, excl: bool) -> tuple[int, int]:
        if self._dom_finish_graph(resources, dfu) != 0:
            return -1, 0
        needs = 1
        rt = self.g.v_type[root]
        for r in resources:
            if r.type == rt:
                count = calc_count(r, dfu.avail)
                if count == 0:
                    return -1, 0
                needs = count
        for ev in dfu.evals.values():
            if ev.qual_count == 0:
                return -1, 0
        for ss in self.subsystems:
            self._enforce(ss, dfu, True)
        return 0, needs

    # ------------------------------------------------------------ update (allocate)
    def _level(self) -> str:
        return "      " + "---" * self.trav_level

    def update(self, root: int, writer: Any, meta: JobMeta) -> int:
        rt = self.v_rt_edges.get(self.dom)
        if rt is None or rt[2] != self.token:
            self.err_msg += "update: resource state wasn't properly set up for update.\n"
            return -1
        needs, excl, _tok = rt
        self._marked_by = None
        self._reset_color()
        self._leaf_shared = {}
        self._span_seq += 1
        self._leaf_sid = self._span_seq
        emit_shadow = self.g.v_type[root] in self.exclusive_types
        self.trav_level = 0
        n = self._upd_dfv(root, writer, needs, excl, meta, True, {}, emit_shadow)
        if n == 0:
            # Fluxion reports nothing here and prints the job as allocated;
            # say what went wrong instead.
            self.err_msg += (
                "update: the selected resources could not be recorded: below its first match a "
                "jobspec must follow the graph's containment levels (a slot must sit directly "
                "above the resources it holds).\n"
            )
        if n > 0:
            writer.emit_tm(meta.at, meta.at + meta.duration)
            if meta.queue:
                writer.emit_attrs("queue", meta.queue)
        return 0 if n > 0 else -1

    def _upd_dfv(
        self,
        u: int,
        writer: Any,
        needs: int,
        excl: bool,
        meta: JobMeta,
        full: bool,
        to_parent: dict[str, int],
        emit_shadow: bool,
        excl_parent: bool = False,
    ) -> int:
        g = self.g
        ep = self._epoch
        ep[u] = ep.get(u, 0) + 1
        if self._deferred:
            marks = self._deferred.pop(u, None)
            if marks:
                self._replay(marks)
        n_plans = 0
        acc: dict[str, int] = {}
        xtypes = self.exclusive_types
        vt = g.v_type
        mod = emit_shadow or vt[u] in xtypes
        excl = excl or mod
        self.trav_level += 1
        level = self.trav_level
        token = self.token
        dom = self.dom
        dst, vsize = g.e_dst, g.v_size
        e_token, e_excl, e_needs = self.e_token, self.e_excl, self.e_needs
        levels = self._levels
        single = len(g.out) == 1
        edges = writer.emits_edges
        # jgf_shorthand: nothing below an exclusive vertex is written
        hide = excl and not writer.emit_exclusive_subtrees
        # leaves that held nothing take dicts shared by the whole allocation (see _upd_leaf)
        record = full and meta.alloc_type != AT_SATISFIABILITY
        table = self.allocs if meta.alloc_type == AT_ALLOC else self.resvs
        tags, xspans, vspans = self.tags, self.xspans, self.vspans
        leaf_shared = self._leaf_shared
        total = self.prune.total
        prefix = None if hide else levels[level + 1]
        emit = writer.emit_vtx
        for ss in self.subsystems:
            col = g.out.get(ss)
            if col is None:
                continue
            out = col[u]
            if not mod and len(out) > 64:
                out = self._marked_out(u)
            for e in out:
                if e_token[e] != token and not mod:
                    continue
                if ss != dom:
                    continue
                tgt = dst[e]
                x = e_excl[e] or mod
                nd = vsize[tgt] if mod else e_needs[e]
                if (not col[tgt]) if single else self._is_leaf(tgt):
                    # a leaf: upd_dfv + upd_sched without the recursion
                    if not (x or vt[tgt] in xtypes):
                        continue
                    if (
                        tags[tgt] is None
                        and xspans[tgt] is None
                        and vspans[tgt] is None
                        and table[tgt] is None
                    ):
                        shared = leaf_shared.get(nd)
                        if shared is None:
                            shared = self._new_leaf_shared(nd, meta)
                        if record:
                            vspans[tgt] = shared[0]
                            table[tgt] = shared[1]
                        tags[tgt] = shared[2]
                        xspans[tgt] = shared[3]
                        t = vt[tgt]
                        if t in total:
                            acc[t] = acc.get(t, 0) + vsize[tgt]
                        if prefix is not None:
                            emit(prefix, g, tgt, nd, None, True)
                    else:
                        self._upd_leaf(tgt, writer, nd, meta, full, acc, prefix)
                    if edges and not hide:
                        writer.emit_edg(levels[level], g, e)
                    n_plans += 1
                    continue
                sub = self._upd_dfv(tgt, writer, nd, x, meta, full, acc, mod, excl)
                if sub > 0:
                    if self.stop_on_k:
                        self._upd_by_outedges(ss, meta, u, e)
                    if edges and not hide:
                        writer.emit_edg(levels[level], g, e)
                    n_plans += sub
            if ss == dom and len(col[u]) > 64:
                # remember which children of a wide vertex the job reached, so
                # that its cancel does not scan them all (None: all of them)
                key = (u, meta.jobid)
                if mod:
                    self._wide_kids[key] = None
                else:
                    have = self._wide_kids.get(key, [])
                    if have is not None:
                        jobid = meta.jobid
                        have.extend(dst[e] for e in out if tags[dst[e]] is not None and jobid in tags[dst[e]])
                        self._wide_kids[key] = have
        return self._upd_sched(u, writer, dom, needs, excl, n_plans, meta, full, acc, to_parent, excl_parent)

    def _replay(self, marks: list[tuple[int, int, bool]]) -> None:
        """Apply the marks a memoized child evaluation made (edges marked since then keep theirs)."""
        token = self.token
        e_token, e_needs, e_excl = self.e_token, self.e_needs, self.e_excl
        by = self._marked_by
        src = self.g.e_src
        touched = set()
        for e, needs, x in marks:
            if e_token[e] == token:
                continue
            e_token[e] = token
            e_needs[e] = needs
            e_excl[e] = x
            self._marked.append(e)
            if by is not None:
                by.setdefault(src[e], []).append(e)
                touched.add(src[e])
        if by is not None:
            seq = self.g.e_seq
            for v in touched:
                by[v].sort(key=seq.__getitem__)

    def _marked_out(self, u: int) -> list[int]:
        """Out-edges of ``u`` marked by the last select, in sibling order.  O(marked)."""
        by = self._marked_by
        if by is None:
            by = self._marked_by = {}
            src = self.g.e_src
            for e in self._marked:
                by.setdefault(src[e], []).append(e)
            seq = self.g.e_seq
            for lst in by.values():
                if len(lst) > 1:
                    lst.sort(key=seq.__getitem__)
        return by.get(u, [])

    def _upd_leaf(
        self,
        v: int,
        writer: Any,
        needs: int,
        meta: JobMeta,
        full: bool,
        acc: dict[str, int],
        prefix: str | None,
    ) -> None:
        """Record an exclusive allocation of leaf ``v`` that already holds state (of another job or window).

        Leaves that held nothing are recorded inline in :meth:`_upd_dfv` with
        dicts shared by the whole allocation; here the leaf's own dicts are
        copied on change.
        """
        jobid = meta.jobid
        table = self.allocs if meta.alloc_type == AT_ALLOC else self.resvs
        at, end = meta.at, meta.at + meta.duration
        if full and meta.alloc_type != AT_SATISFIABILITY:
            self._span_seq += 1
            sid = self._span_seq
            _own(self.vspans, v)[sid] = (at, end, needs)
            _own(table, v)[jobid] = sid
        _own(self.tags, v)[jobid] = jobid
        _own(self.xspans, v)[jobid] = (at, end)
        g = self.g
        t = g.v_type[v]
        if t in self.prune.total:
            acc[t] = acc.get(t, 0) + g.v_size[v]
        if prefix is not None:
            writer.emit_vtx(prefix, g, v, needs, None, True)

    def _new_leaf_shared(self, needs: int, meta: JobMeta) -> tuple[Any, Any, Any, Any]:
        at, end = meta.at, meta.at + meta.duration
        jobid = meta.jobid
        shared = self._leaf_shared[needs] = (
            _Shared({self._leaf_sid: (at, end, needs)}),
            _Shared({jobid: self._leaf_sid}),
            _Shared({jobid: jobid}),
            _Shared({jobid: (at, end)}),
        )
        return shared

    def _new_span_id(self) -> int:
        self._span_seq += 1
        return self._span_seq

    def _upd_sched(
        self,
        u: int,
        writer: Any,
        ss: str,
        needs: int,
        excl: bool,
        n: int,
        meta: JobMeta,
        full: bool,
        acc: dict[str, int],
        to_parent: dict[str, int],
        excl_parent: bool = False,
    ) -> int:
        g = self.g
        if excl:
            n += 1
            if full and meta.alloc_type != AT_SATISFIABILITY:
                sid = self._new_span_id()
                _own(self.vspans, u)[sid] = (meta.at, meta.at + meta.duration, needs)
                table = self.allocs if meta.alloc_type == AT_ALLOC else self.resvs
                _own(table, u)[meta.jobid] = sid
        if n > 0:
            jobid = meta.jobid
            _own(self.tags, u)[jobid] = jobid
            xs = _own(self.xspans, u)
            old = xs.get(jobid)
            if old is None:
                xs[jobid] = (meta.at, meta.at + meta.duration)
            else:  # a grow: the job already uses this vertex
                xs[jobid] = (min(old[0], meta.at), max(old[1], meta.at + meta.duration))
            col = self.subplan.get(ss)
            p = col[u] if col is not None else None
            if p is not None and acc:
                self._add_job_span(ss, u, p, jobid, meta.at, meta.duration, acc)
            if excl:
                self._accum_if(g.v_type[u], g.v_size[u], to_parent)
            else:
                self._accum_if(g.v_type[u], g.v_size[u] - needs, to_parent)
            for t, c in acc.items():
                self._accum_if(t, c, to_parent)
            if not (excl_parent and not writer.emit_exclusive_subtrees):
                writer.emit_vtx(self._levels[self.trav_level], g, u, needs, None, excl)
        self.trav_level -= 1
        return n

    def _add_job_span(
        self, ss: str, u: int, p: PlannerMulti, jobid: int, at: int, duration: int, acc: dict[str, int]
    ) -> None:
        """Record ``acc`` in ``u``'s aggregate for ``jobid``, merging with a span the job already has."""
        types = p.resource_types
        counts = [acc.get(t, 0) for t in types]
        j2s = self.job2span[ss]
        d2 = j2s[u]
        if d2 is None:
            d2 = j2s[u] = {}
        old = d2.get(jobid)
        if old is not None:
            if p.span_window(old) == (at, duration):
                prev = p.span_counts(old)
                p.rem_span(old)
                counts = [a + b for a, b in zip(counts, prev)]
            else:
                self._extra_spans.setdefault((ss, u, jobid), []).append(old)
        d2[jobid] = p.add_span(at, duration, counts)
        self._agg_touched(ss, u)

    def update_allocate(
        self,
        writer: Any,
        jobid: int,
        items: Sequence[tuple[int, int, bool]],
        at: int,
        duration: int,
        reserve: bool = False,
    ) -> int:
        """Allocate exactly ``items`` -- (vertex, units, exclusive) -- to ``jobid`` over a window.

        This is Fluxion's ``update``: the resources come from an R or JGF
        document (typically a subgraph chosen by another instance) rather than
        from a match.  Every exclusive vertex must be free for the window; on
        any conflict nothing changes and ``err_msg`` says which vertex.
        O(items x depth).
        """
        self.memo_clear()
        g = self.g
        dom = self.dom
        self.err_msg = ""
        if dom not in g.roots:
            self.err_msg = "update: the graph has no root\n"
            return -1
        if duration <= 0 or at < self.graph_start or at + duration > self.graph_end:
            self.err_msg = f"update: invalid time window ({at}, {duration})\n"
            return -1
        for v, units, excl in items:
            if excl:
                if self._avail(v, at, duration) < units:
                    self.err_msg = f"update: {g.path(v, dom) or g.v_name[v]} is not free for the window\n"
                    return -1
                if overlaps(self.xspans[v], at, duration) and self.tags[v] and jobid not in self.tags[v]:
                    self.err_msg = f"update: {g.path(v, dom) or g.v_name[v]} is in use by another job\n"
                    return -1
        self._sync_edges()
        self.tick()
        token = self.token
        root = g.roots[dom]
        pcol = g.parent_edge[dom]
        listed = {v for v, _, _ in items}
        for v, units, excl in items:
            pe = pcol[v]
            if pe < 0:
                continue
            self.e_needs[pe] = units
            self.e_excl[pe] = bool(excl)
            self.e_token[pe] = token
            self._marked.append(pe)
            # the path from the root down to the subgraph, shared
            a = g.e_src[pe]
            pe = pcol[a]
            while pe >= 0 and self.e_token[pe] != token and a not in listed:
                self.e_needs[pe] = g.v_size[a]
                self.e_excl[pe] = False
                self.e_token[pe] = token
                self._marked.append(pe)
                a = g.e_src[pe]
                pe = pcol[a]
        root_items = [(u, x) for v, u, x in items if v == root]
        needs, excl = root_items[0] if root_items else (1, False)
        self.v_rt_edges[dom] = (needs, excl, token)
        meta = JobMeta(
            jobid=jobid, at=at, now=at, duration=duration, alloc_type=AT_RESERVE if reserve else AT_ALLOC
        )
        return self.update(root, writer, meta)

    # ------------------------------------------------------------ cancel
    def remove(self, jobid: int) -> int:
        """Free everything job ``jobid`` holds (Fluxion's traverser remove).  O(job's vertices)."""
        root = self.g.roots[self.dom]
        self.preorder = 0
        self.postorder = 0
        self._reset_color()
        tg = self.tags[root]
        if tg is not None and jobid in tg:
            rc = self._mod_dfv(root, jobid)
        else:
            rc = self._mod_exv(jobid)
        self.total_preorder = self.preorder
        self.total_postorder = self.postorder
        return rc

    def _mod_dfv(self, u: int, jobid: int) -> int:
        self.preorder += 1
        tg = self.tags[u]
        if tg is None or jobid not in tg:
            return 0
        ep = self._epoch
        ep[u] = ep.get(u, 0) + 1
        _drop(self.tags, u, jobid)
        xs = self.xspans[u]
        if xs is None or jobid not in xs:
            self.err_msg += "rem_exclusive_filter: jobid isn't found in x_spans table.\n "
            return -1
        _drop(self.xspans, u, jobid)
        self._drop_job_aggregate(u, jobid)
        self._rem_plan(u, jobid)
        dom = self.dom
        rc = 0
        g = self.g
        for ss in self.subsystems:
            if ss != dom:
                continue
            out = g.out[ss][u]
            kids = self._wide_kids.pop((u, jobid), None) if len(out) > 64 else None
            if kids is not None:
                for v in dict.fromkeys(kids):
                    rc += self._mod_dfv(v, jobid)
                continue
            for e in out:
                rc += self._mod_dfv(g.e_dst[e], jobid)
        self.postorder += 1
        return rc

    def _rem_plan(self, u: int, jobid: int) -> tuple[int, int, int] | None:
        """Drop ``jobid``'s own span on ``u``; return it as (amount, start, end), or None."""
        for table in (self.allocs, self.resvs):
            d = table[u]
            if d is not None and jobid in d:
                sid = _drop(table, u, jobid)
                sp = self.vspans[u]
                if sp is not None and sid in sp:
                    start, end, amount = _drop(self.vspans, u, sid)
                    return amount, start, end
                return None
        return None

    def _mod_exv(self, jobid: int) -> int:
        self.memo_clear()
        for v in self.g.vertices():
            self._rem_plan(v, jobid)
        return 0

    # ------------------------------------------------------------ elasticity of the graph
    def _subtree_counts(self, ss: str, r: int) -> dict[str, int]:
        """Units of every pruning type in the subtree of ``r`` (``r`` included).  O(subtree)."""
        g = self.g
        out: dict[str, int] = {}
        total = self.prune.total
        vt, vs, dst = g.v_type, g.v_size, g.e_dst
        col = g.out.get(ss)
        stack = [r]
        while stack:
            v = stack.pop()
            t = vt[v]
            if t in total:
                out[t] = out.get(t, 0) + vs[v]
            if col is not None:
                stack.extend(dst[e] for e in col[v])
        return out

    def _shift_totals(self, ss: str, a: int, delta: dict[str, int], sign: int) -> None:
        p = self.subplan[ss][a]
        if p is None:
            t = self.g.v_type[a]
            ptypes = self.prune.types_for(t)
            if not ptypes or sign < 0:
                return
            avail = [delta.get(pt, 0) for pt in ptypes]
            self.subplan[ss][a] = PlannerMulti(
                self.graph_start, self.graph_end - self.graph_start, avail, ptypes
            )
            return
        types = p.resource_types
        totals = [max(0, p.resource_total_at(i) + sign * delta.get(t, 0)) for i, t in enumerate(types)]
        p.update(totals, types)
        self._agg_touched(ss, a)

    def attach_update(self, new: Sequence[int]) -> None:
        """Account for vertices just attached to the graph.

        New internal vertices get their own aggregates, and every existing
        ancestor of a new subtree has its aggregate totals raised; existing
        job spans are kept.  O(new + ancestors of the attach points).
        """
        self.memo_clear()
        g = self.g
        self._sync_edges()
        n = len(g.v_type)
        for col in (self.vspans, self.allocs, self.resvs, self.tags, self.xspans):
            if len(col) < n:
                col.extend([None] * (n - len(col)))
        newset = set(new)
        for ss in self.subsystems:
            if ss not in self.subplan:
                continue
            col = self.subplan[ss]
            if len(col) < n:
                col.extend([None] * (n - len(col)))
            j2s = self.job2span[ss]
            if len(j2s) < n:
                j2s.extend([None] * (n - len(j2s)))
            pcol = g.parent_edge.get(ss)
            for v in new:
                pe = pcol[v] if pcol is not None else -1
                parent = g.e_src[pe] if pe >= 0 else None
                if parent is not None and parent in newset:
                    continue
                self._colors = {}
                contrib: dict[str, int] = {}
                self._prime(ss, v, contrib, None)
                for a in g.ancestors(v, ss):
                    self._shift_totals(ss, a, contrib, +1)
        self._reset_color()
        for v in new:
            if g.v_type[v] == "node" and g.v_status[v] == UP:
                self.nodes_up += 1
        if self._outedges_built:
            for v in new:
                self._outedges.pop(v, None)
                for ss in g.out:
                    p = g.parent(v, ss)
                    if p is not None:
                        self._outedges.pop(p, None)

    def account_removal(self, roots: Sequence[int]) -> None:
        """Lower ancestors' aggregate totals for subtrees about to be removed.  O(subtrees + depth)."""
        self.memo_clear()
        g = self.g
        for ss in self.subsystems:
            if ss not in self.subplan:
                continue
            for r in roots:
                contrib = self._subtree_counts(ss, r)
                for a in g.ancestors(r, ss):
                    self._shift_totals(ss, a, contrib, -1)
        vt, st = g.v_type, g.v_status
        for r in roots:
            for v in g.subtree(r, self.dom):
                if vt[v] == "node" and st[v] == UP:
                    self.nodes_up -= 1
        if self._outedges_built:
            for r in roots:
                p = g.parent(r, self.dom)
                if p is not None:
                    self._outedges.pop(p, None)

    # ------------------------------------------------------------ partial cancel
    def job_holds(self, u: int, jobid: int) -> bool:
        """True if vertex ``u`` holds any state of ``jobid``."""
        for col in (self.tags, self.allocs, self.resvs, self.xspans):
            d = col[u]
            if d is not None and jobid in d:
                return True
        j2s = self.job2span.get(self.dom)
        d = j2s[u] if j2s is not None else None
        return d is not None and jobid in d

    def _rank_root(self, vids: Iterable[int]) -> int | None:
        """The vertex of a rank with the shortest path (the root of the rank's subtree)."""
        best = None
        blen = -1
        col = self.g.paths.get(self.dom, {})
        for v in vids:
            p = col.get(v)
            if p is not None and (best is None or len(p) < blen):
                best, blen = v, len(p)
        return best

    def plan_partial_release(
        self, jobid: int, ranks: Iterable[int] | None = None, vertices: Iterable[int] | None = None
    ) -> dict[int, list[int]]:
        """Validate a partial release and return rank -> vertices to release.

        Either ``ranks`` (release everything the job holds on those broker
        ranks) or ``vertices`` (release exactly these) is given.  Raises
        ``ValueError`` naming the problem; nothing is changed.
        """
        g = self.g
        by_rank: dict[int, list[int]] = {}
        if ranks is not None:
            for r in ranks:
                vids = g.by_rank.get(r)
                if not vids:
                    raise ValueError(f"rank {r} not found in the resource graph")
                held = [v for v in vids if self.tags[v] is not None and jobid in self.tags[v]]
                if not held:
                    raise ValueError(f"job {jobid} holds nothing on rank {r}")
                by_rank[r] = held
        else:
            for v in vertices or ():
                if not self.job_holds(v, jobid):
                    raise ValueError(f"job {jobid} does not hold {g.path(v, self.dom) or g.v_name[v]}")
                by_rank.setdefault(g.v_rank[v], []).append(v)
            for r, vids in by_rank.items():
                if r < 0:
                    raise ValueError(
                        "a vertex without a broker rank cannot be released on its own: "
                        + ", ".join(g.path(v, self.dom) for v in vids)
                    )
                root = self._rank_root(g.by_rank.get(r, ()))
                if root is not None and root not in vids:
                    raise ValueError(
                        f"the release of rank {r} must include its root {g.path(root, self.dom)}"
                    )
        if not by_rank:
            raise ValueError("nothing to release")
        return by_rank

    def release(self, jobid: int, by_rank: dict[int, list[int]]) -> bool:
        """Release the vertices of :meth:`plan_partial_release`; return True if the job is now gone."""
        self.memo_clear()
        groups = []
        for r, vids in by_rank.items():
            root = self._rank_root(self.g.by_rank.get(r, ()) or vids)
            groups.append((root, vids))
        return self.release_groups(jobid, groups)

    def release_groups(self, jobid: int, groups: list[tuple[int | None, list[int]]]) -> bool:
        """Release groups of vertices (each with the root of its subtree); True if the job is gone.

        Released vertices lose the job's spans, tags and aggregate spans; every
        ancestor's aggregate drops by what was released below it.  When nothing
        but bookkeeping residue is left, the whole job is purged.  O(released +
        depth x ranks).
        """
        self.memo_clear()
        g = self.g
        dom = self.dom
        # accumulate reductions along each group root's ancestor chain
        #: ancestor -> (type, start, end) -> units released below it in that window
        reductions: dict[int, dict[tuple[str, int, int], int]] = {}
        depth: dict[int, int] = {}
        for root, vids in groups:
            if root is None:
                for v in vids:
                    self._purge_vertex(v, jobid)
                continue
            # A listed vertex above resources of the job that stay allocated is
            # not released: it only loses what is released below it (it is
            # reduced as an ancestor).  Everything else listed is purged, and
            # each purged subtree's top reports its amounts to its ancestors.
            vset = set(vids)
            partial = self._keeps_below(jobid, root, vset)
            purge = [v for v in vids if v not in partial]
            pset = set(purge)
            by_top: dict[int, dict[tuple[str, int, int], int]] = {}
            top_of: dict[int, int] = {}
            for v in purge:
                got = self._purge_vertex(v, jobid)
                if got is None:
                    continue
                amount, start, end = got
                path = [v]
                top = v
                while True:
                    known = top_of.get(top)
                    if known is not None:
                        top = known
                        break
                    par = g.parent(top, dom)
                    if par is None or par not in pset:
                        break
                    top = par
                    path.append(top)
                for x in path:
                    top_of[x] = top
                counts = by_top.setdefault(top, {})
                k = (g.v_type[v], start, end)
                counts[k] = counts.get(k, 0) + amount
            for top, counts in by_top.items():
                chain = g.ancestors(top, dom)
                for i, a in enumerate(chain):
                    depth[a] = len(chain) - 1 - i
                    red = reductions.setdefault(a, {})
                    for t, c in counts.items():
                        red[t] = red.get(t, 0) + c
        for u in sorted(reductions, key=lambda a: -depth[a]):
            released_own = self._reduce_ancestor(u, jobid, reductions[u])
            if released_own is not None:
                k = (g.v_type[u], released_own[1], released_own[2])
                for a in g.ancestors(u, dom):
                    red = reductions.get(a)
                    if red is not None:
                        red[k] = red.get(k, 0) + released_own[0]
        root = g.roots[dom]
        tg = self.tags[root]
        if tg is not None and jobid in tg:
            j2s = self.job2span.get(dom)
            if j2s is not None and self.subplan[dom][root] is not None:
                return False
            # no aggregate at the root to tell: the job is gone when what is
            # left holds no resources (tags and empty placeholder spans only)
            for v in self.job_vertices(jobid):
                if j2s is not None and j2s[v] is not None and jobid in j2s[v]:
                    return False
                for table in (self.allocs, self.resvs):
                    d = table[v]
                    if d is not None and jobid in d:
                        sp = self.vspans[v]
                        if sp is not None and sp.get(d[jobid], (0, 0, 0))[2] != 0:
                            return False
        for v in self.job_vertices(jobid):
            self._purge_vertex(v, jobid)
        return True

    def _purge_vertex(self, u: int, jobid: int) -> tuple[int, int, int] | None:
        """Remove every piece of ``jobid``'s state on ``u``; return its own span as (amount, start, end)."""
        for col in (self.tags, self.xspans):
            d = col[u]
            if d is not None and jobid in d:
                _drop(col, u, jobid)
        self._drop_job_aggregate(u, jobid)
        return self._rem_plan(u, jobid)

    def _drop_job_aggregate(self, u: int, jobid: int) -> None:
        """Remove ``jobid``'s spans (of every window) from ``u``'s subtree aggregate."""
        dom = self.dom
        j2s = self.job2span.get(dom)
        d2 = j2s[u] if j2s is not None else None
        if d2 is None or jobid not in d2:
            return
        p = self.subplan[dom][u]
        if p is not None:
            p.rem_span(d2[jobid])
            for sid in self._extra_spans.pop((dom, u, jobid), ()):
                p.rem_span(sid)
            self._agg_touched(dom, u)
        del d2[jobid]
        if not d2:
            j2s[u] = None  # type: ignore[index]

    def _keeps_below(self, jobid: int, root: int, released: set[int]) -> set[int]:
        """Listed vertices of ``root``'s subtree with a vertex of the job below them that is not listed.

        O(subtree of ``root``).
        """
        g = self.g
        dom = self.dom
        tags = self.tags
        order = g.subtree(root, dom)
        keeps: dict[int, bool] = {}
        for v in reversed(order):
            k = False
            for c in g.children(v, dom):
                if keeps.get(c) or (c not in released and tags[c] is not None and jobid in tags[c]):
                    k = True
                    break
            keeps[v] = k
        return {v for v in released if keeps.get(v)}

    def _reduce_ancestor(
        self, u: int, jobid: int, red: dict[tuple[str, int, int], int]
    ) -> tuple[int, int, int] | None:
        """Shrink ``jobid``'s aggregate spans on ancestor ``u`` by ``red`` ((type, start, end) -> units).

        Each reduction goes to the span of the same window (a job grown over
        another window has one span per window); returns what ``u`` released
        of its own span as (amount, start, end), or None.

        An ancestor whose aggregate span drains completely holds nothing of
        the job any more and is purged; one that still holds resources below
        keeps its tag, but an exclusive span of the job on it becomes an empty
        placeholder so the released resources below are usable again.
        """
        dom = self.dom
        j2s = self.job2span.get(dom)
        d2 = j2s[u] if j2s is not None else None
        tg = self.tags[u]
        if tg is None or jobid not in tg or d2 is None or jobid not in d2:
            return None
        p = self.subplan[dom][u]
        drained = False
        if p is not None:
            # the job's spans here: the current one, then those of earlier
            # windows (a grow over another window), newest first
            key = (dom, u, jobid)
            extra = self._extra_spans.get(key, [])
            spans = [d2[jobid], *reversed(extra)]
            types = p.resource_types
            left = dict(red)
            cuts: dict[int, dict[str, int]] = {sp: {} for sp in spans}
            # first what was released in each span's own window, then anything left, newest first
            for exact in (True, False):
                for span in spans:
                    at, dur = p.span_window(span)
                    for i, t in enumerate(types):
                        room = p.span_planned_at(span, i) - cuts[span].get(t, 0)
                        if room <= 0:
                            continue
                        for k, c in left.items():
                            if c <= 0 or k[0] != t or (exact and (k[1], k[2]) != (at, at + dur)):
                                continue
                            take = min(c, room)
                            cuts[span][t] = cuts[span].get(t, 0) + take
                            left[k] = c - take
                            room -= take
                            if room == 0:
                                break
            for span in spans:
                gone = p.reduce_span(span, cuts[span])
                if span == d2[jobid]:
                    drained = gone
                elif gone:
                    extra.remove(span)
            if drained and extra:
                # the current span is gone but an earlier one holds resources: it becomes current
                d2[jobid] = extra.pop()
                drained = False
            if not extra:
                self._extra_spans.pop(key, None)
            self._agg_touched(dom, u)
            if drained:
                del d2[jobid]
                if not d2:
                    j2s[u] = None  # type: ignore[index]
        own = None
        for table in (self.allocs, self.resvs):
            d = table[u]
            if d is not None and jobid in d:
                sp = self.vspans[u]
                sid = d[jobid]
                if sp is not None and sid in sp and sp[sid][2] != 0:
                    start, end, _amount = sp[sid]
                    _own(self.vspans, u)[sid] = (start, end, 0)
                    own = (self.g.v_size[u], start, end)
        if drained:
            self._purge_vertex(u, jobid)
        return own

    # ------------------------------------------------------------ status
    def mark(self, u: int, up: bool) -> None:
        """Set the status of vertex ``u`` (Fluxion's ``set-status``).

        Only ``u`` changes, but a vertex that is down prunes its whole subtree
        from allocations, and the count of nodes up (used to reject requests
        early) drops by every node below it.  Setting the same status twice is
        a no-op.  O(subtree).
        """
        self.memo_clear()
        g = self.g
        new = UP if up else 1
        if g.v_status[u] == new:
            return
        g.v_status[u] = new
        vt, vs = g.v_type, g.v_size
        for v in g.subtree(u, self.dom):
            if vt[v] == "node":
                self.nodes_up += vs[v] if up else -vs[v]

    # ------------------------------------------------------------ run
    def _reset_exclusive_types(self, saved: set[str]) -> None:
        self.exclusive_types = set(saved)

    @property
    def _need_colors(self) -> bool:
        return len(self.subsystems) > 1

    def run(self, jobspec: Any, writer: Any, op: str, jobid: int, at: int = 0) -> tuple[int, int]:
        """Match ``jobspec`` with ``op``; return (rc, at).  On failure ``self.errno`` says why."""
        self.err_msg = ""
        self.errno = 0
        g = self.g
        dom = self.dom
        if dom not in g.roots or not jobspec.resources:
            self.errno = "EINVAL"
            return -1, at
        root = g.roots[dom]
        graph_dur = self.graph_end - self.graph_start
        x = self._exclusivity(jobspec.resources, root)
        saved = set(self.exclusive_types)
        dfv: dict[str, int] = {}
        self._ud: dict[int, dict[str, int]] = {}
        self.prime_jobspec(jobspec.resources, dfv, self._ud)
        dur = jobspec.duration
        if dur > graph_dur:
            self.errno = "EINVAL"
            self._reset_exclusive_types(saved)
            return -1, at
        duration = graph_dur if dur == 0 else int(dur)
        meta = JobMeta(jobid=jobid, at=at, now=at, duration=duration, constraint=jobspec.constraint)
        meta.queue = getattr(jobspec, "queue", "") or ""
        rc = -1
        if op == "satisfiability":
            rc = self._is_satisfiable(jobspec, meta, x, root, dfv)
            if rc == 0:
                self._reset_color()
        else:
            rc = self._schedule(jobspec, meta, x, op, root, dfv)
            if rc == 0:
                at = meta.at
                if at == self.graph_end:
                    self._reset_exclusive_types(saved)
                    self.errno = "EBUSY"
                    return -1, at
                if at < 0 or at > self.graph_end:
                    self._reset_exclusive_types(saved)
                    self.errno = "EINVAL"
                    return -1, at
                if at + meta.duration > self.graph_end:
                    meta.duration = self.graph_end - at
                rc = self.update(root, writer, meta)
        self._reset_exclusive_types(saved)
        return rc, meta.at

    def _root_subplan(self, root: int) -> PlannerMulti | None:
        col = self.subplan.get(self.dom)
        return col[root] if col is not None else None

    def _is_satisfiable(self, jobspec: Any, meta: JobMeta, x: bool, root: int, dfv: dict[str, int]) -> int:
        meta.alloc_type = AT_SATISFIABILITY
        p = self._root_subplan(root)
        base, dur = (
            (p.base_time, p.duration)
            if p is not None
            else (self.graph_start, self.graph_end - self.graph_start)
        )
        meta.at = base + dur - meta.duration - 1
        self.errno = 0
        rc = self.select(jobspec.resources, root, meta, x)
        if rc < 0:
            rc = -1
            if not self.errno:
                self.errno = "ENODEV"
            self._reset_color()
        self.total_preorder = self.preorder
        self.total_postorder = self.postorder
        return rc

    def _request_feasible(self, meta: JobMeta, op: str, dfv: dict[str, int]) -> int:
        """Cheap pre-check on the number of nodes a request needs (Fluxion's request_feasible)."""
        target = dfv.get("node", 0)
        checking_sat = op in ("allocate_with_satisfiability", "satisfiability")
        if meta.constraint is None and target <= self.nodes_up:
            return 0
        if target > self.nodes_up:
            if op in ("allocate_orelse_reserve", "allocate"):
                self.errno = "EBUSY"
                return -1
            if checking_sat:
                self.errno = "ENODEV"
                return -1
        g = self.g
        vt, st = g.v_type, g.v_status
        target_time = meta.at if op == "allocate" else self.graph_end - 1
        feasible = 0
        for v in g.vertices():
            if vt[v] != "node":
                continue
            if meta.constraint is not None and not self._constraint_match(meta.constraint, v):
                continue
            if not checking_sat and st[v] != UP:
                continue
            if target_time + meta.duration > self.graph_end:
                continue
            if self._avail(v, target_time, meta.duration) == 1:
                feasible += 1
                if feasible >= target:
                    break
        if feasible < target:
            if op in ("allocate_orelse_reserve", "allocate"):
                self.errno = "EBUSY"
                return -1
            if checking_sat:
                self.errno = "ENODEV"
                return -1
        return 0

    def _root_has_room(self, root: int, meta: JobMeta, dfv: dict[str, int]) -> bool:
        """Could the root's subtree hold the request at all during the window?  O(types)."""
        p = self._root_subplan(root)
        if p is None or not dfv:
            return True
        counts = [dfv.get(t, 0) for t in p.resource_types]
        if not any(counts):
            return True
        return p.avail_during(meta.at, meta.duration, counts)

    def _schedule(self, jobspec: Any, meta: JobMeta, x: bool, op: str, root: int, dfv: dict[str, int]) -> int:
        resources = jobspec.resources
        if self._request_feasible(meta, op, dfv) < 0:
            return -1
        if not self.shortcuts or self._root_has_room(root, meta, dfv):
            rc = self.select(resources, root, meta, x)
        else:
            # The root's aggregate already shows too few free units: no walk
            # can succeed (the aggregate is an upper bound of what is free).
            self.preorder = self.postorder = 0
            rc = -1
        self.total_preorder = self.preorder
        self.total_postorder = self.postorder
        if rc == 0:
            return 0
        p = self._root_subplan(root)
        base, gdur = (
            (p.base_time, p.duration)
            if p is not None
            else (self.graph_start, self.graph_end - self.graph_start)
        )
        if op == "allocate_with_satisfiability":
            self.errno = "EBUSY"
            meta.alloc_type = AT_SATISFIABILITY
            meta.at = base + gdur - meta.duration - 1
            if self.select(resources, root, meta, x) < 0:
                if self.errno == "EBUSY":
                    self.errno = "ENODEV"
                self._reset_color()
            self.total_preorder += self.preorder
            self.total_postorder += self.postorder
        elif op == "allocate_orelse_reserve":
            self.errno = 0
            meta.alloc_type = AT_RESERVE
            duration = meta.duration
            if p is not None:
                agg = [dfv.get(t, 0) for t in p.resource_types]
                t = p.avail_time_first(meta.at + 1, duration, agg)
                if t is None:
                    self.errno = p.errno or "ENOENT"
                while t is not None and rc and not self.errno:
                    meta.at = t
                    rc = self.select(resources, root, meta, x)
                    self.total_preorder += self.preorder
                    self.total_postorder += self.postorder
                    if rc and not self.errno:
                        t = p.avail_time_next()
                        if t is None:
                            self.errno = p.errno or "ENOENT"
            else:
                self.errno = "ENOENT"
            if rc < 0 and self.errno in ("ENOENT", "ERANGE"):
                self.errno = "EBUSY"
                meta.alloc_type = AT_SATISFIABILITY
                meta.at = base + gdur - duration - 1
                if self.select(resources, root, meta, x) < 0:
                    if self.errno == "EBUSY":
                        self.errno = "ENODEV"
                    self._reset_color()
                self.total_preorder += self.preorder
                self.total_postorder += self.postorder
        elif op == "allocate":
            self.errno = "EBUSY"
        return rc

    # ------------------------------------------------------------ helpers
    def job_vertices(self, jobid: int) -> list[int]:
        """Vertices that hold state of ``jobid`` (allocated, reserved or tagged)."""
        out = []
        tags = self.tags
        for v in self.g.vertices():
            tg = tags[v]
            if tg is not None and jobid in tg:
                out.append(v)
        return out

    def iter_jobs(self) -> Iterable[int]:
        seen: set[int] = set()
        for tg in self.tags:
            if tg:
                seen.update(tg)
        return sorted(seen)
