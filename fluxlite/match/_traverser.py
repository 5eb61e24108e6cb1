"""The depth-first-and-up (DFU) traverser: the facade over the matcher's stages.

This is fluxlite's engine.  It walks the dominant subsystem of the resource
graph depth first, asks the match policy to score every vertex that can serve
the jobspec, picks the best ones bottom-up, and then walks the chosen edges
once more to record the allocation (update) and emit it through a match
writer.  The algorithm and its corner cases follow Fluxion's ``dfu_impl``
closely, because fluxlite must produce the same selections as Fluxion for the
same inputs.

This module owns the state (``__init__``), the entry point :meth:`Traverser.run`
(allocate, reserve, satisfiability) and job queries; each stage lives in its
own module, as Fluxion splits ``dfu_impl.cpp`` / ``dfu_impl_update.cpp``:

- :mod:`fluxlite.match.state` -- per-vertex columns, graph observers, aggregates primed;
- :mod:`fluxlite.match.explore` -- children explored statically or dynamically;
- :mod:`fluxlite.match.shortcuts` -- skip index, best-first, memo (exact shortcuts);
- :mod:`fluxlite.match.select` -- per-vertex tests, scoring, slots, resolve/enforce;
- :mod:`fluxlite.match.update` -- the allocation recorded and emitted;
- :mod:`fluxlite.match.fresh` -- fresh-subtree templates (exact replays of twin subtrees);
- :mod:`fluxlite.match.release` -- cancel, partial release, shrink.

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

from collections.abc import Iterable, Sequence
from typing import Any

from fluxlite.graph import UP, ResourceGraph
from fluxlite.match._common import (
    _TRISTATE_FALSE,
    _TRISTATE_TRUE,
    AT_ALLOC,
    AT_RESERVE,
    AT_SATISFIABILITY,
    SYSTEM_DEFAULT_DURATION,
    SYSTEM_MAX_DURATION,
    UINT64_MAX,
    JobMeta,
    _ScoreFactor,
    calc_count,
    calc_effective_max,
)
from fluxlite.match._prune import PruneFilters, TypeOrder
from fluxlite.match.explore import ExploreStage
from fluxlite.match.fresh import FreshStage
from fluxlite.match.labels import LabelWriter, labels_by_type
from fluxlite.match.policies import MatchPolicy
from fluxlite.match.release import ReleaseStage
from fluxlite.match.select import SelectStage
from fluxlite.match.shortcuts import ShortcutsStage
from fluxlite.match.state import GraphStateStage
from fluxlite.match.update import UpdateStage
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


def _frozen_tree(resources: Any) -> bool:
    """True if the request tree is immutable: tuples of frozen requests all the way down."""
    if type(resources) is not tuple:
        return False
    for r in resources:
        if not getattr(type(r), "__dataclass_params__", None) or not r.__dataclass_params__.frozen:
            return False
        if not _frozen_tree(r.with_):
            return False
    return True


def _walk_may_report(resources: Any) -> bool:
    """Could a walk of this request print a diagnostic on the way, whatever the state?

    The plain walk tests every vertex it visits against the request level
    (``_test``, ``_by_excl``): two requests of one type side by side, a slot
    beside another request, or ``exclusive: false`` (which conflicts under an
    exclusive parent) make it add "siblings in jobspec request same resource
    type" or "exclusivity conflicts" to the error even when nothing fits.  A
    shortcut that skips the walk must not skip those.  O(jobspec).
    """
    types = [r.type for r in resources]
    if len(set(types)) != len(types) or ("slot" in types and len(types) > 1):
        return True
    return any(r.exclusive is _TRISTATE_FALSE or _walk_may_report(r.with_) for r in resources)


def _exclusive_types_of(resources: Any) -> set[str]:
    """The types requested with ``exclusive: true`` anywhere in the tree (what priming adds)."""
    out = set()
    for r in resources:
        if r.exclusive is _TRISTATE_TRUE:
            out.add(r.type)
        out |= _exclusive_types_of(r.with_)
    return out


class Traverser(
    GraphStateStage, ExploreStage, ShortcutsStage, FreshStage, SelectStage, UpdateStage, ReleaseStage
):
    """Fluxion-compatible DFU traverser over a :class:`ResourceGraph`."""

    #: the instance attributes as slots (the mixins have no slots, so instances keep a ``__dict__``
    #: for any other attribute): a slot is read by its descriptor, where a ``__dict__`` attribute
    #: costs a lookup in a dict of a hundred keys after the type's; read everywhere in the walks.
    #: None of these names is a class attribute of the traverser or its mixins (a slot would hide
    #: it; tests/fluxlite/test_traverser_slots.py checks)
    __slots__ = (
        "_allow",
        "_cands",
        "_child_types",
        "_color_base",
        "_colors",
        "_deferred",
        "_drop_memo",
        "_ep_log",
        "_epoch",
        "_extra_spans",
        "_fhint",
        "_flib",
        "_fok",
        "_fok_token",
        "_fsel",
        "_fshape",
        "_fshapes",
        "_fsig_ids",
        "_fsig_keep",
        "_fsig_next",
        "_fsigs",
        "_ftries",
        "_fupd",
        "_futries",
        "_fver",
        "_jv",
        "_jv_add",
        "_kids_cache",
        "_kids_memo",
        "_kids_version",
        "_leaf_ext",
        "_leaf_kids",
        "_leaf_shared",
        "_leaf_sid",
        "_levels",
        "_line_memo",
        "_locality",
        "_marked",
        "_marked_asked",
        "_marked_by",
        "_memo",
        "_memo_ctx",
        "_need_colors",
        "_nodeidx",
        "_outedges",
        "_outedges_built",
        "_primed_reqs",
        "_pt_plans",
        "_ranges",
        "_rootc",
        "_select_root",
        "_skip",
        "_skip_of",
        "_span_seq",
        "_t0",
        "_uctx",
        "_ud",
        "_variation",
        "_walk_cols",
        "_wide_kids",
        "_win",
        "_win_of",
        "allocs",
        "base_exclusive_types",
        "descending",
        "dom",
        "e_excl",
        "e_needs",
        "e_token",
        "e_weight",
        "err_msg",
        "errno",
        "exclusive_types",
        "factors",
        "fresh",
        "fresh_clear",
        "fresh_stats",
        "g",
        "graph_end",
        "graph_start",
        "initialized",
        "job2span",
        "job_vtx",
        "multilevel",
        "nodes_up",
        "policy",
        "postorder",
        "preorder",
        "prune",
        "restricted_runs",
        "resvs",
        "shortcuts",
        "slot_descending",
        "stop_on_k",
        "subplan",
        "subsystems",
        "tags",
        "token",
        "total_postorder",
        "total_preorder",
        "trav_level",
        "types",
        "v_rt_edges",
        "vspans",
        "xspans",
    )

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
        #: several subsystems: the walk colors the vertices it visits (read on every visit)
        self._need_colors = len(self.subsystems) > 1
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
        #: fresh-subtree templates: an entirely free subtree shaped like one already walked
        #: (in this match or an earlier one) is replayed from that walk (fluxlite.match.fresh); False
        #: walks every subtree -- the same results and state, slower (tests compare them)
        self.fresh = True
        #: subtrees replayed so far: [in select, in update]
        self.fresh_stats = [0, 0]
        #: of the select replays, those of subtrees that are not fresh but clear over the window
        self.fresh_clear = 0
        self._fsel: dict[tuple, Any] | None = None
        #: request signatures of the current select pass: id(request list) -> (list, signature)
        self._fsigs: dict[int, tuple[Any, int, frozenset[str]]] = {}
        #: id(primed request tree) -> (its priming, its requests' signatures), see _fresh_sigs_of
        self._fsig_keep: dict[int, tuple[tuple, dict[int, tuple[Any, int, frozenset[str]]]]] = {}
        #: request signature -> its number in the template library's keys (see FreshStage._fresh_sig)
        self._fsig_ids: dict[tuple, int] = {}
        self._fsig_next = 0
        self._fupd: dict[tuple, Any] | None = None
        self._ftries: dict[tuple, int] = {}
        self._futries: dict[tuple, int] = {}
        self._fhint: set[str] = set()
        #: vertices whose subtree the select of token ``_fok_token`` found fresh
        self._fok: set[int] = set()
        self._fok_token = -1
        self._fshape: dict[int, Any] = {}
        self._fshapes: list[Any] = []
        #: the template library: walk context -> (templates by key, failed recordings by key)
        self._flib: dict[tuple, tuple[dict[tuple, Any], dict[tuple, int]]] = {}
        self._fver = -1
        self._jv: list[int] = []
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
        #: per-job vertex index: job -> vertices its update walks tagged (a
        #: superset: entries are checked against ``tags`` when read, so a
        #: released or removed-and-reused vertex is simply filtered out)
        self.job_vtx: dict[int, list[int]] = {}
        self._jv_add: Any = None
        self.xspans: list[dict[int, tuple[int, int]] | None] = [None] * n
        self.subplan: dict[str, list[PlannerMulti | None]] = {}
        self.job2span: dict[str, list[dict[int, int] | None]] = {}
        self._span_seq = 0
        self._leaf_sid = 0
        self._leaf_shared: dict[int, tuple[Any, ...]] = {}
        #: leaves holding state, by their shared dicts: the new shared dicts (see UpdateStage._upd_leaf)
        self._leaf_ext: dict[tuple, tuple[Any, ...]] = {}
        #: the simple writer's line of a leaf, by (prefix, needs) and the leaf's name (names repeat:
        #: ``core0`` on every socket); bounded, see UpdateStage._leaf_lines
        self._line_memo: dict[tuple[str, int], dict[str, str]] = {}
        #: shared dicts less one key, by (old dict, key), during one release walk (see _common._drop)
        self._drop_memo: dict[tuple[int, int], tuple] = {}
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
        self._walk_cols: tuple[list[Any], ...] = ()
        #: the update walk's per-walk constants, set by UpdateStage.update for the walk (None outside)
        self._uctx: tuple[Any, ...] | None = None
        self.refresh_walk_cols()
        self._locality = policy.order == "locality"
        #: variation-aware: vertices scored by their perf_class, slots chosen highest first
        self._variation = policy.order == "variation"
        self.slot_descending = True if self._variation else self.descending
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
        self._marked_asked = False
        self._skip: dict[tuple[int, str, str], tuple[dict[int, int], tuple[str, ...], Any, int]] = {}
        self._skip_of: dict[int, tuple[int, str, str]] = {}
        #: window indexes (reservation search), keyed like the skip index; child -> (key, row)
        self._win: dict[tuple[int, str, str], Any] = {}
        self._win_of: dict[int, tuple[tuple[int, str, str], int]] = {}
        self._ranges: dict[tuple, tuple[int, list]] = {}
        self._pt_plans: dict[tuple, tuple] = {}
        #: memo of the root's children's evaluations (see _explore_passthrough):
        #: context, child -> (epoch, rc, exclusive, Dfu, marks, preorder, postorder)
        self._memo_ctx: tuple | None = None
        self._memo: dict[int, tuple] = {}
        #: per-vertex change counters, bumped by every update/cancel walk through the vertex
        self._epoch: dict[int, int] = {}
        #: marks of memoized children, applied when the update walk enters them
        self._deferred: dict[int, tuple] = {}
        #: the pass-through root's merged child evaluations (see fluxlite.match.rootcache)
        #: and the log of vertices update/cancel walks went through, which it reads
        self._rootc: Any = None
        self._ep_log: list[int] | None = None
        #: id(request tree) -> (tree, pruning types, primed counts, ..., labels), see _primed
        self._primed_reqs: dict[int, tuple] = {}
        #: a restricted match (fluxlite.match._restrict): path vertex -> out-edges worth walking
        self._allow: dict[int, list[int]] | None = None
        #: node vertices the current restricted match may use (see _request_feasible)
        self._cands: set[int] | None = None
        self._nodeidx: Any = None
        #: restricted matches made (tests and benchmarks read it)
        self.restricted_runs = 0
        graph.add_observer(self)
        self.initialized = False

    def refresh_walk_cols(self) -> None:
        """Collect the update walk's columns in one attribute, read once per vertex
        (``UpdateStage._upd_dfv_plain``, ``_upd_sched``) rather than one attribute each.

        fluxlite never replaces these lists, only changes them in place
        (tests/fluxlite/test_walk_cols.py holds attach, grow, shrink and removal to
        that); whoever replaces one (a test's instrumented column) calls this.
        """
        g = self.g
        self._walk_cols = (
            g.v_type,
            g.e_dst,
            g.v_size,
            g.v_name,
            self.e_token,
            self.e_excl,
            self.e_needs,
            self.tags,
            self.xspans,
            self.vspans,
            self.allocs,
            self.resvs,
            self._levels,
        )

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
        self._rootc = None
        self._ep_log = None

    # ------------------------------------------------------------ initialize
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

    #: restricted matches (see _restrict) are exact for this traverser's walk; subclasses with
    #: their own tests per vertex (the flexible traverser) walk everything
    restrict = True

    def run(self, jobspec: Any, writer: Any, op: str, jobid: int, at: int = 0) -> tuple[int, int]:
        """Match ``jobspec`` with ``op``; return (rc, at).  On failure ``self.errno`` says why.

        A jobspec whose constraint names its nodes (``hostlist``, ``ranks``,
        or ``hosts=`` of the engine) walks only the paths to those nodes
        (:mod:`fluxlite.match._restrict`): the same answer as the full walk,
        at a cost that follows the named nodes, not the graph.
        """
        if jobspec.constraint is not None and self.restrict:
            self._restrict_to(jobspec)
            if self._allow is not None:
                try:
                    return self._run(jobspec, writer, op, jobid, at)
                finally:
                    self._allow = self._cands = None
        return self._run(jobspec, writer, op, jobid, at)

    def _restrict_to(self, jobspec: Any) -> None:
        """Set ``_allow``/``_cands`` for a restricted walk when ``jobspec`` allows one.  O(candidates x depth)."""
        from fluxlite.match._restrict import NodeIndex, allowed_edges, candidate_nodes, restrictable

        g = self.g
        dom = self.dom
        if len(self.subsystems) != 1 or dom not in g.roots or not jobspec.resources:
            return
        idx = self._nodeidx
        if idx is None or idx.version != g.version:
            idx = self._nodeidx = NodeIndex(g, dom)
        cands = candidate_nodes(jobspec.constraint, g, idx)
        if cands is None or len(cands) * 2 > idx.n_nodes:
            return  # nothing to gain
        if _walk_may_report(jobspec.resources) or not restrictable(jobspec.resources, idx.loose_types):
            return
        allow = allowed_edges(g, dom, cands, idx)
        if allow is None:
            return
        self._allow, self._cands = allow, cands
        self.restricted_runs += 1

    def _run(self, jobspec: Any, writer: Any, op: str, jobid: int, at: int = 0) -> tuple[int, int]:
        self.err_msg = ""
        self.errno = 0
        g = self.g
        dom = self.dom
        if self._ep_log is not None and len(self._ep_log) > 4 * len(self._rootc.kids):
            self._rootc = self._ep_log = None  # unread for long: rebuilding is cheaper
        if dom not in g.roots or not jobspec.resources:
            self.errno = "EINVAL"
            return -1, at
        root = g.roots[dom]
        graph_dur = self.graph_end - self.graph_start
        x = self._exclusivity(jobspec.resources, root)
        saved = set(self.exclusive_types)
        dfv, self._ud, labels = self._primed(jobspec.resources)
        dur = jobspec.duration
        if dur > graph_dur:
            self.errno = "EINVAL"
            self._reset_exclusive_types(saved)
            return -1, at
        if dur != 0:
            duration = int(dur)
        elif at > self.graph_start:
            # no time limit: the rest of the graph's window from the match time (flux-sched
            # PR #1104, "remaining graph duration"); the whole window would run past its end
            duration = self.graph_end - at
            if duration < 1:
                self.errno = "EINVAL"
                self._reset_exclusive_types(saved)
                return -1, at
        else:
            duration = graph_dur
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
                rc = self.update(root, LabelWriter(writer, labels) if labels else writer, meta)
        self._reset_exclusive_types(saved)
        return rc, meta.at

    #: requests primed and kept (see _primed); the oldest half is dropped past this
    _PRIMED_MAX = 64

    def _primed(self, resources: Sequence[Any]) -> tuple[dict[str, int], dict[int, dict[str, int]], dict]:
        """Prime ``resources`` (see :meth:`prime_jobspec`): (root counts, per-request counts, labels by type).

        Also adds the request's exclusive types to ``exclusive_types``.  A
        parsed jobspec is immutable (tuples of frozen requests), so the answer
        is kept per request tree and reused while the tree object lives (it is
        held, so its identity cannot be reused) and the pruning types are the
        same (they only grow); mutable trees (lists) are primed every time.
        The caller gets its own copies of the dicts.  O(jobspec) the first
        time, O(requests) after.
        """
        key = id(resources)
        ntypes = len(self.prune.total)
        got = self._primed_reqs.get(key)
        if got is not None and got[0] is resources and got[1] == ntypes:
            _res, _n, dfv, ud, xtypes, labels = got
            if xtypes:
                self.exclusive_types.update(xtypes)
            return dict(dfv), dict(ud), labels
        dfv = {}
        ud: dict[int, dict[str, int]] = {}
        self.prime_jobspec(resources, dfv, ud)
        labels = labels_by_type(resources)
        if _frozen_tree(resources):
            cache = self._primed_reqs
            if len(cache) >= self._PRIMED_MAX:
                for k in list(cache)[: self._PRIMED_MAX // 2]:
                    del cache[k]
            xtypes = frozenset(_exclusive_types_of(resources))
            cache[key] = (resources, ntypes, dict(dfv), dict(ud), xtypes, labels)
        return dfv, ud, labels

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
        # Only a plain allocate asks "free now?"; satisfiability asks "could it ever?" (any status,
        # any time) and a reserve "is there such an up node at all?" - the walk decides the rest.
        now_only = op == "allocate"
        feasible = 0
        # a restricted match: only its candidates can pass the constraint
        for v in g.vertices() if self._cands is None else sorted(self._cands):
            if vt[v] != "node":
                continue
            if meta.constraint is not None and not self._constraint_match(meta.constraint, v):
                continue
            if not checking_sat and st[v] != UP:
                continue
            if now_only and (
                meta.at + meta.duration > self.graph_end or self._avail(v, meta.at, meta.duration) != 1
            ):
                continue
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
        counts = p.counts_for(dfv)
        if not any(counts):
            return True
        return p.avail_during(meta.at, meta.duration, counts)

    def _schedule(self, jobspec: Any, meta: JobMeta, x: bool, op: str, root: int, dfv: dict[str, int]) -> int:
        resources = jobspec.resources
        if self._request_feasible(meta, op, dfv) < 0:
            return -1
        if not self.shortcuts or self._root_has_room(root, meta, dfv) or _walk_may_report(resources):
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
                agg = p.counts_for(dfv)
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
        """Vertices that hold state of ``jobid`` (allocated, reserved or tagged), ascending.

        Read from the per-job index, so O(job's vertices), not O(graph); the
        index is compacted to the answer as a side effect.
        """
        cand = self.job_vtx.get(jobid)
        if not cand:
            return []
        tags = self.tags
        n = len(tags)
        held = [v for v in cand if v < n and (tg := tags[v]) is not None and jobid in tg]
        if not held:  # e.g. right after the job's removal: nothing to sort
            del self.job_vtx[jobid]
            return held
        out = sorted(set(held))
        if len(out) != len(cand):
            if out:
                self.job_vtx[jobid] = list(out)
            else:
                del self.job_vtx[jobid]
        return out

    def iter_jobs(self) -> Iterable[int]:
        """Jobs that hold state anywhere in the graph, ascending.  O(jobs' vertices)."""
        return [j for j in sorted(self.job_vtx) if self.job_vertices(j)]
