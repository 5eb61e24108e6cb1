"""Shortcuts: exact accelerations of the explore walk, same results as the plain walk.

Owns the skip index (children whose aggregates rule them out are never
visited), the per-subtree range index, the pass-through plan for the graph
root (with the memo of the root's children's evaluations) and the
best-first greedy exploration with early stop.  ``Traverser.shortcuts =
False`` turns all of them off; ``tests/fluxlite/test_shortcuts_differential.py``
checks the two walks agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fluxlite.match import rootcache as _rootcache
from fluxlite.match._common import (
    _MODE_ROOT,
    _MODE_SLOT,
    _NO_MEMO,
    _TRISTATE_FALSE,
    AT_SATISFIABILITY,
    UINT_MAX,
    JobMeta,
    _request_sig,
    calc_effective_max,
    pack_marks,
)
from fluxlite.match._scoring import MATCH_MET, Dfu
from fluxlite.match._window import WindowIndex
from fluxlite.planner import PlannerMulti

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed
    from fluxlite import _cyshim as cython


class ShortcutsStage:
    """The shortcuts stage of :class:`~fluxlite.match.Traverser` (a mixin over its state)."""

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

    @cython.locals(
        win_of=dict,
        skip_of=dict,
        skip=dict,
        pos=dict,
        types=tuple,
        pt=list,
        k=cython.Py_ssize_t,
        nt=cython.Py_ssize_t,
    )
    def _agg_touched(self, ss: str, v: int) -> None:
        """Vertex ``v``'s aggregate changed: refresh its entry in its parent's skip and window indexes.  O(types)."""
        win_of = self._win_of
        w = win_of.get(v)
        if w is not None and w[0][1] == ss:
            win = self._win.get(w[0])
            if win is not None:
                win.touch(w[1])
        skip_of = self._skip_of
        key = skip_of.get(v)
        if key is None or key[1] != ss:
            return
        skip = self._skip
        got = skip.get(key)
        if got is None:
            return
        pos, types, free, _version = got
        i = pos.get(v)
        p = self.subplan[ss][v]
        if i is None or p is None:
            return
        if type(p) is PlannerMulti:
            # tuple(p.resource_types) != types without the two copies
            pt = p._types
            nt = len(types)
            if len(pt) != nt:
                return
            for k in range(nt):
                if pt[k] != types[k]:
                    return
        elif tuple(p.resource_types) != types:
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
        if not ud or meta.alloc_type == AT_SATISFIABILITY:
            return None
        _pos, types, free = self._skip_index(u, ss, kid_type, eids)
        if meta.at != self._t0:
            return self._alive_window(meta, u, ss, kid_type, ud, types, eids)
        mask = None
        for k, t in enumerate(types):
            need = ud.get(t, 0)
            if need > 0:
                row = free[k] >= need
                mask = row if mask is None else (mask & row)
        return mask

    def _alive_window(
        self,
        meta: JobMeta,
        u: int,
        ss: str,
        kid_type: str,
        ud: dict[str, int],
        types: tuple[str, ...],
        eids: list[int],
    ) -> Any:
        """Boolean array over ``eids``: does the child's aggregate pass the prune during the window?

        The same answer as :meth:`_by_subplan` over ``[meta.at, meta.at +
        meta.duration)``, for all children at once from the window index
        (:mod:`fluxlite.match._window`): the reservation search asks it at
        every candidate time.
        """
        need = [(k, ud[t]) for k, t in enumerate(types) if ud.get(t, 0) > 0]
        col = self.subplan.get(ss)
        if not need or col is None:
            return None
        key = (u, ss, kid_type)
        g = self.g
        win = self._win.get(key)
        if win is None or win.version != g.version:
            dst = g.e_dst
            verts = [dst[e] for e in eids]
            win = self._win[key] = WindowIndex(col, verts, types, g.version)
            for i, v in enumerate(verts):
                self._win_of[v] = (key, i)
        return win.alive(meta.at, meta.at + meta.duration, need)

    def _alive(self, meta: JobMeta, u: int, ss: str, r: Any, eids: list[int]) -> Sequence[int] | None:
        """Positions in ``eids`` (ascending) whose subtree may hold ``r`` (children of ``r``'s type)."""
        mask = self._alive_mask(meta, u, ss, r, r.type, eids)
        return None if mask is None else np.flatnonzero(mask)

    def _dynamic_req(self, u: int, ss: str, resources: Sequence[Any]) -> tuple[str, Any, bool] | None:
        """(child type, the request pruning them, count skips) when the children of ``u`` are of one
        requested type, or below a lone slot (then each child passed over counts as the visit the plain
        walk makes to prune it, so the visit counts stay the plain walk's); None otherwise."""
        kids = self._kids_by_type(u, ss)
        if len(kids) != 1:
            return None
        (kt,) = kids
        rs = [r for r in resources if r.type == kt]
        if not rs and len(resources) == 1 and resources[0].type == "slot":
            # a lone slot above the children (T8: a socket anywhere): _prune tests every child,
            # whatever its type, against the slot's aggregate counts (_by_subplan), and _test
            # adds no message for a lone request, so a child ruled out here fails there
            return kt, resources[0], True
        if len(rs) != 1 or any(r.type in ("slot", "xor_slot") for r in resources):
            # a slot sibling of the request: _test refuses every child of that type with
            # "siblings in jobspec request same resource type", once per child visited, so
            # the plain walk's message depends on visiting every child
            return None
        return kt, rs[0], False

    def _dynamic_alive(
        self, meta: JobMeta, u: int, ss: str, resources: Sequence[Any]
    ) -> tuple[dict[int, int], list[bool], bool, list[int]] | None:
        """(child -> position, alive flags, count skips, the children's edges by position) for the
        children of ``u`` (see _dynamic_req)."""
        got = self._dynamic_req(u, ss, resources)
        if got is None:
            return None
        kt, r, counted = got
        eids = self._kids_by_type(u, ss)[kt][0]
        mask = self._alive_mask(meta, u, ss, r, kt, eids)
        if mask is None:
            return None
        pos = self._skip[(u, ss, kt)][0]
        return pos, mask.tolist(), counted, eids

    def _dynamic_window(self, meta: JobMeta, u: int, ss: str, resources: Sequence[Any]) -> Any:
        """The request whose aggregate prune may pass over a child of ``u`` before its visit
        (``_by_subplan(meta, ss, child, r) == -1``: the child is passed over, one visit counted),
        or None when no such test applies.

        Such a child fails ``_prune`` in the plain walk with one preorder visit and nothing else:
        ``_by_subplan`` is the prune's own test; the tests before it (status, constraint, own
        span) fail silently, and ``_by_excl`` writes its message only for an ``exclusive:
        false`` request, left to the plain visit; ``_test`` adds no message for the requests
        :meth:`_dynamic_req` accepts.  So results and visit counts stay the walk's.  The walk asks
        it before it consults the skip index (the first children of a reservation's candidate
        time, the first few at t0) and, at t0, for the children the index lets through (it
        compares free units at t0 only, so a child reserved later in the window passes it).
        O(children of ``u``) once.
        """
        if meta.alloc_type == AT_SATISFIABILITY or ss != self.dom:
            return None
        got = self._dynamic_req(u, ss, resources)
        if got is None:
            return None
        r = got[1]
        if r.exclusive is _TRISTATE_FALSE or not self._ud.get(id(r)):
            return None
        return r

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
        # A child's evaluation depends only on its subtree's state and on the
        # request: reuse it while no update/cancel walk went through the child.
        ctx = (
            _request_sig(resources, self._ud),
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
            self._rootc = self._ep_log = None
        if len(eids) >= _rootcache.ROOT_CACHE_MIN:
            rc = _rootcache.explore_root_cached(self, meta, u, ss, resources, pristine, excl, dfu, eids)
            if rc is not None:
                return rc
        desc = self.descending
        mask = self._alive_mask(meta, u, ss, r, kid_type, eids)
        if mask is not None:
            keep = mask[order]
            order = order[keep]
            bounds = bounds[keep]
        order_l = order.tolist()
        bounds_l = bounds.tolist()
        g = self.g
        dst = g.e_dst
        key = r.type
        found: list[tuple[int, int]] = []
        best = None
        visited: list[tuple[int, Dfu]] = []
        n = len(order_l)
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
                rc, x, cd = self._eval_child(meta, e, tgt, resources, pristine, excl)
                if (self.err_msg, self.errno) == err0 and got is not _NO_MEMO:
                    marks = pack_marks(marked[m0:], e_needs, e_excl)
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

    def _eval_child(
        self, meta: JobMeta, e: int, tgt: int, resources: Sequence[Any], pristine: bool, excl: bool
    ) -> tuple[int, int, Dfu]:
        """Evaluate child ``tgt`` (reached by edge ``e``) into a Dfu of its own, as one edge group of its type."""
        cd = Dfu()
        rc, x = self._dom_dfv(meta, tgt, resources, pristine, excl, cd)
        if rc == 0:
            count = cd.avail
            cd.add(self.g.v_type[tgt], (cd.overall_score, count, x, False, ((count, count, x, e),)))
        return rc, x, cd

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
        if len({r.type for r in resources}) != len(resources):
            # siblings of one type: each child of that type fails _test (Fluxion's match()
            # refuses them); leave that to the plain walk, which runs _test on every child
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
                    idx = alive.tolist()  # Python ints: indexing with numpy scalars is slow
                    if desc:
                        idx.reverse()
                    eids = [eids[i] for i in idx]
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
