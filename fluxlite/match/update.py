"""Update: record a selection in the graph state (Fluxion's dfu_impl_update.cpp).

Owns the walk over the edges marked by select: per-vertex spans for
exclusive use, per-leaf amounts shared between leaves of one job, the
aggregate (subtree planner) spans of each ancestor, emission through the
match writer, ``update_allocate`` (re-applying a given allocation, e.g. on
restore or grow) and the accounting of attached or removed subgraphs
(``attach_update``, ``account_removal``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import ge, itemgetter, le, not_
from typing import Any

from fluxlite.graph import UP
from fluxlite.graph._store import ints_distinct
from fluxlite.match._common import (
    AT_ALLOC,
    AT_RESERVE,
    AT_SATISFIABILITY,
    JobMeta,
    _own,
    _Shared,
)
from fluxlite.match._vplan import avail_during, overlaps
from fluxlite.planner import PlannerMulti
from fluxlite.writers.simple import SimpleWriter

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed
    from fluxlite import _cyshim as cython

#: a leaf held by this many jobs gets dicts of its own rather than dicts shared with other leaves
#: (changing a shared dict copies it: O(jobs) per change, against O(1) in place; the cores of one
#: node in a busy deadline simulation are held by ~80 jobs)
_SHARE_MAX = 8

#: a vertex with at least this many windows answers the update's check from its window index
#: (``UpdateStage._xs_meets``); fewer are scanned
_XIDX_MIN = 24
_first = itemgetter(0)
_second = itemgetter(1)

# what an update walk journals of the state it changes on vertices the job already held
# (a grow), for _undo_update: the rest is dropped as a cancel would
_UNDO_GROW, _UNDO_EXTRA, _UNDO_XSPAN, _UNDO_WEIGHT = 0, 1, 2, 3


@cython.locals(n=cython.Py_ssize_t, k=cython.Py_ssize_t, a=list, b=list, c=list)
def _unzip3(items: Sequence[tuple[Any, Any, Any]]) -> tuple[list[Any], list[Any], list[Any]]:
    """``zip(*items)`` of (vertex, units, exclusive) items as three lists, in one typed loop (the star
    call built an iterator per item).  O(len(items))."""
    n = len(items)
    a = [None] * n
    b = [None] * n
    c = [None] * n
    for k in range(n):
        x, y, z = items[k]
        a[k] = x
        b[k] = y
        c[k] = z
    return a, b, c


@cython.locals(
    vl=list, sl=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, u=cython.Py_ssize_t, x=cython.Py_ssize_t
)
def _fits_all(u0: Any, sizes: Sequence[int], vs: Sequence[int]) -> bool:
    """``not u0 > min(map(sizes.__getitem__, vs))`` (``vs`` not empty): no vertex of ``vs`` has fewer
    units than ``u0``.  Compiled, a typed pass where ``u0``, the vertices and their sizes are ``int``
    within the C range (lists); anything else takes the builtins."""
    if cython.compiled and type(u0) is int and type(vs) is list and type(sizes) is list:
        vl = vs
        sl = sizes
        n = len(vl)
        try:
            u = u0
            for k in range(n):
                o = sl[vl[k]]
                if type(o) is not int:
                    break
                x = o
                if x < u:
                    return False
            else:
                return n > 0 or not u0 > min(map(sizes.__getitem__, vs))
        except OverflowError:
            pass
    return not u0 > min(map(sizes.__getitem__, vs))


@cython.locals(vl=list, fl=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, out=set)
def _where_false(vs: Sequence[int], flags: Sequence[Any]) -> set[int]:
    """``set(compress(vs, map(not_, flags)))`` (a typed loop over two lists of one length, compiled)."""
    if cython.compiled and type(vs) is list and type(flags) is list and len(vs) == len(flags):
        vl = vs
        fl = flags
        n = len(vl)
        out = set()
        for k in range(n):
            if not fl[k]:
                out.add(vl[k])
        return out
    return set(compress(vs, map(not_, flags)))


class UpdateStage:
    """The update stage of :class:`~fluxlite.match.Traverser` (a mixin over its state)."""

    def _level(self) -> str:
        return "      " + "---" * self.trav_level

    #: ``update_allocate`` records the listed vertices directly (:meth:`_update_items`) where
    #: that path applies; False always walks the graph as a match's update does -- the same
    #: state and output, slower (tests compare the two after every step)
    batched = True

    def update(self, root: int, writer: Any, meta: JobMeta) -> int:
        rt = self.v_rt_edges.get(self.dom)
        if rt is None or rt[2] != self.token:
            self.err_msg += "update: resource state wasn't properly set up for update.\n"
            return -1
        needs, excl, _tok = rt
        self._update_begin(meta)
        # what _upd_dfv_plain reads at every vertex and nothing changes during the walk, in one tuple
        self._uctx = (
            self.token,
            self.dom,
            self.exclusive_types,
            self._leaf_shared,
            self._leaf_ext,
            self._jv_add,
            self.prune.total,
        )
        emit_shadow = self.g.v_type[root] in self.exclusive_types
        if self._fresh_upd_ready(writer):
            # (a template keeps its writer's output: the simple writer's and the JGF records' apart)
            self._fupd, self._futries = self._fresh_lib(
                (
                    "update",
                    type(writer) is SimpleWriter,
                    meta.alloc_type,
                    frozenset(self.exclusive_types),
                    len(self.prune.total),
                )
            )
        try:
            n = self._upd_dfv_plain(root, writer, needs, excl, meta, True, {}, emit_shadow)
        finally:
            self._fupd = None
            self._fhint = set()
            self._uctx = None
        return self._update_end(writer, meta, n)

    def _update_begin(self, meta: JobMeta) -> None:
        """Reset the per-walk state of an update walk for job ``meta.jobid``."""
        self._marked_by = None
        self._marked_asked = False
        self._reset_color()
        self._leaf_shared = {}
        self._leaf_ext = {}
        jv = self.job_vtx.get(meta.jobid)
        if jv is None:
            jv = self.job_vtx[meta.jobid] = []
        self._jv_add = jv.append
        self._jv = jv
        self._span_seq += 1
        self._leaf_sid = self._span_seq
        self.trav_level = 0

    def _update_end(self, writer: Any, meta: JobMeta, n: int) -> int:
        """Finish an update walk that recorded ``n`` plans: the times and attributes, or the error."""
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
        if self._fupd is not None:
            got = self._fresh_upd(u, writer, needs, excl, meta, full, to_parent, emit_shadow, excl_parent)
            if got is not None:
                return got
        return self._upd_dfv_plain(u, writer, needs, excl, meta, full, to_parent, emit_shadow, excl_parent)

    @cython.locals(
        tgt=cython.Py_ssize_t,
        e=cython.Py_ssize_t,
        et=cython.Py_ssize_t,
        nd=cython.Py_ssize_t,
        token=cython.Py_ssize_t,
        units=cython.Py_ssize_t,
        n_plans=cython.Py_ssize_t,
        shared_nd=cython.Py_ssize_t,
        line_nd=cython.Py_ssize_t,
        pnd=cython.Py_ssize_t,
        level=cython.Py_ssize_t,
        record=cython.bint,
        tx=cython.bint,
        single=cython.bint,
        mod=cython.bint,
        dst=list,
        vsize=list,
        vname=list,
        vt=list,
        e_token=list,
        e_excl=list,
        e_needs=list,
        vspans=list,
        table=list,
        tags=list,
        xspans=list,
        levels=list,
        lines=dict,
        ext=dict,
        leaf_shared=dict,
        acc=dict,
        got=tuple,
        shared=tuple,
    )
    def _upd_dfv_plain(
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
        if self._ep_log is not None:
            self._ep_log.append(u)
        if self._deferred:
            marks = self._deferred.pop(u, None)
            if marks:
                self._replay(marks)
        n_plans = 0
        acc: dict[str, int] = {}
        token, dom, xtypes, leaf_shared, ext, jv_add, total = self._uctx  # see update()
        vt, dst, vsize, vname, e_token, e_excl, e_needs, tags, xspans, vspans, allocs, resvs, levels = (
            self._walk_cols
        )
        mod = emit_shadow or vt[u] in xtypes
        excl = excl or mod
        self.trav_level += 1
        level = self.trav_level
        single = len(g.out) == 1
        edges = writer.emits_edges
        # jgf_shorthand: nothing below an exclusive vertex is written
        hide = excl and not writer.emit_exclusive_subtrees
        # leaves that held nothing take dicts shared by the whole allocation (see _upd_leaf)
        record = full and meta.alloc_type != AT_SATISFIABILITY
        table = allocs if meta.alloc_type == AT_ALLOC else resvs
        prefix = None if hide else levels[level + 1]
        emit = writer.emit_vtx
        # the simple format's line, appended inline for fresh leaves (no call per leaf)
        add_line = writer._add if type(writer) is SimpleWriter and prefix is not None else None
        # fresh leaves of one type: their units are summed here and added to acc once
        leaf_t: str | None = None
        leaf_units = 0
        shared_nd = -1
        s0 = s1 = s2 = s3 = None
        # the leaves' output lines at prefix and line_nd (see _leaf_lines)
        line_nd = -1
        lines: dict[str, str] = {}
        lt = self._leaf_kids_of(u) if (single and not mod and add_line is not None and not edges) else None
        if lt is not None:
            # children all leaves of type lt, at most 64, one subsystem, simple output:
            # the general loop below without its per-child tests
            tx = lt in xtypes
            units = 0
            # leaves already holding state: those whose four dicts are the ones the last such
            # leaf had take the same new dicts (_upd_leaf's memo, read here without the call)
            got = None
            p0 = p1 = p2 = p3 = None
            pnd = -1
            for e in g.out[dom][u]:
                et = e_token[e]
                if et != token or not (e_excl[e] or tx):
                    continue
                tv = dst[e]  # the vertex id as an object, for the calls (tgt: as an index)
                tgt = tv
                nd = e_needs[e]
                o0, o1, o2, o3 = vspans[tgt], table[tgt], tags[tgt], xspans[tgt]
                if o0 is None and o1 is None and o2 is None and o3 is None:
                    if nd != shared_nd:
                        shared = leaf_shared.get(nd)
                        if shared is None:
                            shared = self._new_leaf_shared(nd, meta)
                        s0, s1, s2, s3 = shared
                        shared_nd = nd
                    n0, n1, n2, n3 = s0, s1, s2, s3
                else:
                    if got is None or o0 is not p0 or o1 is not p1 or o2 is not p2 or o3 is not p3 or nd != pnd:
                        # the memo's dicts are alive, so equal ids are these very dicts
                        got = ext.get((id(o0), id(o1), id(o2), id(o3), nd, record))
                        if got is None:
                            self._upd_leaf(tv, writer, nd, meta, full, acc, prefix)
                            n_plans += 1
                            continue
                        p0, p1, p2, p3, pnd = o0, o1, o2, o3, nd
                    n0, n1, n2, n3 = got[0], got[1], got[2], got[3]  # got: (4 new dicts, old ones)
                if record:
                    vspans[tgt] = n0
                    table[tgt] = n1
                tags[tgt] = n2
                xspans[tgt] = n3
                jv_add(tv)
                units += vsize[tgt]
                if nd != line_nd:
                    lines = self._leaf_lines(prefix, nd)
                    line_nd = nd
                name = vname[tgt]
                ln = lines.get(name)
                if ln is None:
                    ln = lines[name] = f"{prefix}{name}[{nd}:x]\n"
                add_line(ln)
                n_plans += 1
            if units and lt in total:
                acc[lt] = acc.get(lt, 0) + units
            return self._upd_sched(
                u, writer, dom, needs, excl, n_plans, meta, full, acc, to_parent, excl_parent
            )
        for ss in self.subsystems:
            col = g.out.get(ss)
            if col is None:
                continue
            out = col[u]
            scan = False  # out is every child (the loop skips unmarked ones), not only the marked
            if not mod and len(out) > 64:
                if self._marked_by is None and len(out) <= 2 * len(self._marked):
                    scan = True  # cheaper than indexing every mark by its source (same order)
                else:
                    out = self._marked_out(u)
            # the children reached below a wide vertex by a job that holds nothing else yet (nothing
            # recorded before it: its vertex list is empty), in order (see the end of the loop)
            reach: list[int] | None = (
                [] if ss == dom and not mod and len(col[u]) > 64 and self.reach and not self._jv else None
            )
            for e in out:
                et = e_token[e]
                if et != token and not mod:
                    continue
                if ss != dom:
                    continue
                tv = dst[e]
                tgt = tv
                x = e_excl[e] or mod
                nd = vsize[tgt] if mod else e_needs[e]
                if (not col[tgt]) if single else self._is_leaf(tv):
                    # a leaf: upd_dfv + upd_sched without the recursion
                    if not (x or vt[tgt] in xtypes):
                        continue
                    if (
                        tags[tgt] is None
                        and xspans[tgt] is None
                        and vspans[tgt] is None
                        and table[tgt] is None
                    ):
                        if nd != shared_nd:
                            shared = leaf_shared.get(nd)
                            if shared is None:
                                shared = self._new_leaf_shared(nd, meta)
                            s0, s1, s2, s3 = shared
                            shared_nd = nd
                        if record:
                            vspans[tgt] = s0
                            table[tgt] = s1
                        tags[tgt] = s2
                        xspans[tgt] = s3
                        jv_add(tv)
                        t = vt[tgt]
                        if t is leaf_t:
                            leaf_units += vsize[tgt]
                        elif t in total:
                            if leaf_t is not None:
                                acc[leaf_t] = acc.get(leaf_t, 0) + leaf_units
                            leaf_t = t
                            leaf_units = vsize[tgt]
                        if add_line is not None:
                            if nd != line_nd:
                                lines = self._leaf_lines(prefix, nd)
                                line_nd = nd
                            name = vname[tgt]
                            ln = lines.get(name)
                            if ln is None:
                                ln = lines[name] = f"{prefix}{name}[{nd}:x]\n"
                            add_line(ln)
                        elif prefix is not None:
                            emit(prefix, g, tv, nd, None, True)
                    else:
                        self._upd_leaf(tv, writer, nd, meta, full, acc, prefix)
                    if reach is not None:
                        reach.append(tv)
                    if edges and not hide:
                        writer.emit_edg(levels[level], g, e)
                    n_plans += 1
                    continue
                sub = self._upd_dfv(tv, writer, nd, x, meta, full, acc, mod, excl)
                if sub > 0:
                    if reach is not None:
                        reach.append(tv)
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
                        if reach is not None:
                            # a job that held nothing before this vertex holds exactly the children
                            # it was recorded on here (a child is tagged only from its parent)
                            have.extend(reach)
                        else:
                            jobid = meta.jobid
                            for e in out:  # a loop: a generator would not see the typed locals
                                if not scan or e_token[e] == token:
                                    tv = dst[e]
                                    d = tags[tv]
                                    if d is not None and jobid in d:
                                        have.append(tv)
                        self._wide_kids[key] = have
        if leaf_t is not None:
            acc[leaf_t] = acc.get(leaf_t, 0) + leaf_units
        if hide and n_plans:
            writer.complete = False  # matched vertices below an exclusive one were left out
        return self._upd_sched(u, writer, dom, needs, excl, n_plans, meta, full, acc, to_parent, excl_parent)

    #: a job that held nothing before the walk lists the children of a wide vertex it was recorded
    #: on as the walk records them; False scans the children again (the same list; tests compare)
    reach = True

    def _leaf_kids_of(self, u: int) -> str | None:
        """The type of ``u``'s children if there are 1..64, all leaves of one type, in the dominant
        subsystem only (the graph has one); None if not or not known yet.

        Read from the children indexes the select walk built (never computed
        here: a vertex seen for the first time would pay for it).  O(1).
        """
        if self._kids_version != self.g.version or len(self.subsystems) != 1:  # subsystems[0] is dom
            return None
        t = self._leaf_kids.get(u)
        if t is None:
            kids = self._kids_cache.get((u, self.dom))
            if kids is None or len(kids) != 1:
                return None
            ((t, (_eids, _distinct, _size1, leaves)),) = kids.items()
            if not leaves:
                return None
        return t if len(self.g.out[self.dom][u]) <= 64 else None

    def _replay(self, marks: tuple) -> None:
        """Apply the marks a memoized child evaluation made (edges marked since then keep theirs).

        ``marks`` is :func:`~fluxlite.match._common.pack_marks`'s (edges, needs, exclusive).
        """
        token = self.token
        e_token, e_needs, e_excl = self.e_token, self.e_needs, self.e_excl
        by = self._marked_by
        src = self.g.e_src
        touched = set()
        for e, needs, x in zip(*marks):
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
        """Out-edges of ``u`` marked by the last select, in sibling order.  O(marked).

        The first wide vertex of an update walk (usually the only one: the
        root) filters the marked edges; a second one groups them all by
        source once, for every later call.
        """
        by = self._marked_by
        if by is None and not self._marked_asked:
            self._marked_asked = True
            src = self.g.e_src
            mine = [e for e in self._marked if src[e] == u]
            if len(mine) > 1:
                mine.sort(key=self.g.e_seq.__getitem__)
            return mine
        if by is None:
            by = self._marked_by = {}
            src = self.g.e_src
            get = by.get
            for e in self._marked:
                s = src[e]
                lst = get(s)
                if lst is None:
                    by[s] = [e]
                else:
                    lst.append(e)
            seq = self.g.e_seq
            key = seq.__getitem__
            for lst in by.values():
                if len(lst) > 1:
                    lst.sort(key=key)
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
        record = full and meta.alloc_type != AT_SATISFIABILITY
        vspans, tags, xspans = self.vspans, self.tags, self.xspans
        olds = o0, o1, o2, o3 = (vspans[v], table[v], tags[v], xspans[v])
        if (
            (o0 is None or type(o0) is _Shared)
            and (o1 is None or type(o1) is _Shared)
            and (o2 is None or (type(o2) is _Shared and len(o2) < _SHARE_MAX))
            and (o3 is None or type(o3) is _Shared)
        ):
            # Leaves whose dicts are all shared (or empty) hold the same state, so they
            # take the same new dicts: made once per state and update walk, shared again.
            # The key's dicts are kept alive in the memo, so their ids stay theirs.
            # A leaf many jobs hold takes its own dicts instead (below): each change to a
            # shared dict is a copy of all its entries, a change to an own dict is O(1).
            key = (id(o0), id(o1), id(o2), id(o3), needs, record)
            got = self._leaf_ext.get(key)
            if got is None:
                nv, nt = olds[0], olds[1]
                if record:
                    self._span_seq += 1
                    sid = self._span_seq
                    nv = _Shared(nv or ())
                    nv[sid] = (at, end, needs)
                    nt = _Shared(nt or ())
                    nt[jobid] = sid
                ng = _Shared(olds[2] or ())
                ng[jobid] = jobid
                nx = _Shared(olds[3] or ())
                nx[jobid] = (at, end)
                got = self._leaf_ext[key] = (nv, nt, ng, nx, olds)
            vspans[v], table[v], tags[v], xspans[v] = got[0], got[1], got[2], got[3]
        else:
            if record:
                self._span_seq += 1
                sid = self._span_seq
                _own(vspans, v)[sid] = (at, end, needs)
                _own(table, v)[jobid] = sid
            _own(tags, v)[jobid] = jobid
            _own(xspans, v)[jobid] = (at, end)
        self._jv_add(v)
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

    def _leaf_lines(self, prefix: str, needs: int) -> dict[str, str]:
        """The memo of the simple writer's leaf lines ``<prefix><name>[<needs>:x]`` at ``prefix`` and
        ``needs``, by the leaf's name (formatting a line costs more than looking it up: the number's
        text and the join).  At most 64 such memos of at most 4,096 lines each are kept."""
        memo = self._line_memo
        key = (prefix, needs)
        lines = memo.get(key)
        if lines is None:
            if len(memo) >= 64:
                memo.clear()
            lines = memo[key] = {}
        elif len(lines) >= 4096:
            lines.clear()
        return lines

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
        """Record ``u``'s own span (exclusive), tag, window and aggregate span once its subtree is done.

        ``writer`` None: nothing is emitted (a writer that writes nothing).
        """
        at = meta.at
        end = at + meta.duration
        jobid = meta.jobid
        vt, _dst, vsize, _vname, _et, _ex, _en, tags, xspans, vspans, allocs, resvs, levels = self._walk_cols
        if excl:
            n += 1
            if full and meta.alloc_type != AT_SATISFIABILITY:
                self._span_seq = sid = self._span_seq + 1
                _own(vspans, u)[sid] = (at, end, needs)
                _own(allocs if meta.alloc_type == AT_ALLOC else resvs, u)[jobid] = sid
        if n > 0:
            # _own inlined (a vertex above the leaves usually has its own dicts already)
            d = tags[u]
            if d is None:
                tags[u] = {jobid: jobid}
            else:
                if type(d) is _Shared:
                    d = tags[u] = dict(d)
                d[jobid] = jobid
            self._jv_add(u)
            xs = xspans[u]
            if xs is None:
                xspans[u] = {jobid: (at, end)}
            else:
                if type(xs) is _Shared:
                    xs = xspans[u] = dict(xs)
                old = xs.get(jobid)
                if old is None:
                    xs[jobid] = (at, end)
                else:  # a grow: the job already uses this vertex
                    xs[jobid] = (min(old[0], at), max(old[1], end))
                    if self._undo is not None:
                        self._undo.append((_UNDO_XSPAN, u, jobid, old))
            if acc:
                col = self.subplan.get(ss)
                p = col[u] if col is not None else None
                if p is not None:
                    self._add_job_span(ss, u, p, jobid, at, meta.duration, acc)
            # _accum_if inlined: the vertex's own units, then what its subtree gave
            total = self.prune.total
            t = vt[u]
            if t in total:
                vs = vsize[u]
                to_parent[t] = to_parent.get(t, 0) + (vs if excl else vs - needs)
            for t, c in acc.items():
                if t in total:
                    to_parent[t] = to_parent.get(t, 0) + c
            if writer is not None and not (excl_parent and not writer.emit_exclusive_subtrees):
                writer.emit_vtx(levels[self.trav_level], self.g, u, needs, None, excl)
        self.trav_level -= 1
        return n

    def _add_job_span(
        self, ss: str, u: int, p: PlannerMulti, jobid: int, at: int, duration: int, acc: dict[str, int]
    ) -> None:
        """Record ``acc`` in ``u``'s aggregate for ``jobid``, merging with a span the job already has."""
        j2s = self.job2span[ss]
        d2 = j2s[u]
        old = d2.get(jobid) if d2 is not None else None
        if old is None:
            sid = p.add_span_amounts(at, duration, acc)  # may fail: nothing changed yet
            if d2 is None:
                j2s[u] = {jobid: sid}
            else:
                d2[jobid] = sid
        elif p.span_window(old) == (at, duration):
            # a grow over the same window: the job's span takes the new units in place (its id
            # stays; all or nothing), so a failure here or later loses nothing (see _undo_update)
            counts = p.counts_for(acc)
            created = p.grow_span(old, counts)
            if self._undo is not None:
                self._undo.append((_UNDO_GROW, p, old, counts, created))
        else:
            # a grow over another window: one more span; the old one is kept as an extra
            new = p.add_span(at, duration, p.counts_for(acc))
            self._extra_spans.setdefault((ss, u, jobid), []).append(old)
            d2[jobid] = new
            if self._undo is not None:
                self._undo.append((_UNDO_EXTRA, p, (ss, u, jobid), old, new))
        self._agg_touched(ss, u)

    def _rerank(self, u: int, edges: list[int], now: int) -> None:
        """:meth:`_upd_by_outedges` of ``u``'s out-edges ``edges`` (children the walk just recorded), at once.

        Each edge takes its child's free units of the last pruning type at
        ``now`` as weight, as :meth:`_upd_by_outedges` gives it right after the
        child's walk: no later step of the walk changes a sibling's aggregate,
        and ``u``'s ranked out-edges end in the same order whatever the order
        of the changes.  A vertex whose ranked out-edges are not made yet (one
        attached just before) has its weights changed first and the list made
        once from them: the same list.  O(edges x log(out-edges of u)).
        """
        ss = self.dom
        col = self.subplan.get(ss)
        if col is None:
            return
        dst, uniq = self.g.e_dst, self.g.v_uniq
        weight = self.e_weight
        undo = self._undo
        keys: list[tuple[int, int, int]] | None = None
        later = self._outedges_built and u not in self._outedges
        for e in edges:
            p = col[dst[e]]
            if p is None:
                continue
            pls = p._planners
            if not pls:
                continue
            avail = pls[-1].avail_resources_at(now)
            if avail == 0 and not p._spans:
                continue
            if later:
                if undo is not None:
                    undo.append((_UNDO_WEIGHT, u, e, weight[e]))
                weight[e] = 0 if avail < 0 else avail
                keys = []  # (some weight changed)
                continue
            if keys is None:
                keys = self._outedge_order(u)  # builds u's ranked out-edges if they are not yet
                if keys is None:
                    return
            if undo is not None:
                undo.append((_UNDO_WEIGHT, u, e, weight[e]))
            w = 0 if avail < 0 else avail
            # _set_edge_weight inlined
            nu = -uniq[dst[e]]
            old = (-weight[e], nu, e)
            i = bisect_left(keys, old)
            if i < len(keys) and keys[i] == old:
                del keys[i]
            insort(keys, (-w, nu, e))
            weight[e] = w
        if later and keys is not None:
            self._outedge_order(u)  # made from the new weights

    def update_allocate(
        self,
        writer: Any,
        jobid: int,
        items: Sequence[tuple[int, int, bool]] | None,
        at: int,
        duration: int,
        reserve: bool = False,
        *,
        columns: tuple[Sequence[int], Sequence[int], Sequence[bool]] | None = None,
    ) -> int:
        """Allocate exactly ``items`` -- (vertex, units, exclusive) -- to ``jobid`` over a window.

        This is Fluxion's ``update``: the resources come from an R or JGF
        document (typically a subgraph chosen by another instance) rather than
        from a match.  Every exclusive vertex must be free for the window; on
        any conflict nothing changes and ``err_msg`` says which vertex.
        ``columns``: the items as three aligned sequences (vertices, units,
        exclusive) instead, with ``items`` None (an attach has them so: the
        tuples are then made only where the walk needs them); they are
        only read.  O(items x depth).
        """
        self.memo_clear()
        g = self.g
        dom = self.dom
        att, self._attached = self._attached, None
        self.err_msg = ""
        if dom not in g.roots:
            self.err_msg = "update: the graph has no root\n"
            return -1
        if duration <= 0 or at < self.graph_start or at + duration > self.graph_end:
            self.err_msg = f"update: invalid time window ({at}, {duration})\n"
            return -1
        if columns is not None:
            vs, units_of, excl_of = columns
        else:
            vs, units_of, excl_of = _unzip3(items)  # type: ignore[arg-type]
        nitems = len(vs)
        listed = set(vs)
        fresh = None
        if att is not None and self.batched and len(listed) == nitems:
            fresh = self._fresh_plan(att, vs, units_of, excl_of, listed, writer)
        if fresh is None and items is None:
            items = list(zip(vs, units_of, excl_of))
        bad = self._update_check(jobid, items if fresh is None else fresh[0], at, duration)
        if bad is not None:
            self._xread = None
            self.err_msg = f"update: {g.path(bad[0], dom) or g.v_name[bad[0]]} {bad[1]}\n"
            return -1
        self._sync_edges()
        self.tick()
        token = self.token
        root = g.roots[dom]
        #: the marked edges by source vertex (what the direct path walks)
        by: dict[int, list[int]] = {}
        self._mark_paths(items if fresh is None else fresh[0], listed, token, by)
        if root in listed:
            k = vs.index(root)
            needs, excl = units_of[k], excl_of[k]
        else:
            needs, excl = 1, False
        self.v_rt_edges[dom] = (needs, excl, token)
        meta = JobMeta(
            jobid=jobid, at=at, now=at, duration=duration, alloc_type=AT_RESERVE if reserve else AT_ALLOC
        )
        # all or nothing: the check above leaves only failures it cannot foresee (a planner's
        # refusal, an error raised by the writer); those are undone before they propagate
        jv = self.job_vtx.get(jobid)
        before = (jv is not None, len(jv) if jv else 0, self._wide_of(jobid, by) if jv else {})
        # the wide vertices of the fresh subtrees the walk visited (not in ``by``), for the undo
        fwide: list[int] = []
        self._undo = []
        seq0 = self._span_seq  # a failed update gives back the span ids it spent: nothing changes
        try:
            rc = None
            if self.batched and len(listed) == nitems:
                rc = self._update_items(
                    root,
                    writer,
                    meta,
                    by,
                    None if fresh is None else (*fresh[1:], fwide, before[2] if jv else None),
                )
            if rc is None:
                rc = self.update(root, writer, meta)
            if rc != 0:
                self._undo_update(jobid, before, [*by, *fwide])
                self._span_seq = seq0
            else:
                self._xidx_follow(jobid)
        except BaseException:
            self._undo_update(jobid, before, [*by, *fwide])
            self._span_seq = seq0
            raise
        finally:
            self._undo = None
            self._xread = None
        return rc

    def _mark_paths(
        self, items: Sequence[tuple[int, int, bool]], listed: set[int], token: int, by: dict[int, list[int]]
    ) -> None:
        """Mark each item's edge from its parent, then the path up to a marked or listed vertex or the root.

        Items' edges get the item's units and exclusivity, the paths above them
        the vertex's size, not exclusive; ``by`` gathers the marked edges by source.
        """
        g = self.g
        pcol = g.parent_edge[self.dom]
        e_needs, e_excl, e_token, marked = self.e_needs, self.e_excl, self.e_token, self._marked
        src, vsize = g.e_src, g.v_size
        for v, units, excl in items:
            pe = pcol[v]
            if pe < 0:
                continue
            nd, x = units, bool(excl)
            while True:
                e_needs[pe] = nd
                e_excl[pe] = x
                e_token[pe] = token
                marked.append(pe)
                a = src[pe]
                lst = by.get(a)
                if lst is None:
                    by[a] = [pe]
                else:
                    lst.append(pe)
                # then the path from the root down to the subgraph, shared
                pe = pcol[a]
                if pe < 0 or e_token[pe] == token or a in listed:
                    break
                nd, x = vsize[a], False

    def _wide_of(self, jobid: int, sources: Iterable[int]) -> dict[int, list[int] | None]:
        """The job's entries in ``_wide_kids`` (copies) at the walk's marked vertices, for :meth:`_undo_update`.

        The walk changes the entries of the wide vertices it visits: the
        sources of marked edges, and vertices below one of an exclusive
        type, which the job cannot have held before (the check refuses it).
        O(marked vertices).
        """
        wide = self._wide_kids
        col = self.g.out[self.dom]
        out = {}
        for u in sources:
            if len(col[u]) > 64:
                have = wide.get((u, jobid), False)
                if have is not False:
                    out[u] = None if have is None else list(have)
        return out

    def _undo_update(
        self, jobid: int, before: tuple[bool, int, dict[int, list[int] | None]], sources: Iterable[int]
    ) -> None:
        """Put back what a failed ``update_allocate`` of ``jobid`` changed (the graph state as before).

        Vertices the walk recorded that the job did not hold before lose
        everything of the job (tags, windows, own and aggregate spans), as in
        a cancel; on those it held (a grow) the journal puts back the widened
        windows and the grown or added aggregate spans, newest first; edge
        weights the walk re-ranked get their old weight.  Span ids a planner
        handed out stay used, as after any failed add.  O(walk's vertices).
        """
        existed, n0, wide0 = before
        undo, self._undo = self._undo or [], None
        self.memo_clear()
        for rec in reversed(undo):
            kind = rec[0]
            if kind == _UNDO_GROW:
                _k, p, sid, counts, created = rec
                p.ungrow_span(sid, counts, created)
            elif kind == _UNDO_EXTRA:
                _k, p, key, old, new = rec
                p.rem_span(new)
                extra = self._extra_spans[key]
                extra.remove(old)
                if not extra:
                    del self._extra_spans[key]
                self.job2span[key[0]][key[1]][jobid] = old
                self._agg_touched(key[0], key[1])
            elif kind == _UNDO_XSPAN:
                _k, u, _j, old = rec
                _own(self.xspans, u)[jobid] = old
            else:
                _k, u, e, w = rec
                self._set_edge_weight(u, e, w)
        jv = self.job_vtx.get(jobid)
        touched = dict.fromkeys(sources)
        if jv is not None:
            held = set(jv[:n0])
            self._drop_memo = {}
            try:
                for v in dict.fromkeys(jv[n0:]):
                    touched[v] = None
                    if v not in held:
                        self._purge_vertex(v, jobid)
            finally:
                self._drop_memo = {}
            if existed:
                del jv[n0:]
            else:
                del self.job_vtx[jobid]
        wide = self._wide_kids
        for u in touched:
            if u not in wide0:
                wide.pop((u, jobid), None)
        for u, have in wide0.items():
            wide[(u, jobid)] = have

    def _items_writer_ok(self, writer: Any) -> bool:
        """May :meth:`_update_items` record an update for ``writer``?  (See there.)"""
        return not (writer.emits_edges or not writer.emit_exclusive_subtrees or self._fresh_upd_ready(writer))

    #: (graph version, token, new vertices, new roots or None) of the last ``attach_update``, until the
    #: next ``update_allocate`` (see :meth:`_fresh_plan`)
    _attached: tuple[int, int, set[int], list[int] | None] | None = None
    #: ``update_allocate`` records subtrees attached just before in bulk (:meth:`_upd_fresh_dfv`);
    #: False walks them as any other items -- the same state, slower (tests compare the two)
    fresh_bulk = True

    def _fresh_plan(
        self,
        att: tuple[int, int, set[int], list[int] | None],
        vs: Sequence[int],
        units_of: Sequence[int],
        excl_of: Sequence[bool],
        listed: set[int],
        writer: Any,
    ) -> tuple[list[tuple[int, int, bool]], set[int], int | None, dict[int, int] | None, set[int]] | None:
        """How ``update_allocate`` may record the subtrees the last ``attach_update`` added, in bulk.

        Applies when nothing has happened since that attach (same graph
        version and match token, so its vertices hold no state: every walk
        that gives state ticks the token), every new vertex is an item, one
        subsystem, a writer that writes nothing, and no exclusive item asks
        more units than its vertex has (the check's only refusal of a vertex
        without state; off this case the check runs over every item and
        reports the first refusal).  Returns the items the check and the
        marking still take (the others and the new roots), the new roots,
        the items' units (one number for all, or a map) and the items that
        are not exclusive; None off the case.  The new
        vertices below the roots are then neither checked nor marked: the
        walk (:meth:`_upd_fresh_dfv`) takes them from the graph.  O(items) at
        C speed.
        """
        version, token, newset, tops = att
        g = self.g
        if (
            not self.fresh_bulk
            or version != g.version
            or token != self.token
            or not newset
            or tops is None  # (the new subtrees' shape is known only when _prime_new primed them)
            or len(g.out) != 1
            or len(self.subsystems) != 1
            or not getattr(writer, "emits_nothing", False)
            or not self._items_writer_ok(writer)
        ):
            return None
        others = listed - newset
        if len(listed) - len(others) != len(newset):  # (listed.issuperset(newset), from the difference)
            return None
        # the items' units: one number for all (the usual grow: every vertex whole, of size 1) or a map
        # (every entry equal to the first, counted in C with an identity test first: set(units_of) of
        # one element, which is the first entry)
        u0 = units_of[0] if units_of and units_of.count(units_of[0]) == len(units_of) else None
        size = g.v_size.__getitem__
        if (not _fits_all(u0, g.v_size, vs)) if u0 is not None else not all(map(le, units_of, map(size, vs))):
            return None
        fu = None if u0 is not None else dict(zip(vs, units_of))
        # the items that are not exclusive (few: the vertices above the slots)
        nonx = _where_false(vs, excl_of)
        # (the items are given as columns: only these few become tuples)
        if len(others) <= 32:
            rest = [(vs[i], units_of[i], excl_of[i]) for i in sorted(map(vs.index, others))]  # in the items' order
        else:
            rest = list(compress(zip(vs, units_of, excl_of), map(not_, map(newset.__contains__, vs))))
        rest.extend((v, u0 if fu is None else fu[v], v not in nonx) for v in tops)
        return rest, set(tops), u0, fu, nonx

    def _update_items(
        self, root: int, writer: Any, meta: JobMeta, by: dict[int, list[int]], fresh: tuple | None = None
    ) -> int | None:
        """:meth:`update` of the edges ``update_allocate`` marked, walked from the marks, not the graph.

        The walk over the graph visits each marked vertex's out-edges and tests
        every child; this one visits exactly the marked edges, grouped by
        source in the walk's order (sibling order), and records each leaf
        inline: the leaves of one vertex that hold the same shared dicts (the
        cores of a node other jobs also use over other windows) take the same
        new dicts without a call each.  Each internal vertex's own span, tag,
        window and aggregate span are recorded by :meth:`_upd_sched`, once per
        vertex with the summed counts of its subtree, as in the walk.  The
        state, the span ids and the output are the walk's.

        Below a vertex of an exclusive type (a node under a node-exclusive
        policy) every child is taken whole, marked or not, as in the walk.
        ``by`` holds the marked edges by source vertex (``update_allocate``
        groups them as it marks; each vertex listed once).  Returns None,
        having changed nothing, off the case it covers: a writer that emits
        edges or hides exclusive subtrees, or a walk that would replay
        fresh-subtree templates.  ``fresh`` (from :meth:`_fresh_plan`): the new roots of subtrees
        attached just before, recorded by :meth:`_upd_fresh_dfv`.  O(marked edges + taken subtrees + depth).
        """
        if not self._items_writer_ok(writer):
            return None
        g = self.g
        seq = g.e_seq.__getitem__
        for lst in by.values():
            if len(lst) > 1:
                lst.sort(key=seq)
        needs, excl, _tok = self.v_rt_edges[self.dom]
        self._update_begin(meta)
        quiet = getattr(writer, "emits_nothing", False)
        record = meta.alloc_type != AT_SATISFIABILITY
        dom = self.dom
        # what every vertex of the walk reads, gathered once (the containment subsystem's
        # children first: the leaf test reads the others only for a vertex without any)
        outs = [g.out[dom], *(col for ss, col in g.out.items() if ss != dom)]
        ctx = (
            writer,
            meta,
            by,
            None if quiet else writer.emit_vtx,
            outs,
            record,
            self.allocs if meta.alloc_type == AT_ALLOC else self.resvs,
            outs[1:],
            self.prune.total,
            (self.vspans, self.tags, self.xspans),
            fresh,
        )
        shadow = g.v_type[root] in self.exclusive_types
        n = self._upd_items_dfv(root, needs, excl, {}, False, shadow, ctx)
        self._fhint = set()
        return self._update_end(writer, meta, n)

    def _upd_items_dfv(
        self,
        u: int,
        needs: int,
        excl: bool,
        to_parent: dict[str, int],
        excl_parent: bool,
        shadow: bool,
        ctx: tuple,
    ) -> int:
        """:meth:`_upd_dfv_plain` of ``u`` over its marked out-edges (see :meth:`_update_items`)."""
        writer, meta, by, emit, outs, record, table, others, total, cols, fresh = ctx
        g = self.g
        ep = self._epoch
        ep[u] = ep.get(u, 0) + 1
        if self._ep_log is not None:
            self._ep_log.append(u)
        self.trav_level += 1
        dst, vt, vsize = g.e_dst, g.v_type, g.v_size
        xtypes = self.exclusive_types
        # taken whole (an exclusive type, or below one): every child, all its units, exclusively
        mod = shadow or vt[u] in xtypes
        excl = excl or mod
        dcol = outs[0]
        acc: dict[str, int] = {}
        n_plans = 0
        leaf_t: str | None = None
        leaf_units = 0
        # the four new dicts of the last leaf recorded inline, and the four it held
        new4: tuple | None = None
        o0_ = o1_ = o2_ = o3_ = None
        last_nd = -1
        kids = dcol[u] if mod else by.get(u, ())
        e_excl, e_needs = self.e_excl, self.e_needs
        vspans, tags, xspans = cols
        jv_add = self._jv_add
        prefix = None if emit is None else self._levels[self.trav_level + 1]
        #: out-edges of ``u`` to children that recorded something: re-ranked at the end (first policy)
        ranked: list[int] | None = [] if self.stop_on_k else None
        # every child a leaf in every subsystem: no test per child
        leafy = self._leaf_family(u, outs)
        jobid = meta.jobid
        at = meta.at
        window = (at, at + meta.duration)
        for e in kids:
            tgt = dst[e]
            if mod:
                x = True
                nd = vsize[tgt]
            else:
                x = e_excl[e]
                nd = e_needs[e]
            if not leafy:
                inner = dcol[tgt]
                if not inner:
                    for col in others:
                        if col[tgt]:
                            inner = True
                            break
                if inner:
                    if fresh is not None and tgt in fresh[0]:
                        sub = self._upd_fresh_dfv(tgt, nd, x, acc, excl, mod, ctx)
                    else:
                        sub = self._upd_items_dfv(tgt, nd, x, acc, excl, mod, ctx)
                    if sub > 0:
                        if ranked is not None:
                            ranked.append(e)
                        n_plans += sub
                    continue
            if not (x or vt[tgt] in xtypes):
                continue
            o0, o1, o2, o3 = vspans[tgt], table[tgt], tags[tgt], xspans[tgt]
            if (
                type(o3) is dict
                and type(o2) is dict
                and (not record or (type(o0) is dict and type(o1) is dict))
            ):
                # a leaf with dicts of its own (held by many jobs, see _SHARE_MAX): _upd_leaf's
                # change in place, inline (such dicts are never a memo's: no shared state to take)
                if record:
                    self._span_seq = sid = self._span_seq + 1
                    o0[sid] = (at, window[1], nd)
                    o1[jobid] = sid
                o2[jobid] = jobid
                o3[jobid] = window
            else:
                if (
                    new4 is None
                    or nd != last_nd
                    or o0 is not o0_
                    or o1 is not o1_
                    or o2 is not o2_
                    or o3 is not o3_
                ):
                    if o0 is None and o1 is None and o2 is None and o3 is None:
                        got = self._leaf_shared.get(nd)
                        if got is None:
                            got = self._new_leaf_shared(nd, meta)
                    elif (
                        (o0 is None or type(o0) is _Shared)
                        and (o1 is None or type(o1) is _Shared)
                        and (o2 is None or type(o2) is _Shared)
                        and (o3 is None or type(o3) is _Shared)
                    ):
                        # _upd_leaf's memo, read here without the call (its dicts are alive: ids are theirs)
                        got = self._leaf_ext.get((id(o0), id(o1), id(o2), id(o3), nd, record))
                    else:
                        got = None
                    if got is None:
                        self._upd_leaf(tgt, writer, nd, meta, True, acc, prefix)
                        n_plans += 1
                        new4 = None
                        continue
                    new4, last_nd = got, nd
                    o0_, o1_, o2_, o3_ = o0, o1, o2, o3
                if record:
                    vspans[tgt] = new4[0]
                    table[tgt] = new4[1]
                tags[tgt] = new4[2]
                xspans[tgt] = new4[3]
            jv_add(tgt)
            t = vt[tgt]
            if t is leaf_t:
                leaf_units += vsize[tgt]
            elif t in total:
                if leaf_t is not None:
                    acc[leaf_t] = acc.get(leaf_t, 0) + leaf_units
                leaf_t = t
                leaf_units = vsize[tgt]
            if emit is not None:
                emit(prefix, g, tgt, nd, None, True)
            n_plans += 1
        if ranked:
            self._rerank(u, ranked, meta.now)
        if len(dcol[u]) > 64:
            self._wide_note(u, meta.jobid, mod, map(dst.__getitem__, kids))
        if leaf_t is not None:
            acc[leaf_t] = acc.get(leaf_t, 0) + leaf_units
        return self._upd_sched(
            u,
            None if emit is None else writer,
            self.dom,
            needs,
            excl,
            n_plans,
            meta,
            True,
            acc,
            to_parent,
            excl_parent,
        )

    @cython.wraparound(False)  # (every index here is a vertex or edge id or a loop count: never negative)
    @cython.locals(
        kids=list, m=cython.Py_ssize_t, j=cython.Py_ssize_t, ej=cython.Py_ssize_t, kj=cython.Py_ssize_t, inner=cython.bint
    )
    def _upd_fresh_dfv(
        self,
        u: int,
        needs: int,
        excl: bool,
        to_parent: dict[str, int],
        excl_parent: bool,
        shadow: bool,
        ctx: tuple,
    ) -> int:
        """:meth:`_upd_items_dfv` of ``u``, the root of a subtree attached just before, in bulk.

        Every vertex of the subtree is an item, holds no state and has only
        new children (see :meth:`_fresh_plan`), so the walk needs neither the
        check nor the marks: a vertex's marked out-edges are all of them, in
        sibling order, with the items' units and exclusivity.  A family of
        leaf children with one type, one number of units and all exclusive
        takes the allocation's shared leaf dicts column-wise (one slice per
        column when their handles are consecutive), with no step per leaf;
        every internal vertex is recorded by :meth:`_upd_sched` as in the
        walk (own span in postorder, tag, window, aggregate span), its
        children re-ranked and its wide-vertex entry made as there.  The
        state, the span ids and the job's vertex order are the walk's.
        O(subtree) at C speed for the leaves + O(internal vertices) in Python.
        """
        meta, outs, fresh = ctx[1], ctx[4], ctx[10]
        _tops, u0, fu, nonx, fwide, wide0 = fresh
        g = self.g
        ep = self._epoch
        ep[u] = ep.get(u, 0) + 1
        if self._ep_log is not None:
            self._ep_log.append(u)
        self.trav_level += 1
        vsize = g.v_size
        mod = shadow or g.v_type[u] in self.exclusive_types
        excl = excl or mod
        dcol = outs[0]
        es = dcol[u]
        if not mod and len(es) > 1:
            es = sorted(es, key=g.e_seq.__getitem__)  # the order of the marks the walk takes
        # (typed loops: a C index per child, where a map calls a method per child)
        e_dst = g.e_dst
        m = len(es)
        kids = []
        inner = False
        for j in range(m):
            ej = es[j]
            k = e_dst[ej]
            kids.append(k)  # (compiled: an append is inline, where an indexed store calls a helper)
            if not inner:
                kj = k
                if dcol[kj]:
                    inner = True
        acc: dict[str, int] = {}
        if not inner:
            n_plans = self._fresh_leaves(kids, mod, acc, ctx)
            ranked = None
        else:
            n_plans = 0
            #: out-edges of ``u`` to children that recorded something: re-ranked at the end (first policy)
            ranked = [] if self.stop_on_k else None
            for e, k in zip(es, kids):
                if dcol[k]:
                    if mod:
                        sub = self._upd_fresh_dfv(k, vsize[k], True, acc, excl, mod, ctx)
                    else:
                        nd = u0 if fu is None else fu[k]
                        sub = self._upd_fresh_dfv(k, nd, k not in nonx, acc, excl, mod, ctx)
                    if sub > 0:
                        if ranked is not None:
                            ranked.append(e)
                        n_plans += sub
                else:
                    n_plans += self._fresh_leaves([k], mod, acc, ctx)
        if ranked:
            self._rerank(u, ranked, meta.now)
        if len(es) > 64:
            jobid = meta.jobid
            wide = self._wide_kids
            fwide.append(u)
            if wide0 is not None and u not in wide0:
                # what update_allocate's _wide_of keeps of a marked vertex, for the undo
                have0 = wide.get((u, jobid), False)
                if have0 is not False:
                    wide0[u] = None if have0 is None else list(have0)
            self._wide_note(u, jobid, mod, kids)
        vspans, tags, xspans = ctx[9]
        table = ctx[6]
        dom = self.dom
        j2s = self.job2span.get(dom)
        if (
            vspans[u] is not None
            or table[u] is not None
            or tags[u] is not None
            or xspans[u] is not None
            or not ctx[5]
            or j2s is None
            or j2s[u] is not None
        ):
            # (a vertex attached just before holds nothing: kept exact for any other case)
            return self._upd_sched(u, None, dom, needs, excl, n_plans, meta, True, acc, to_parent, excl_parent)
        # _upd_sched of a vertex without state, inlined: the same changes in the same order
        at = meta.at
        jobid = meta.jobid
        end = at + meta.duration
        if excl:
            n_plans += 1
            self._span_seq = sid = self._span_seq + 1
            vspans[u] = {sid: (at, end, needs)}
            table[u] = {jobid: sid}
        if n_plans > 0:
            tags[u] = {jobid: jobid}
            self._jv_add(u)
            xspans[u] = {jobid: (at, end)}
            if acc:
                p = self.subplan[dom][u]
                if p is not None:
                    span = p.add_span_amounts(at, meta.duration, acc)  # may fail: see _undo_update
                    j2s[u] = {jobid: span}
                    self._agg_touched(dom, u)
            total = ctx[8]
            t = g.v_type[u]
            if t in total:
                vs = vsize[u]
                to_parent[t] = to_parent.get(t, 0) + (vs if excl else vs - needs)
            for t, c in acc.items():
                if t in total:
                    to_parent[t] = to_parent.get(t, 0) + c
        self.trav_level -= 1
        return n_plans

    @cython.wraparound(False)  # (every index here is a vertex id or a loop count: never negative)
    @cython.locals(kids=list, n=cython.Py_ssize_t, j=cython.Py_ssize_t, k=cython.Py_ssize_t, fast=cython.bint)
    def _fresh_leaves(self, kids: list[int], mod: bool, acc: dict[str, int], ctx: tuple) -> int:
        """Record the new leaves ``kids`` (siblings, in order) as the walk does; return how many it recorded.

        Each takes the allocation's shared dicts for its units (a leaf without
        state), a non-exclusive one only if its type is exclusive.  Leaves
        of one type, one number of units, all exclusive, are written a
        column at a time.
        """
        meta, record, table, total, cols, fresh = ctx[1], ctx[5], ctx[6], ctx[8], ctx[9], ctx[10]
        u0, fu, nonx = fresh[1], fresh[2], fresh[3]
        vt, vsize = self.g.v_type, self.g.v_size
        vspans, tags, xspans = cols
        n = len(kids)
        if mod:
            nds = list(map(vsize.__getitem__, kids))
        elif fu is None:
            nds = [u0] * n
        else:
            nds = list(map(fu.__getitem__, kids))
        nd = nds[0]
        t = vt[kids[0]]
        fast = (mod or nonx.isdisjoint(kids)) and ((fu is None and not mod) or nds.count(nd) == n)
        if fast:
            for j in range(1, n):  # one type (interned: the identity test decides)
                k = kids[j]
                x = vt[k]
                if x is not t and x != t:
                    fast = False
                    break
        if fast:
            s0, s1, s2, s3 = self._leaf_shared.get(nd) or self._new_leaf_shared(nd, meta)
            # typed indices (compiled: each write a C store into the list; a list subclass, as a
            # test's instrumented column, takes the object protocol)
            for j in range(n):
                k = kids[j]
                if record:
                    vspans[k] = s0
                    table[k] = s1
                tags[k] = s2
                xspans[k] = s3
            self._jv.extend(kids)
            if t in total:
                units: Any = 0
                for j in range(n):  # (as the writes above: no method call per leaf)
                    k = kids[j]
                    units = units + vsize[k]
                acc[t] = acc.get(t, 0) + units
            return n
        xtypes = self.exclusive_types
        jv_add = self._jv_add
        m = 0
        for k, nd in zip(kids, nds):
            if not (mod or k not in nonx or vt[k] in xtypes):
                continue
            s0, s1, s2, s3 = self._leaf_shared.get(nd) or self._new_leaf_shared(nd, meta)
            if record:
                vspans[k] = s0
                table[k] = s1
            tags[k] = s2
            xspans[k] = s3
            jv_add(k)
            t = vt[k]
            if t in total:
                acc[t] = acc.get(t, 0) + vsize[k]
            m += 1
        return m

    def _wide_note(self, u: int, jobid: int, mod: bool, kids: Iterable[int]) -> None:
        """As the walk: which children of wide vertex ``u`` the job reached (see :meth:`_upd_dfv_plain`).

        ``kids``: the children the walk took, in order; those now tagged with the job are added to
        its list (None: taken whole, all of them).
        """
        key = (u, jobid)
        have = None if mod else self._wide_kids.get(key, [])
        if have is None:
            self._wide_kids[key] = None
        else:
            tags = self.tags
            have.extend(k for k in kids if tags[k] is not None and jobid in tags[k])
            self._wide_kids[key] = have

    def _leaf_family(self, u: int, outs: list[list[list[int]]]) -> bool:
        """True if every child of ``u`` in the dominant subsystem is a leaf in every subsystem.

        Kept per vertex until the graph changes (``g.version``).  O(children) the first time, O(1) after.
        """
        g = self.g
        memo = self._leafy
        if memo is None or self._leafy_version != g.version:
            memo = self._leafy = {}
            self._leafy_version = g.version
        got = memo.get(u)
        if got is None:
            dst = g.e_dst
            got = memo[u] = not any(col[dst[e]] for e in outs[0][u] for col in outs)
        return got

    #: vertex -> :meth:`_leaf_family`'s answer, for the graph version ``_leafy_version``
    _leafy: dict[int, bool] | None = None
    _leafy_version = -1

    def _update_check(
        self, jobid: int, items: Sequence[tuple[int, int, bool]], at: int, duration: int
    ) -> tuple[int, str] | None:
        """The first exclusive item of ``update_allocate`` that cannot be had over the window, and why.

        An item fails when fewer than its units are free over the window (its
        own spans) or when another job uses it then (its ``xspans``, while the
        job does not already hold it).  A vertex's ``xspans`` holds every job
        that uses it or anything below it, over a window that covers the
        windows below (a grow widens it), so when an item's parent is an item
        whose ``xspans`` meets the window nowhere, the item's does not either
        and is not read (the cores listed after their node: one ``xspans``
        read per node instead of one per core).  Every span on a vertex lies
        inside its job's ``xspans`` window there, because a job holds a vertex
        once (a grow onto a vertex it holds is refused here), so an item whose
        window is clear has all its units free and its spans are not read; the
        others' spans are read once per span dict: the leaves of one
        allocation share theirs.
        """
        g = self.g
        xspans, tags, vspans, vsize = self.xspans, self.tags, self.vspans, g.v_size
        self._xread = []
        pcol = g.parent_edge[self.dom]
        src = g.e_src
        clear: set[int] = set()
        # leaves of one allocation share their span dicts: each dict (and size) is read once
        free: dict[tuple[int, int], int] = {}
        allocs, resvs, xtypes, vt = self.allocs, self.resvs, self.exclusive_types, g.v_type
        if xtypes:
            # the walk takes a vertex of an exclusive type whole (it and all below it, listed
            # or not) whenever an item is it or below it: the job must not use it already
            seen: set[int] = set()
            for v, _units, _excl in items:
                a = v
                while a not in seen:
                    seen.add(a)
                    if vt[a] in xtypes:
                        if tags[a] and jobid in tags[a]:
                            return (
                                a,
                                f"is already used by job {jobid} (a job holds a vertex once; release it first)",
                            )
                        # taken whole: no other job may use it or anything below it then (a
                        # non-exclusive item's own units may be free while its node is not)
                        if overlaps(xspans[a], at, duration):
                            return a, "is in use by another job"
                    pe = pcol[a]
                    if pe < 0:
                        break
                    a = src[pe]
        for v, units, excl in items:
            if not excl:
                continue
            # a job holds one span per vertex (Fluxion's allocations/reservations map a
            # jobid to one span; its update refuses a known jobid with a different R):
            # a second span would have no table entry, so its cancel could not find it
            a, r = allocs[v], resvs[v]
            if (a and jobid in a) or (r and jobid in r):
                return v, f"is already held by job {jobid} (a job holds a vertex once; release it first)"
            pe = pcol[v]
            if pe >= 0 and src[pe] in clear:
                live = False
            else:
                xs = xspans[v]
                if xs is not None and len(xs) >= _XIDX_MIN:
                    live = self._xs_meets(v, xs, at, at + duration, jobid)
                else:
                    live = overlaps(xs, at, duration)
            if not live:
                # every span on a vertex lies inside its job's xspans window there (a job
                # holds a vertex once, so no span is left outside it): none meets the window
                clear.add(v)
                if vsize[v] < units:
                    return v, "is not free for the window"
                continue
            sp = vspans[v]
            if sp:
                key = (id(sp), vsize[v])
                avail = free.get(key)
                if avail is None:
                    avail = free[key] = avail_during(sp, vsize[v], at, duration)
            else:
                avail = vsize[v]
            if avail < units:
                return v, "is not free for the window"
            if live and tags[v] and jobid not in tags[v]:
                return v, "is in use by another job"
        return None

    # ------------------------------------------------------------ the window index
    #: vertex -> [its xspans dict, its length, the vertex's change counter, sorted starts, sorted
    #: ends] when read (see :meth:`_xs_meets`); created on first use
    _xidx: dict[int, list[Any]] | None = None
    #: (vertex, the job's window there or None) of each index entry :meth:`_update_check` read
    _xread: list[tuple[int, tuple[int, int] | None]] | None = None

    def _xs_meets(self, v: int, xs: dict[int, tuple[int, int]], at: int, end: int, jobid: int) -> bool:
        """``overlaps(xs, at, end - at)`` for vertex ``v``'s windows ``xs``, from sorted starts and ends.

        Some window meets ``[at, end)`` iff more windows start before ``end``
        than end by ``at`` (a window that ends by ``at`` starts before it, as
        every window is non-empty and ``at < end``): O(log windows) instead of
        a scan.  The sorted lists are kept per vertex and trusted only while
        the vertex's dict is the same object, of the same length, with the
        same change counter (``_epoch``: bumped by every update and release
        walk through the vertex and every purge of its job state) as when
        they were last made exact; otherwise they are made again from the
        dict (O(windows log windows)).  The two walks that change the dicts
        most keep them exact as they go: a successful ``update_allocate``
        (:meth:`_xidx_follow`) and a cancel (``ReleaseStage._mod_dfv``).
        """
        idx = self._xidx
        if idx is None:
            idx = self._xidx = {}
        ep = self._epoch.get(v)
        ent = idx.get(v)
        n = len(xs)
        if ent is None or ent[0] is not xs or ent[1] != n or ent[2] != ep:
            vals = xs.values()
            starts = list(map(_first, vals))
            ends = list(map(_second, vals))
            if any(map(ge, starts, ends)):  # an empty window: the counting rule does not hold
                idx.pop(v, None)
                return overlaps(xs, at, end - at)
            starts.sort()
            ends.sort()
            ent = idx[v] = [xs, n, ep, starts, ends]
        self._xread.append((v, xs.get(jobid)))
        return bisect_left(ent[3], end) > bisect_right(ent[4], at)

    def _xidx_follow(self, jobid: int) -> None:
        """Keep the index entries :meth:`_update_check` read exact after ``jobid``'s update succeeded.

        The update wrote only ``jobid``'s window on each vertex (added, or widened by a grow):
        each entry trades the job's old window for its new one and takes the vertex's new stamp.
        O(entries read x log windows).
        """
        read, self._xread = self._xread, None
        idx = self._xidx
        if not read or idx is None:
            return
        xspans, ep = self.xspans, self._epoch
        for v, old in dict(read).items():  # an item listed twice was read twice, the same
            ent = idx.get(v)
            xs = xspans[v]
            if ent is None or xs is None:
                idx.pop(v, None)
                continue
            new = xs.get(jobid)
            if new != old:
                if new is not None and not new[0] < new[1]:
                    del idx[v]
                    continue
                starts, ends = ent[3], ent[4]
                if old is not None:
                    del starts[bisect_left(starts, old[0])]
                    del ends[bisect_left(ends, old[1])]
                if new is not None:
                    insort(starts, new[0])
                    insort(ends, new[1])
            ent[0], ent[1], ent[2] = xs, len(xs), ep.get(v)

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

    @cython.wraparound(False)  # (every index here is a vertex or edge id or a loop count: never negative)
    @cython.locals(k=cython.Py_ssize_t, v=cython.Py_ssize_t, up=cython.Py_ssize_t)
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
        tops_of: dict[str, list[int]] = {}  # subsystem -> the new roots, where _prime_new found them
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
            # each existing ancestor's totals rise once, by what all the new subtrees below it bring
            shifts: dict[int, dict[str, int]] = {}
            primed = self._prime_new(ss, new, newset)
            if primed is not None:
                counts, tops = primed
                tops_of[ss] = tops
                work = [(v, counts[v]) for v in tops]
            else:
                work = []
                for v in new:
                    pe = pcol[v] if pcol is not None else -1
                    parent = g.e_src[pe] if pe >= 0 else None
                    if parent is not None and parent in newset:
                        continue
                    self._colors = {}
                    contrib: dict[str, int] = {}
                    self._prime(ss, v, contrib, None)
                    work.append((v, contrib))
            for v, contrib in work:
                for a in g.ancestors(v, ss):
                    d = shifts.get(a)
                    if d is None:
                        shifts[a] = dict(contrib)
                    else:
                        for t, c in contrib.items():
                            d[t] = d.get(t, 0) + c
            for a, d in shifts.items():
                self._shift_totals(ss, a, d, +1)
        self._reset_color()
        vt, st = g.v_type, g.v_status
        up = 0
        for k in range(len(new)):  # (typed: a C index per vertex, where maps called a slot wrapper each)
            v = new[k]
            if vt[v] == "node" and st[v] == UP:
                up += 1
        self.nodes_up += up
        if self._outedges_built:
            oe = self._outedges
            for v in newset.intersection(oe):
                del oe[v]
            # the parents that are not new themselves (those were dropped just above)
            for ss in g.out:
                pcol = g.parent_edge.get(ss)
                if pcol is None:
                    continue
                src = g.e_src
                for v in tops_of.get(ss, new):  # (only a new root can have a parent that is not new)
                    pe = pcol[v]
                    if pe >= 0 and src[pe] not in newset:
                        oe.pop(src[pe], None)
        # for the allocation that usually follows (Engine.attach): see _fresh_plan
        self._attached = (g.version, self.token, newset, tops_of.get(self.dom))

    @cython.locals(
        kids=list,
        types=list,
        col=list,
        dst=list,
        vt=list,
        vs=list,
        pcol=list,
        src=list,
        order=list,
        leaves=list,
        v=cython.Py_ssize_t,
        pe=cython.Py_ssize_t,
        m=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        e=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        i=cython.Py_ssize_t,
        inner=cython.bint,
        same=cython.bint,
    )
    @cython.wraparound(False)  # (every index here is a vertex or edge id or a loop count: never negative)
    def _prime_new(
        self, ss: str, new: Sequence[int], newset: set[int]
    ) -> tuple[dict[int, dict[str, int]], list[int]] | None:
        """:meth:`_prime` of every new subtree at once, children before parents, without recursion.

        Sets the aggregates of the new internal vertices exactly as
        :meth:`_prime` would and returns each new vertex's counts (what it
        gives its parent; leaves below a new vertex are left out) and the
        new roots (new vertices without a new parent) in the order of ``new``.  Returns None, having set nothing, off the simple
        case: another subsystem, a new vertex with an existing child, or a
        leaf type not tracked yet (which :meth:`_prime` starts tracking
        mid-walk).  O(new).
        """
        g = self.g
        if len(g.out) != 1 or ss not in g.out:
            return None
        cols = (g.out[ss], g.e_dst, g.v_type, g.v_size, g.parent_edge[ss], g.e_src)
        if any(type(c) is not list for c in cols):
            return None  # (the columns are lists: read below by typed indices where compiled)
        col, dst, vt, vs, pcol, src = cols
        total = self.prune.total
        tracked = total.__contains__
        # breadth-first from the new roots over the internal vertices (every parent before its
        # children); leaves are only counted, a whole family of leaf children at C speed
        order: list[int] = []
        leaves: list[int] = []
        counts: dict[int, dict[str, int]] = {}
        tops: list[int] = []
        for v in new:
            if (pe := pcol[v]) < 0 or src[pe] not in newset:
                tops.append(v)
                if col[v]:
                    order.append(v)
                elif tracked(vt[v]):
                    leaves.append(v)
                    # a new root that is a leaf (other leaves count in their parent)
                    counts[v] = {vt[v]: vs[v]}
                else:
                    return None
        kids_of: dict[int, list[int]] = {}
        leaf_units: dict[int, dict[str, int]] = {}
        i = 0
        while i < len(order):
            v = order[i]
            i += 1
            es = col[v]
            m = len(es)
            # kids and types: lists of length m made here (appended to: compiled, an append is
            # inline where an indexed store calls a helper), which nothing else holds before
            # kids_of takes kids below; only they are read unchecked, at j in range(m)
            kids = []
            for j in range(m):  # (typed indices: C reads of the columns, compiled)
                e = es[j]
                kids.append(dst[e])
            if not newset.issuperset(kids):
                return None
            inner = False
            for j in range(m):  # (typed: a C read per child, where a map calls a method per child)
                with cython.boundscheck(False):
                    k = kids[j]
                if col[k]:
                    inner = True
                    break
            if not inner:
                # children all leaves: their units by type, without a Python step per child
                types = []
                for j in range(m):
                    with cython.boundscheck(False):
                        k = kids[j]
                    types.append(vt[k])
                first = types[0]
                same = types.count(first) == m
                if not (tracked(first) if same else all(map(tracked, types))):
                    return None
                leaves.extend(kids)
                if same:
                    units: Any = 0
                    for j in range(m):
                        with cython.boundscheck(False):
                            k = kids[j]
                        units = units + vs[k]
                    leaf_units[v] = {first: units}
                else:
                    d: dict[str, int] = {}
                    for t, k in zip(types, kids):
                        d[t] = d.get(t, 0) + vs[k]
                    leaf_units[v] = d
                continue
            kids_of[v] = kids
            for k in kids:
                if col[k]:
                    order.append(k)
                elif tracked(vt[k]):
                    leaves.append(k)
                else:
                    return None
        if len(order) + len(leaves) != len(newset) or not ints_distinct(order + leaves):
            return None  # a vertex with two parents, or new vertices no new root reaches
        types_for = self.prune.types_for
        plans = self.subplan[ss]
        start, length = self.graph_start, self.graph_end - self.graph_start
        made: list[tuple[int, PlannerMulti]] = []
        for v in reversed(order):
            t = vt[v]
            dfv = leaf_units.get(v)
            if dfv is None:
                dfv = {}
                for k in kids_of[v]:
                    got = counts.get(k)
                    if got is None:  # a leaf: its own units (tracked, checked above)
                        tt = vt[k]
                        dfv[tt] = dfv.get(tt, 0) + vs[k]
                    else:
                        for tt, c in got.items():
                            dfv[tt] = dfv.get(tt, 0) + c
            mine = {t: vs[v]} if t in total else {}
            for tt, c in dfv.items():
                mine[tt] = mine.get(tt, 0) + c
            counts[v] = mine
            ptypes = types_for(t)
            if ptypes:
                made.append((v, PlannerMulti(start, length, [dfv.get(pt, 0) for pt in ptypes], ptypes)))
        for v, p in made:
            plans[v] = p
        return counts, tops

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
