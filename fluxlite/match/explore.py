"""Explore: walk the children of a matched vertex and count what they can give.

Owns the children-by-type index of a vertex, the static and dynamic
exploration of child requests (Fluxion's ``explore_statically`` and
``explore_dynamically``), the fast evaluation of leaf children (cores,
GPUs, pooled leaves) in bulk, and the auxiliary-subsystem upward walk.
Shortcuts over this walk (skip index, best-first, memo) live in
:mod:`fluxlite.match.shortcuts`.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import compress, islice
from typing import Any

from fluxlite.graph import UP
from fluxlite.match._common import (
    _MODE_ROOT,
    _TRISTATE_FALSE,
    _TRISTATE_TRUE,
    AT_ALLOC,
    AT_SATISFIABILITY,
    JobMeta,
    calc_effective_max,
)
from fluxlite.match._scoring import MATCH_MET, Dfu
from fluxlite.match._vplan import avail_during, overlaps


class ExploreStage:
    """The explore stage of :class:`~fluxlite.match.Traverser` (a mixin over its state)."""

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
        if self._allow is not None:
            eids = self._allow.get(u)
            if eids is not None:
                # a vertex on a path to the named nodes of a restricted match: walk the
                # children that can contribute, in the plain walk's order (see _restrict)
                if self.stop_on_k:
                    g = self.g
                    ew, uq, dst = self.e_weight, g.v_uniq, g.e_dst
                    keys = sorted([(-ew[e], -uq[dst[e]], e) for e in eids])
                    return self._explore_dynamically(
                        meta, u, ss, resources, pristine, excl, dfv, dfu, multiplier, keys
                    )
                return self._explore_statically(meta, u, ss, resources, pristine, excl, dfv, dfu, eids)
        if self.stop_on_k:
            return self._explore_dynamically(meta, u, ss, resources, pristine, excl, dfv, dfu, multiplier)
        if dfv and mode and self.shortcuts and not self._variation:
            plan = self._greedy_plan(u, ss, resources, mode, multiplier)
            if plan is not None:
                return self._explore_greedy(meta, u, ss, resources, pristine, excl, dfu, plan)
            if mode == _MODE_ROOT:
                pt = self._passthrough_plan(u, ss, resources)
                if pt is not None:
                    return self._explore_passthrough(meta, u, ss, resources, pristine, excl, dfu, pt)
        return self._explore_statically(meta, u, ss, resources, pristine, excl, dfv, dfu)

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
        eids: Sequence[int] | None = None,
    ) -> int:
        """Visit the children of ``u`` in out-edge order (``eids``: only those edges, in that order)."""
        g = self.g
        rc2 = -1
        col = g.out.get(ss)
        if col is None:
            return rc2
        dst, vt = g.e_dst, g.v_type
        colors = self._colors.get(ss) if self._need_colors else None
        for e in col[u] if eids is None else eids:
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
        only: list[tuple[int, int, int]] | None = None,
    ) -> int:
        """Visit the children of ``u`` best first until the request is covered (``only``: those keys).

        With ``only`` (a restricted match) the shortcuts that index all of
        ``u``'s children (leaf types, skip index) stay off: the plain tests
        run on each child given.
        """
        g = self.g
        keys = self._outedge_order(u) if only is None else only
        if not keys:
            return -1
        dst, vt, ess = g.e_dst, g.v_type, g.e_ss
        colors = self._colors.get(ss) if self._need_colors else None
        whole = only is None
        leaf_ok = dfv and colors is None and len(g.out) == 1 and self._leaf_requests(resources)
        col = g.out[ss] if leaf_ok else None
        if (
            not leaf_ok
            and dfv
            and self.shortcuts
            and colors is None
            and len(resources) == 1
            and meta.constraint is None
            and not self._variation
            and not self._locality
            and len(g.out) == 1
        ):
            r = resources[0]
            if (
                r.type == "node"
                and not r.with_
                and not (excl and r.exclusive is _TRISTATE_FALSE)
                and self._leaf_kids_type(u, keys) == "node"
            ):
                # bare nodes (no children): the leaf test of dom_dfv, inline
                return self._leaves_dynamically(meta, keys, r, multiplier, excl, dfu)
        if leaf_ok:
            if len(resources) == 1:
                r = resources[0]
                if (
                    whole
                    and not r.with_
                    and not (excl and r.exclusive is _TRISTATE_FALSE)
                    and self._leaf_kids_type(u, keys) == r.type
                ):
                    return self._leaves_dynamically(meta, keys, r, multiplier, excl, dfu)
            by_type = {r.type: r for r in resources}
            vid = g.v_id
            base = MATCH_MET + 1 + (0 if self._locality else self.multilevel)
        sat_types: set[str] = set()
        required = [(r.type, multiplier * calc_effective_max(r)) for r in resources]
        # With several slots to fill (multiplier > 1), progress is counted in
        # whole-child shares, as the slot packing consumes them: one child's
        # units back a single slot, however many it has (Fluxion's share_tally).
        # For one slot this is the same as comparing totals.
        tallies = None
        if multiplier > 1:
            tallies = {r.type: [calc_effective_max(r), 0, 0, 0] for r in resources}
        rc2 = -1
        # After a few failed children of a wide vertex, consult the skip index:
        # children whose aggregates rule them out are passed over unvisited.
        misses = 0 if (whole and dfv and self.shortcuts and len(keys) >= self._SKIP_MIN) else -1
        wide = misses >= 0
        alive: list[bool] | None = None
        apos: dict[int, int] = {}
        counted = False
        # From the first child of a wide vertex that fails: the request whose aggregate prune
        # over the window (_by_subplan) passes over the next children that would fail it, each
        # with the visit the walk counts for it (see _dynamic_window); before the skip index is
        # consulted, and after it at t0, where the index compares free units at t0 only.
        win: Any = None
        now = meta.at == self._t0
        # Once the window index has answered for a reservation's candidate time and few children
        # ahead are alive, the runs of dead ones between them are passed over in one step each
        # (see _alive_ahead; at t0 a first fit stops soon after the index answers, so the plain
        # loop is cheaper there): ``cur`` is the position of the current key, ``nxt`` that of
        # the next alive one, ``ahead`` the rest.
        ahead: Any = None
        cur = nxt = 0
        it = iter(keys)
        for _w, _uq, e in it:
            if ahead is not None:
                cur += 1
                if cur < nxt:
                    # keys cur .. nxt-1 are dead: what the plain loop below does for each of them
                    if counted:
                        self.preorder += nxt - cur
                    if nxt - cur > 1:
                        next(islice(it, nxt - cur - 2, None), None)
                    cur = nxt - 1
                    continue
                nxt = next(ahead, len(keys))
            if ess[e] != ss:
                continue
            tgt = dst[e]
            if colors is not None and tgt in colors:
                continue
            if alive is None and misses > 2:
                misses = -1
                got = self._dynamic_alive(meta, u, ss, resources)
                if got is not None:
                    apos, alive, counted, kid_eids = got
                    if self.jumps and not now and colors is None and len(g.out) == 1:
                        ahead = self._alive_ahead(keys, (_w, _uq, e), alive, kid_eids)
                        if ahead is not None:
                            cur, ahead = ahead
                            nxt = next(ahead, len(keys))
            if alive is not None:
                i = apos.get(tgt)
                if i is not None and not alive[i]:
                    if counted:
                        self.preorder += 1
                    continue
            t = vt[tgt]
            if t in sat_types:
                continue
            if (
                win
                and (alive is None or now)
                and (col is None or col[tgt])
                and self._by_subplan(meta, ss, tgt, win) == -1
            ):
                self.preorder += 1  # the plain visit, failing its prune
                if misses >= 0:
                    misses += 1
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
                    if win is None and wide:
                        win = self._dynamic_window(meta, u, ss, resources) or False
                    continue
                count = dfu.avail
                key = t if dfv else (ss, t)
                dfu.add(key, (dfu.overall_score, count, x, False, ((count, count, x, e),)))  # type: ignore[arg-type]
            enough = True
            if tallies is None:
                for rt, req in required:
                    k = rt if dfv else (ss, rt)
                    if dfu.total_count(k) >= req:  # type: ignore[arg-type]
                        sat_types.add(rt)
                    else:
                        enough = False
            else:
                for rt, tl in tallies.items():
                    total = dfu.total_count(rt if dfv else (ss, rt))  # type: ignore[arg-type]
                    if total > tl[1]:
                        tl[2] += total - tl[1]
                        tl[1] = total
                        if tl[0] > 0 and tl[2] >= tl[0]:
                            tl[3] += 1
                            tl[2] = 0
                    if tl[0] == 0 or tl[3] >= multiplier:
                        sat_types.add(rt)
                    else:
                        enough = False
            rc2 = 0
            if enough:
                break
        return rc2

    #: pass over runs of children the skip index rules out in one step each (see _alive_ahead);
    #: False visits them one by one -- the same results and counts, slower (tests compare them)
    jumps = True

    def _alive_ahead(
        self, keys: list[tuple[int, int, int]], key: tuple[int, int, int], alive: list[bool], eids: list[int]
    ) -> tuple[int, Any] | None:
        """(position of ``key`` in ``keys``, iterator over the positions after it of the children
        ``alive`` keeps, ascending), or None when a plain pass over the keys is as cheap.

        ``keys`` are the out-edges of a vertex whose children are all of one type, in visit order
        (sorted; see ``_outedge_order``), and ``alive[i]`` says whether the child at the end of
        ``eids[i]`` may hold the request; each child ruled out costs the walk a test and
        perhaps a counted visit, nothing else, so the caller does that for a run of them at
        once.  O(alive x log children).
        """
        j = bisect_left(keys, key)
        rest = len(keys) - j
        live = list(compress(eids, alive))
        if len(live) * 4 > rest or j >= len(keys) or keys[j] != key:
            return None
        g = self.g
        ew, uq, dst = self.e_weight, g.v_uniq, g.e_dst
        out = []
        for e in live:
            k = (-ew[e], -uq[dst[e]], e)
            p = bisect_left(keys, k)
            if p >= len(keys) or keys[p] != k:
                return None  # not in the order the caller walks (cannot happen while keys are kept)
            if p > j:
                out.append(p)
        out.sort()
        return j, iter(out)

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
        self, meta: JobMeta, keys: list[tuple[int, int, int]], r: Any, multiplier: int, excl: bool, dfu: Dfu
    ) -> int:
        """_explore_dynamically over children that are all leaves of the one requested type ``r``.

        With ``multiplier`` > 1 slots, each leaf backs one slot at most, so
        the walk stops after ``multiplier`` whole-leaf shares, not units.
        """
        ev = dfu.get(r.type)
        per = calc_effective_max(r)
        req = multiplier * per
        if ev.total_count >= req:
            return -1
        eids = [k[2] for k in keys]
        if multiplier > 1 and per > 0:
            got = self._eval_leaves(meta, eids, r, excl, ev, multiplier, per)
        else:
            got = self._eval_leaves(meta, eids, r, excl, ev, req - ev.total_count)
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

    def _eval_leaves(
        self, meta: JobMeta, eids: Iterable[int], r: Any, excl: bool, ev: Any, want: int, per_share: int = 0
    ) -> int:
        """dom_dfv of leaf children (of ``r``'s type, in ``eids`` order) without the calls.

        Appends an edge group per usable leaf to ``ev`` until ``want`` units
        are found (with ``per_share``: until ``want`` shares of ``per_share``
        units, each made of whole leaves); returns the units found.
        """
        g = self.g
        dst, vstat, vsize, vid = g.e_dst, g.v_status, g.v_size, g.v_id
        vspans, allocs, xspans = self.vspans, self.allocs, self.xspans
        # a node leaf also passes dom_discover_vtx (ids below -1 fail with a score factor)
        # and its own aggregate, if it has one (the plain walk's _prune)
        node = r.type == "node"
        bad_ids = node and r.type in self.factors
        aggs = self.subplan.get(self.dom) if node else None
        status = meta.alloc_type != AT_SATISFIABILITY
        alloc_check = meta.alloc_type == AT_ALLOC
        at, dur = meta.at, meta.duration
        base = MATCH_MET + 1 + (0 if self._locality else self.multilevel)
        x = excl or r.exclusive is _TRISTATE_TRUE
        egs = ev.egroups
        n0 = len(egs)
        visited = 0
        got = 0
        accum = 0
        # leaves of one earlier allocation share their span dicts: the answer for
        # the last dict seen is kept (a shared dict is never changed in place)
        sp_seen: Any = None
        size_seen = avail_seen = 0
        xs_seen: Any = None
        busy_seen = False
        for e in eids:
            v = dst[e]
            visited += 1
            if status and vstat[v] != UP:
                continue
            sp = vspans[v]
            if sp is None:
                avail = vsize[v]
            elif sp is sp_seen and vsize[v] == size_seen:
                avail = avail_seen
            else:
                avail = avail_seen = avail_during(sp, vsize[v], at, dur)
                sp_seen, size_seen = sp, vsize[v]
            if avail == 0:
                continue
            if node:
                if bad_ids and vid[v] < -1:
                    continue
                if aggs is not None and aggs[v] is not None and self._by_subplan(meta, self.dom, v, r) == -1:
                    continue
            if x:
                if alloc_check and allocs[v]:
                    continue
                xs = xspans[v]
                if xs is not None:
                    if xs is not xs_seen:
                        xs_seen, busy_seen = xs, overlaps(xs, at, dur)
                    if busy_seen:
                        continue
            egs.append((base + vid[v], avail, x, False, ((avail, avail, x, e),)))
            got += avail
            if per_share:
                accum += avail
                if accum >= per_share:
                    accum = 0
                    want -= 1
                    if want <= 0:
                        break
            elif got >= want:
                break
        self.preorder += visited
        self.postorder += len(egs) - n0
        ev.total_count += got
        ev.qual_count += got  # every leaf score is above the cutline
        return got

    def _leaf_requests(self, resources: Sequence[Any]) -> bool:
        """True if leaves can be evaluated inline against ``resources`` (distinct types, no slot, no factor)."""
        if len(resources) == 1:
            t = resources[0].type
            return t != "slot" and t != "node" and t not in self.factors
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
