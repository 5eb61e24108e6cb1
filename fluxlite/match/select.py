"""Select: score what exploration found and pick the best, bottom-up (Fluxion's dfu_impl.cpp).

Owns the per-vertex tests (exclusivity, availability, pruning by the
aggregates, constraints), the depth-first visit of one vertex
(``_dom_dfv``) with its discover/finish callbacks into the match policy,
slot formation (``_dom_slot``, ``_cnt_slot``), and the resolve/enforce pass
that marks the chosen edges with how many units each must give
(``_resolve``, ``_enforce``, ``_resolve_graph``).  The chosen edges are what
:mod:`fluxlite.match.update` walks next.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from fluxlite.graph import UP
from fluxlite.match._common import (
    _MODE_FULL,
    _MODE_LOCAL,
    _MODE_ROOT,
    _MODE_SLOT,
    _NONE_MATCH,
    _PRISTINE_NONE_MATCH,
    _RESOURCE_MATCH,
    _SLOT_MATCH,
    _TRISTATE_FALSE,
    _TRISTATE_TRUE,
    AT_ALLOC,
    AT_SATISFIABILITY,
    UINT_MAX,
    JobMeta,
    calc_count,
    calc_effective_max,
)
from fluxlite.match._scoring import MATCH_MET, MATCH_UNMET, Dfu
from fluxlite.match._vplan import avail_during, overlaps

_STOI = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")


class SelectStage:
    """The select stage of :class:`~fluxlite.match.Traverser` (a mixin over its state)."""

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
        """Does ``u``'s subtree aggregate hold what request ``r`` needs below here?  O(types)."""
        col = self.subplan.get(ss)
        p = col[u] if col is not None else None
        if p is None:
            return 0
        ud = self._ud.get(id(r))
        if not ud:
            return 0
        get = ud.get
        return 0 if p.avail_during(meta.at, meta.duration, [get(t, 0) for t in p._types]) else -1

    def _prune(self, meta: JobMeta, excl: bool, ss: str, u: int, resources: Sequence[Any]) -> int:
        g = self.g
        if meta.alloc_type != AT_SATISFIABILITY and g.v_status[u] != UP:
            return -1
        t = g.v_type[u]
        if meta.constraint is not None and t == "node" and not self._constraint_match(meta.constraint, u):
            return -1
        sp = self.vspans[u]
        if (avail_during(sp, g.v_size[u], meta.at, meta.duration) if sp else g.v_size[u]) == 0:
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
        for c in slot_r.with_:
            if c.type not in child_types:
                return False
        return True

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
        if self._variation:
            overall = (score + self._perf_class(u)) if score == MATCH_MET else score
        elif self._locality:
            overall = (score + g.v_id[u] + 1) if score == MATCH_MET else score
        else:
            f = self.factors.get(t)
            if f is not None:
                self.multilevel -= f.factor
            overall = (score + self.multilevel + g.v_id[u] + 1) if score == MATCH_MET else score
        dfu.overall_score = overall
        return 0 if score == MATCH_MET else -1

    def _perf_class(self, u: int) -> int:
        """The ``perf_class`` property of ``u`` as Fluxion's variation policy reads it (std::stoi).

        Leading blanks and a sign are allowed and trailing text is ignored
        (``"3x"`` is 3); a missing or unparsable value, or one outside
        0..9999, is the worst class, 9999.
        """
        props = self.g.v_props.get(u)
        raw = props.get("perf_class") if props else None
        if raw is None:
            return 9999
        m = _STOI.match(raw)
        if m is None:
            return 9999
        val = int(m.group(0))
        if val < -(2**31) or val > 2**31 - 1 or val < 0 or val > 9999:
            return 9999
        return val

    def _dom_finish_graph(self, resources: Sequence[Any], dfu: Dfu) -> int:
        score = MATCH_MET
        for r in resources:
            qc = dfu.qualified_count(r.type)
            count = calc_count(r, qc)
            if count == 0:
                score = MATCH_UNMET
                break
            if self._locality:
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

    def select(self, resources: Sequence[Any], root: int, meta: JobMeta, excl: bool) -> int:
        self.tick()
        self.preorder = 0
        self.postorder = 0
        dfu = Dfu()
        self._select_root = root
        self._fok, self._fok_token = set(), self.token
        if self._fresh_ready(meta, resources):
            primed = self._primed_reqs.get(id(resources))
            if primed is not None and primed[0] is resources:
                # an immutable request tree (see _primed): its templates are kept for later matches
                # the window is not in the key: see FreshStage._window_clear
                ctx = ("select", meta.alloc_type, root, len(self.prune.total))
                self._fsel, self._ftries = self._fresh_lib(ctx)
                self._fsigs = self._fresh_sigs_of(primed)
            else:
                self._fsigs = {}
                self._fresh_sync()
                self._fsel, self._ftries = {}, {}
            self._fhint = set()
        else:
            self._fsel = None
            self._fhint = set()
            self._fsigs = {}
        rc, x_in = self._dom_dfv_plain(meta, root, resources, True, excl, dfu)
        self._fsel = None
        if rc == 0:
            avail = dfu.avail
            dfu.add(self.g.v_type[root], (dfu.overall_score, avail, excl, True, ((avail, avail, excl, -1),)))
            rc, needs = self._resolve_graph(root, resources, dfu, excl)
            self.v_rt_edges[self.dom] = (needs, x_in, self.token)
        return rc

    def _dom_dfv(
        self, meta: JobMeta, u: int, resources: Sequence[Any], pristine: bool, excl: bool, to_parent: Dfu
    ) -> tuple[int, bool]:
        if self._fsel is not None:
            got = self._fresh_dfv(meta, u, resources, pristine, excl, to_parent)
            if got is not None:
                return got
        return self._dom_dfv_plain(meta, u, resources, pristine, excl, to_parent)

    def _dom_dfv_plain(
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

    def _cnt_slot(self, slot_shape: Sequence[Any], dfu_slot: Dfu) -> int:
        """How many slots of ``slot_shape`` can be packed from whole edge groups (Fluxion's cnt_slot).

        A slot takes whole edge groups of each type until it has its count,
        so the number of slots is that of disjoint bundles of whole groups
        each totaling at least the per-slot count -- the same greedy packing
        as :meth:`_dom_slot` -- not capacity // count: two 32 GB memory
        vertices give two slots of 8 GB, not eight, and four 616-unit
        vertices give two slots of 700, not three.  O(edge groups).
        """
        qual = UINT_MAX
        for elem in slot_shape:
            ev = dfu_slot.evals.get(elem.type)
            qc = ev.qual_count if ev is not None else 0
            count = calc_count(elem, qc)
            fit = 0
            if count != 0 and ev is not None:
                accum = 0
                for eg in ev.egroups:
                    accum += eg[4][0][0]
                    if accum >= count:
                        fit += 1
                        accum = 0
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
            dfu_slot.choose_accum_all(t, self.slot_descending)
        qual = self._cnt_slot(slot_shape, dfu_slot)
        if len(slot_shape) == 1 and qual:
            elem = slot_shape[0]
            ev = dfu_slot.evals.get(elem.type)
            if ev is not None and calc_count(elem, ev.qual_count) == 1:
                # one unit per slot: slot i is the i-th best group alone (what _take_slot gives)
                out = dfu.get("slot")
                egs = out.egroups
                qc = 0
                for eg in ev.egroups[:qual]:
                    e0 = eg[4][0]
                    score = MATCH_MET + eg[0]
                    egs.append((score, 1, True, False, ((e0[0], e0[0], True, e0[3]),)))
                    if score > 0:
                        qc += 1
                out.total_count += qual
                out.qual_count += qc
                return 0
        groups = []
        iters: dict[str, int] = {}
        for _ in range(qual):
            grp = self._take_slot(dfu_slot, slot_shape, iters)
            if grp is None:
                return -1
            groups.append(grp)
        for grp in groups:
            dfu.add("slot", grp)
        return 0 if qual else -1

    def _take_slot(self, dfu_slot: Dfu, shape: Sequence[Any], iters: dict[str, int]) -> tuple | None:
        """The next slot's edge group: each element's count of the best groups not taken yet (``iters``).

        None, with "not enough slots" in ``err_msg``, when an element's groups run out.
        """
        score = MATCH_MET
        edges = []
        for elem in shape:
            ev = dfu_slot.evals.get(elem.type)
            count = calc_count(elem, dfu_slot.qualified_count(elem.type))
            j = 0
            while j < count:
                i = iters.get(elem.type, 0)
                if ev is None or i >= len(ev.egroups):
                    self.err_msg += "dom_slot: not enough slots.\n"
                    return None
                iters[elem.type] = i + 1
                eg = ev.egroups[i]
                ecount, _n, _x, eid = eg[4][0]
                edges.append((ecount, ecount, True, eid))
                score += eg[0]
                j += ecount
        return (score, 1, True, False, tuple(edges))

    def _resolve(self, dfu: Dfu, to_parent: Dfu) -> int:
        """Pass ``dfu``'s options up to ``to_parent``, or mark them chosen.  ``dfu`` is the caller's
        own for one visit and dropped after this (its Evals may move to ``to_parent``)."""
        if dfu.overall_score > MATCH_UNMET:
            if dfu.hier_constrain_now:
                for ss in self.subsystems:
                    self._enforce(ss, dfu, False)
            else:
                to_parent.absorb(dfu)
        return 0

    def _enforce(self, ss: str, dfu: Dfu, unconstrained: bool) -> None:
        g = self.g
        dom = ss == self.dom
        token = self.token
        e_needs, e_excl, e_token = self.e_needs, self.e_excl, self.e_token
        marked = self._marked
        up = unconstrained and dom
        for key, ev in dfu.evals.items():
            if not ev.best_k:
                continue
            if dom:
                if isinstance(key, tuple):
                    continue
            elif not (isinstance(key, tuple) and key[0] == ss):
                continue
            for eg in ev.egroups[: ev.best_i]:
                if eg[3]:  # root
                    continue
                for _c, needs, x, eid in eg[4]:
                    e_needs[eid] = needs
                    e_excl[eid] = x if x.__class__ is bool else bool(x)
                    if e_token[eid] != token:
                        e_token[eid] = token
                        marked.append(eid)
                    if up:
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
