"""Release: cancel a job, release part of it, or shrink it (Fluxion's remove/partial cancel).

Owns full removal of a job (``remove``), partial release by rank or by
vertex groups (``plan_partial_release``, ``release``, ``release_groups``),
the purge of a vertex's spans for one job and the reduction of the
ancestors' aggregates by what was released.  Every entry point checks
before it changes anything, so a failed release leaves the state unchanged.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from fluxlite.match._common import (
    _drop,
    _own,
    _Shared,
)


class ReleaseStage:
    """The release stage of :class:`~fluxlite.match.Traverser` (a mixin over its state)."""

    def remove(self, jobid: int) -> int:
        """Free everything job ``jobid`` holds (Fluxion's traverser remove).  O(job's vertices)."""
        root = self.g.roots[self.dom]
        self.preorder = 0
        self.postorder = 0
        self._reset_color()
        self._drop_memo = {}
        self._kids_memo: dict[tuple[int, ...], tuple[tuple, tuple]] = {}
        self._rm_ctx = self._release_ctx()
        tg = self.tags[root]
        try:
            if tg is not None and jobid in tg:
                rc = self._mod_dfv(root, jobid)
            else:
                rc = self._mod_exv(jobid)
        finally:
            self._drop_memo = {}  # drops the old dicts it kept alive
            self._kids_memo = {}
            self._rm_ctx = None
        self.total_preorder = self.preorder
        self.total_postorder = self.postorder
        self.job_vertices(jobid)  # compacts (drops) the job's index entry
        return rc

    def _mod_dfv(self, u: int, jobid: int) -> int:
        self.preorder += 1
        tags = self.tags
        tg = tags[u]
        if tg is None or jobid not in tg:
            return 0
        ep = self._epoch
        ep0 = ep.get(u)
        ep[u] = (ep0 or 0) + 1
        if self._ep_log is not None:
            self._ep_log.append(u)
        if type(tg) is dict and len(tg) > 1:  # _drop's case of a vertex's own dict, inlined
            del tg[jobid]
        else:
            _drop(tags, u, jobid, self._drop_memo)
        xs = self.xspans[u]
        if xs is None or jobid not in xs:
            self.err_msg += "rem_exclusive_filter: jobid isn't found in x_spans table.\n "
            return -1
        idx = self._xidx
        if idx and u in idx:
            self._xidx_drop(u, xs, ep0, jobid)
        if type(xs) is dict and len(xs) > 1:
            del xs[jobid]
        else:
            _drop(self.xspans, u, jobid, self._drop_memo)
        if idx and u in idx:
            # the entry follows the window just dropped: it takes the vertex's new stamp
            ent = idx[u]
            xs = self.xspans[u]
            if xs is None:
                del idx[u]
            else:
                ent[0], ent[1], ent[2] = xs, len(xs), ep[u]
        dom = self.dom
        j2s = self.job2span.get(dom)
        if j2s is not None:
            d2 = j2s[u]
            if d2 is not None and jobid in d2:
                # _drop_job_aggregate inlined
                p = self.subplan[dom][u]
                if p is not None:
                    p.rem_span(d2[jobid])
                    if self._extra_spans:
                        for sid in self._extra_spans.pop((dom, u, jobid), ()):
                            p.rem_span(sid)
                    self._agg_touched(dom, u)
                del d2[jobid]
                if not d2:
                    j2s[u] = None
        # _rem_plan inlined for a vertex's own dicts (the usual case above the leaves)
        d = self.allocs[u]
        if d is None or jobid not in d:
            d = self.resvs[u]
        if d is not None and jobid in d:
            if type(d) is dict and len(d) > 1:
                sid = d.pop(jobid)
                sp = self.vspans[u]
                if sp is not None and sid in sp:
                    if type(sp) is dict and len(sp) > 1:
                        del sp[sid]
                    else:
                        _drop(self.vspans, u, sid, self._drop_memo)
            else:
                self._rem_plan(u, jobid)
        rc = 0
        subs = self.subsystems
        if len(subs) == 1 and subs[0] == dom:
            out = self.g.out[dom][u]
            kids = self._wide_kids.pop((u, jobid), None) if len(out) > 64 else None
            if kids is not None:
                for v in dict.fromkeys(kids):
                    rc += self._mod_dfv(v, jobid)
            elif out:
                # the walk reads and changes the dominant subsystem's state only, so the
                # children's shortcuts hold whatever other subsystems the graph has
                rc += self._mod_kids(out, jobid)
        else:
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
                rc += self._mod_kids(out, jobid)
        self.postorder += 1
        return rc

    def _xidx_drop(self, u: int, xs: dict[int, tuple[int, int]], ep0: int | None, jobid: int) -> None:
        """Before ``jobid``'s window leaves ``xs`` (``u``'s windows, ``ep0`` its change counter before
        this walk): take it out of ``u``'s window index entry if the entry is exact, else drop the entry
        (see ``UpdateStage._xs_meets``).  O(log windows)."""
        idx = self._xidx
        assert idx is not None
        ent = idx[u]
        if ent[0] is not xs or ent[1] != len(xs) or ent[2] != ep0:
            del idx[u]
            return
        s, e = xs[jobid]
        starts, ends = ent[3], ent[4]
        del starts[bisect_left(starts, s)]
        del ends[bisect_left(ends, e)]

    #: what :meth:`_mod_kids` reads on every call, gathered once per release walk (None outside one)
    _rm_ctx: tuple | None = None

    def _release_ctx(self) -> tuple:
        """The columns :meth:`_mod_kids` reads, as one tuple (built once per release walk)."""
        dom = self.dom
        return (
            self.g.out[dom],
            self.g.e_dst,
            self.tags,
            self.xspans,
            self.vspans,
            self.allocs,
            self.resvs,
            self.job2span.get(dom),
            self._epoch,
        )

    def _mod_kids(self, out: list[int], jobid: int) -> int:
        """_mod_dfv of ``u``'s children, with leaves held by ``jobid`` alone cleared inline.

        Such a leaf (no children in the dominant subsystem, no aggregate) ends exactly as the
        recursive call would leave it -- its tag, window and own span gone --
        without the calls: cancel costs O(job's vertices) with a small
        constant.  Leaves other jobs hold too are cleared inline when they hold
        the same five shared dicts as a leaf cleared before in this release
        walk (under any vertex: the cores of the nodes of one job).  With
        ``batched`` False every such leaf takes the call (tests compare).
        """
        ctx = self._rm_ctx
        if ctx is None:
            ctx = self._release_ctx()
        col, dst, tags, xspans, vspans, allocs, resvs, j2s, ep = ctx
        rc = 0
        pre = post = 0
        # The leaves of one allocation share their four dicts (see UpdateStage._upd_dfv):
        # a leaf holding exactly the dicts the previous leaf was cleared of ends the same way.
        last = None
        #: the five dicts' ids a leaf held -> (those dicts, what _mod_dfv left it): see below
        kmemo = self._kids_memo if self.batched else None
        prev: tuple[tuple, tuple] | None = None
        log = self._ep_log
        own = kmemo is not None
        both = 0  # leaves counted in both pre- and postorder
        for e in out:
            v = dst[e]
            if col[v]:
                rc += self._mod_dfv(v, jobid)
                continue
            tg = tags[v]
            if tg is None or jobid not in tg:
                pre += 1
                continue
            xs = xspans[v]
            plain = j2s is None or not j2s[v]
            if type(xs) is dict and type(tg) is dict and own and plain and jobid in xs:
                # a leaf with dicts of its own (held by many jobs, see update._SHARE_MAX): what
                # _mod_dfv does to it, inline (pops in place; a dict left empty becomes None).
                # (Such dicts are no other leaf's, so never the ``last`` leaf's tested below.)
                both += 1
                ep[v] = ep.get(v, 0) + 1
                if log is not None:
                    log.append(v)
                if len(tg) > 1:
                    del tg[jobid]
                else:
                    tags[v] = None
                if len(xs) > 1:
                    del xs[jobid]
                else:
                    xspans[v] = None
                table = allocs
                d = allocs[v]
                if d is None or jobid not in d:
                    table = resvs
                    d = resvs[v]
                if d is not None and jobid in d:
                    sid = d.pop(jobid) if type(d) is dict and len(d) > 1 else _drop(table, v, jobid, self._drop_memo)
                    sp = vspans[v]
                    if sp is not None and sid in sp:
                        if type(sp) is dict and len(sp) > 1:
                            del sp[sid]
                        else:
                            _drop(vspans, v, sid, self._drop_memo)
                continue
            if last is not None and tg is last[0] and xs is last[1] and plain:
                table = last[2]
                if (
                    table[v] is last[3]
                    and vspans[v] is last[4]
                    and (table is allocs or (d := allocs[v]) is None or jobid not in d)
                ):
                    both += 1
                    ep[v] = ep.get(v, 0) + 1
                    tags[v] = xspans[v] = table[v] = vspans[v] = None
                    continue
            if len(tg) != 1 or xs is None or len(xs) != 1 or jobid not in xs or not plain:
                # a leaf other jobs hold too: the leaves of one allocation share their dicts
                # (_Shared, never changed in place), and _drop's memo gives each shared dict one
                # successor per walk, so a leaf holding the same five dicts as a leaf cleared
                # before ends with that leaf's new dicts (what _mod_dfv would give it, without
                # the calls); the memo keeps the old dicts alive, so their ids are theirs
                if kmemo is None or not plain:
                    rc += self._mod_dfv(v, jobid)
                    continue
                al, rs, vs = allocs[v], resvs[v], vspans[v]
                if prev is not None and tg is prev[0][0] and xs is prev[0][1] and al is prev[0][2] and rs is prev[0][3] and vs is prev[0][4]:
                    got = prev  # the same dicts as the leaf just before (no key to build)
                else:
                    got = kmemo.get((id(tg), id(xs), id(al), id(rs), id(vs)))
                if got is not None:
                    prev = got
                    ep[v] = ep.get(v, 0) + 1
                    if log is not None:
                        log.append(v)
                    tags[v], xspans[v], allocs[v], resvs[v], vspans[v] = got[1]
                    pre += 1
                    post += 1
                    continue
                r = self._mod_dfv(v, jobid)
                rc += r
                if (
                    r == 0
                    and type(tg) is _Shared
                    and type(xs) is _Shared
                    and (al is None or type(al) is _Shared)
                    and (rs is None or type(rs) is _Shared)
                    and (vs is None or type(vs) is _Shared)
                ):
                    prev = kmemo[(id(tg), id(xs), id(al), id(rs), id(vs))] = (
                        (tg, xs, al, rs, vs),
                        (tags[v], xspans[v], allocs[v], resvs[v], vspans[v]),
                    )
                continue
            if kmemo is None:
                rc += self._mod_dfv(v, jobid)
                continue
            pre += 1
            ep[v] = ep.get(v, 0) + 1
            tags[v] = None
            xspans[v] = None
            last = None
            for table in (allocs, resvs):
                d = table[v]
                if d is not None and jobid in d:
                    sp = vspans[v]
                    if len(d) == 1:
                        table[v] = None
                        sid = d[jobid]
                    else:
                        sid = _drop(table, v, jobid, self._drop_memo)
                    if sp is not None and sid in sp:
                        if len(sp) == 1:
                            vspans[v] = None
                            if len(d) == 1:
                                # the whole leaf was cleared: later leaves holding these same dicts may be too
                                last = (tg, xs, table, d, sp)
                        else:
                            _drop(vspans, v, sid, self._drop_memo)
                    break
            post += 1
        self.preorder += pre + both
        self.postorder += post + both
        return rc

    def _rem_plan(self, u: int, jobid: int) -> tuple[int, int, int] | None:
        """Drop ``jobid``'s own span on ``u``; return it as (amount, start, end), or None."""
        for table in (self.allocs, self.resvs):
            d = table[u]
            if d is not None and jobid in d:
                # _drop, with its case of a vertex's own dict inlined
                sid = d.pop(jobid) if type(d) is dict and len(d) > 1 else _drop(table, u, jobid, self._drop_memo)
                sp = self.vspans[u]
                if sp is not None and sid in sp:
                    if type(sp) is dict and len(sp) > 1:
                        start, end, amount = sp.pop(sid)
                    else:
                        start, end, amount = _drop(self.vspans, u, sid, self._drop_memo)
                    return amount, start, end
                return None
        return None

    def _mod_exv(self, jobid: int) -> int:
        """Drop ``jobid``'s own spans where the root is not tagged.  O(job's vertices)."""
        self.memo_clear()
        n = len(self.allocs)
        for v in self.job_vtx.get(jobid, ()):
            if v < n:
                self._rem_plan(v, jobid)
        return 0

    def job_holds(self, u: int, jobid: int) -> bool:
        """True if vertex ``u`` holds any state of ``jobid``."""
        for col in (self.tags, self.allocs, self.resvs, self.xspans):
            d = col[u]
            if d is not None and jobid in d:
                return True
        j2s = self.job2span.get(self.dom)
        d = j2s[u] if j2s is not None else None
        return d is not None and jobid in d

    def job_vertices_under(self, jobid: int, roots: Iterable[int]) -> dict[int, list[int]]:
        """The vertices ``jobid`` holds in each root's subtree (the root included), ascending.

        Walks up from each of the job's vertices, not down the subtrees: O(job's
        vertices x depth), whatever else the subtrees hold.  Roots must not
        nest (a vertex is reported under the nearest root above it).
        """
        g = self.g
        dom = self.dom
        want: dict[int, list[int]] = {r: [] for r in roots}
        if not want:
            return want
        #: vertex -> the root above it (or -1): memo of the upward walks
        found: dict[int, int] = {}
        for v in self.job_vertices(jobid):
            chain = []
            a: int | None = v
            r = -1
            while a is not None:
                if a in want:
                    r = a
                    break
                k = found.get(a)
                if k is not None:
                    r = k
                    break
                chain.append(a)
                a = g.parent(a, dom)
            for c in chain:
                found[c] = r
            if r >= 0:
                want[r].append(v)
        return want

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

    def release_groups(
        self,
        jobid: int,
        groups: list[tuple[int | None, list[int]]],
        under: dict[int, list[int]] | None = None,
    ) -> bool:
        """Release groups of vertices (each with the root of its subtree); True if the job is gone.

        Released vertices lose the job's spans, tags and aggregate spans; every
        ancestor's aggregate drops by what was released below it.  When nothing
        but bookkeeping residue is left, the whole job is purged.  O(released +
        depth x ranks).  ``under``: each group root's vertices of the job at or
        below it, when the caller has them already (:meth:`job_vertices_under`).
        """
        self.memo_clear()
        self._drop_memo = {}
        try:
            return self._release_groups(jobid, groups, under)
        finally:
            self._drop_memo = {}  # drops the old dicts it kept alive (as remove does)

    def _release_groups(
        self, jobid: int, groups: list[tuple[int | None, list[int]]], under: dict[int, list[int]] | None = None
    ) -> bool:
        g = self.g
        dom = self.dom
        # accumulate reductions along each group root's ancestor chain
        #: ancestor -> (type, start, end) -> units released below it in that window
        reductions: dict[int, dict[tuple[str, int, int], int]] = {}
        depth: dict[int, int] = {}
        out = g.out[dom]
        #: parent -> what its leaves released alone (a leaf group each, as a leak's join gives) released
        #: below it: summed here and added to the parent's ancestors once, not once a leaf
        leafsum: dict[int, dict[tuple[str, int, int], int]] | None = {} if self.batched else None
        # under: group root -> the job's vertices at or below it, found once for all the groups
        # (several groups each scanning all of the job's vertices made a shrink by many paths quadratic)
        for root, vids in groups:
            if root is None:
                for v in vids:
                    self._purge_vertex(v, jobid)
                continue
            if leafsum is not None and len(vids) == 1 and vids[0] == root and not out[root]:
                # what the general steps below do for a leaf released alone (nothing of the job
                # below it, the leaf its own top), its ancestors registered in the same order
                got = self._purge_vertex(root, jobid)
                if got is None:
                    continue
                par = g.parent(root, dom)
                if par is None:
                    continue
                s = leafsum.get(par)
                if s is None:
                    s = leafsum[par] = {}
                    chain = g.ancestors(root, dom)
                    for i, a in enumerate(chain):
                        depth[a] = len(chain) - 1 - i
                        if a not in reductions:
                            reductions[a] = {}
                k = (g.v_type[root], got[1], got[2])
                s[k] = s.get(k, 0) + got[0]
                continue
            # A listed vertex above resources of the job that stay allocated is
            # not released: it only loses what is released below it (it is
            # reduced as an ancestor).  Everything else listed is purged, and
            # each purged subtree's top reports its amounts to its ancestors.
            vset = set(vids)
            if under is None and len(groups) > 1 and any(out[v] for v in vset):
                under = self._job_under_each(jobid, [r for r, _ in groups if r is not None])
            partial = self._keeps_below(jobid, root, vset, None if under is None else under[root])
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
        if leafsum:
            for par, s in leafsum.items():
                for a in (par, *g.ancestors(par, dom)):
                    red = reductions[a]
                    for t, c in s.items():
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
        ep = self._epoch  # a change to the vertex, as in the release walk (readers compare it)
        ep[u] = ep.get(u, 0) + 1
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

    def _keeps_below(
        self, jobid: int, root: int, released: set[int], below: list[int] | None = None
    ) -> set[int]:
        """Listed vertices of ``root``'s subtree with a vertex of the job below them that is not listed.

        Walks up from each of the job's vertices that stays, marking its
        ancestors, and stops at an ancestor already marked or at ``root``.
        O(job's vertices + their ancestors), whatever the size of the subtree.
        ``below``: the job's vertices at or below ``root`` (:meth:`_job_under_each`), when
        known; the walk then starts only from those, which gives the same answer as long
        as everything listed is among them (a vertex of the job elsewhere has no ancestor
        in the subtree).  O(those + their ancestors).
        """
        g = self.g
        dom = self.dom
        out = g.out[dom]
        if not any(out[v] for v in released):
            return set()  # only leaves are released: nothing of the job can be below them
        above: set[int] = set()
        if below is not None and len(released) <= len(below) and released.issubset(below):
            starts: Iterable[int] = below
        else:
            starts = self.job_vertices(jobid)
        for c in starts:
            if c in released:
                continue
            a = c
            while a != root:
                a = g.parent(a, dom)
                if a is None or a in above:
                    break
                above.add(a)
        return released & above

    def _job_under_each(self, jobid: int, roots: list[int]) -> dict[int, list[int]]:
        """Each root's vertices of ``jobid`` at or below it (every root above a vertex gets it, so
        nested roots are exact too).  Roots that do not nest (a shrink's, a removal's): the memoized
        walk of :meth:`job_vertices_under`, O(job's vertices); else one upward walk per vertex of the
        job, O(job's vertices x depth)."""
        g = self.g
        rs = set(roots)
        if not any(a in rs for r in rs for a in g.ancestors(r, self.dom)):
            return self.job_vertices_under(jobid, rs)
        pcol = g.parent_edge.get(self.dom)
        src = g.e_src
        got: dict[int, list[int]] = {r: [] for r in roots}
        for c in self.job_vertices(jobid):
            a = c
            while True:
                lst = got.get(a)
                if lst is not None:
                    lst.append(c)
                e = pcol[a] if pcol is not None else -1
                if e < 0:
                    break
                a = src[e]
        return got

    @staticmethod
    def _reduction_cuts(
        p: Any, spans: list[int], red: dict[tuple[str, int, int], int]
    ) -> dict[int, dict[str, int]]:
        """How much of each type each of ``spans`` (aggregate spans of planner ``p``, the current one
        first, then the earlier windows' newest first) gives back for ``red`` ((type, start, end) -> units).

        First what was released in each span's own window, then anything left, newest first.
        """
        types = p.resource_types
        left = dict(red)
        cuts: dict[int, dict[str, int]] = {sp: {} for sp in spans}
        # a type nothing is left of takes nothing (its room is not read), and once nothing is
        # left at all the second pass has nothing to do
        for exact in (True, False):
            need = {k[0] for k, c in left.items() if c > 0}
            if not need:
                break
            for span in spans:
                if exact:
                    at, dur = p.span_window(span)
                for i, t in enumerate(types):
                    if t not in need:
                        continue
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
        return cuts

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
            cuts = self._reduction_cuts(p, spans, red)
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
