"""Graph state: the per-vertex columns kept aligned with the graph, and the aggregates primed.

Owns the graph-observer callbacks (a vertex or edge added or removed keeps
every per-vertex column the same length as the graph), the priming of
subtree aggregates (``initialize``, ``_prime``: one bottom-up pass counting
each pruning type under every vertex), the order of out-edges, and
``prime_jobspec`` (which types a jobspec asks for under each request).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import Any

from fluxlite.graph import UP
from fluxlite.match._common import (
    _TRISTATE_TRUE,
    UINT64_MAX,
    JobMeta,
)
from fluxlite.planner import PlannerMulti

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed
    from fluxlite import _cyshim as cython


#: ``-UINT64_MAX`` (the key of an edge never weighed) as ``_rank_set_typed`` compares it with ``sent``
_NEG_U64 = -UINT64_MAX
#: what it is compared as: below every other key value it lets through (they are >= -2**62)
_SENT = -(2**63)


@cython.locals(
    keys=list,
    t=tuple,
    n=cython.Py_ssize_t,
    lo=cython.Py_ssize_t,
    hi=cython.Py_ssize_t,
    mid=cython.Py_ssize_t,
    i=cython.Py_ssize_t,
    pos=cython.Py_ssize_t,
    ow_c=cython.Py_ssize_t,
    w_c=cython.Py_ssize_t,
    a0=cython.Py_ssize_t,
    a1=cython.Py_ssize_t,
    a2=cython.Py_ssize_t,
    n0=cython.Py_ssize_t,
    b0=cython.Py_ssize_t,
    b1=cython.Py_ssize_t,
    b2=cython.Py_ssize_t,
    lt=cython.bint,
    found=cython.bint,
    sent=cython.bint,
    w_sent=cython.bint,
    sent_c=cython.Py_ssize_t,
)
def _rank_set_typed(keys: list, ow: int, nuq: int, e: int, w: int, sent: bool = False) -> bool:
    """What :meth:`GraphStateStage._set_edge_weight` does to a ranked out-edge list ``keys`` (sorted
    ``(-weight, nuq, e)`` tuples) when edge ``e``'s weight goes from ``ow`` to ``w``, by C compares.

    False, with ``keys`` unchanged, when a value it compares is not an ``int`` well inside the C range
    (an edge whose weight was never set has ``UINT64_MAX``): the caller then takes the object
    compares.  Every search is done before the one change: the old key's ``bisect_left``, its
    neighbours' ``<`` tests, and for a move the new key's ``bisect_right`` (``insort``'s position),
    one less past the removed old key.  For tuples of three ints these are the tuples' own
    (lexicographic) compares, so the list ends the same.  Run pure, this is not called.

    ``keys`` is read without index checks (compiled): every read is at ``0 <= index < n`` with
    ``n = len(keys)`` (a search's ``lo <= mid < hi <= n``, the neighbours' ``i > 0`` and
    ``i + 1 < n`` tests), and ``keys`` changes only after the last read, at the end.  Nothing in
    between runs Python code: an entry that is not a tuple raises at the typed ``t``, a value that
    is not an ``int`` returns before it is converted.

    ``sent``: the weight ``UINT64_MAX`` of an edge never weighed (every edge of a new graph: the
    first update through each vertex meets it) is compared as ``_SENT``, below every other value
    compared; any other value outside ``[-2**62, 2**62)`` then answers False, so the order of the
    C values is that of the ints.  The callers try without it first: with it each
    weight read costs an object compare."""
    try:
        if type(ow) is not int or type(nuq) is not int or type(e) is not int or type(w) is not int:
            return False
        a1 = nuq
        a2 = e
        neg = _NEG_U64  # (locals: a global is a dict lookup per read)
        sent_c = _SENT
        w_sent = sent and w == UINT64_MAX
        if sent and ow == UINT64_MAX:
            a0 = sent_c
        else:
            ow_c = ow
            if (ow_c >> 62) not in (0, -1):  # outside [-2**62, 2**62)
                return False  # (negated in C below)
            a0 = -ow_c
        if w_sent:
            n0 = sent_c
        else:
            w_c = w
            if (w_c >> 62) not in (0, -1):
                return False
            n0 = -w_c
        n = len(keys)
        # the old key's lower bound (bisect_left)
        lo = 0
        hi = n
        while lo < hi:
            mid = (lo + hi) >> 1
            with cython.boundscheck(False), cython.wraparound(False):  # (in range: see above)
                t = keys[mid]
            x0, x1, x2 = t[0], t[1], t[2]
            if type(x0) is not int or type(x1) is not int or type(x2) is not int:
                return False
            if sent and x0 == neg:
                b0 = sent_c
            else:
                b0 = x0
                if sent and (b0 >> 62) not in (0, -1):
                    return False
            b1 = x1
            b2 = x2
            if b0 < a0 or (b0 == a0 and (b1 < a1 or (b1 == a1 and b2 < a2))):
                lo = mid + 1
            else:
                hi = mid
        i = lo
        found = False
        if i < n:
            with cython.boundscheck(False), cython.wraparound(False):  # (in range: see above)
                t = keys[i]
            x0, x1, x2 = t[0], t[1], t[2]
            if type(x0) is not int or type(x1) is not int or type(x2) is not int:
                return False
            if sent and x0 == neg:
                b0 = sent_c
            else:
                b0 = x0
                if sent and (b0 >> 62) not in (0, -1):
                    return False
            b1 = x1
            b2 = x2
            found = b0 == a0 and b1 == a1 and b2 == a2
        if found:
            if n0 == a0:
                return True  # the same key: nothing moves
            # the rank is kept when the neighbours still bracket the new key
            lt = True
            if i > 0:
                with cython.boundscheck(False), cython.wraparound(False):  # (in range: see above)
                    t = keys[i - 1]
                x0, x1, x2 = t[0], t[1], t[2]
                if type(x0) is not int or type(x1) is not int or type(x2) is not int:
                    return False
                if sent and x0 == neg:
                    b0 = sent_c
                else:
                    b0 = x0
                    if sent and (b0 >> 62) not in (0, -1):
                        return False
                b1 = x1
                b2 = x2
                lt = b0 < n0 or (b0 == n0 and (b1 < a1 or (b1 == a1 and b2 < a2)))
            if lt and i + 1 < n:
                with cython.boundscheck(False), cython.wraparound(False):  # (in range: see above)
                    t = keys[i + 1]
                x0, x1, x2 = t[0], t[1], t[2]
                if type(x0) is not int or type(x1) is not int or type(x2) is not int:
                    return False
                if sent and x0 == neg:
                    b0 = sent_c
                else:
                    b0 = x0
                    if sent and (b0 >> 62) not in (0, -1):
                        return False
                b1 = x1
                b2 = x2
                lt = n0 < b0 or (n0 == b0 and (a1 < b1 or (a1 == b1 and a2 < b2)))
            if lt:
                keys[i] = (-w if w_sent else n0, nuq, e)
                return True
        # the new key's upper bound (bisect_right: insort's place)
        lo = 0
        hi = n
        while lo < hi:
            mid = (lo + hi) >> 1
            with cython.boundscheck(False), cython.wraparound(False):  # (in range: see above)
                t = keys[mid]
            x0, x1, x2 = t[0], t[1], t[2]
            if type(x0) is not int or type(x1) is not int or type(x2) is not int:
                return False
            if sent and x0 == neg:
                b0 = sent_c
            else:
                b0 = x0
                if sent and (b0 >> 62) not in (0, -1):
                    return False
            b1 = x1
            b2 = x2
            if n0 < b0 or (n0 == b0 and (a1 < b1 or (a1 == b1 and a2 < b2))):
                hi = mid
            else:
                lo = mid + 1
        pos = lo
        if found:
            del keys[i]
            if pos > i:
                pos -= 1  # the old key (before the new one) is gone
        keys.insert(pos, (-w if w_sent else n0, nuq, e))
        return True
    except OverflowError:  # a key's value past the C range (nothing changed yet)
        return False


class GraphStateStage:
    """Per-vertex state kept in step with the graph (a mixin of :class:`~fluxlite.match.Traverser`)."""

    #: the journal of a running ``update_allocate`` (see ``UpdateStage._undo_update``), else None
    _undo: list[tuple[Any, ...]] | None = None

    # ------------------------------------------------------------ observers
    def _vertex_columns(self) -> list[list[Any]]:
        """Every per-vertex column of the traverser's state (what an added or removed vertex resets)."""
        return [
            self.vspans,
            self.allocs,
            self.resvs,
            self.tags,
            self.xspans,
            *self.subplan.values(),
            *self.job2span.values(),
        ]

    def vertex_added(self, vid: int) -> None:
        self.memo_clear()
        self.types.intern(self.g.v_type[vid])
        cols = self._vertex_columns()
        for col in cols:
            if vid == len(col):
                col.append(None)
            elif vid < len(col):
                col[vid] = None
            else:
                col.extend([None] * (vid + 1 - len(col)))
        self._outedges.pop(vid, None)

    @cython.locals(
        ids=list,
        k=cython.Py_ssize_t,
        n=cython.Py_ssize_t,
        v=cython.Py_ssize_t,
        m=cython.Py_ssize_t,
        hi=cython.Py_ssize_t,
        lo=cython.Py_ssize_t,
        first=cython.Py_ssize_t,
        run=cython.bint,
    )
    def vertices_added(self, vids: Sequence[int]) -> None:
        """Bulk form of :meth:`vertex_added`.  O(len(vids)): typed loops (compiled, C reads of the
        columns; a run of one type, as in a subtree, is one set lookup)."""
        self.memo_clear()
        vt = self.g.v_type
        ids = vids if type(vids) is list else list(vids)
        n = len(ids)
        types: set[str] = set()
        last: Any = None
        # lo, hi: min and max of the ids, found in this loop (C compares, where max() and min() compare
        # objects); run: the ids are lo, lo+1, ..., in order (a subtree refilling the holes its removal left)
        run = n > 0
        first = hi = lo = ids[0] if n else -1
        for k in range(n):
            v = ids[k]
            if v > hi:
                hi = v
            elif v < lo:
                lo = v
            if run and v != first + k:
                run = False
            t = vt[v]
            if t is not last:
                types.add(t)
                last = t
        for t in types:
            self.types.intern(t)
        cols = self._vertex_columns()
        for col in cols:
            m = len(col)
            if m <= hi:
                col.extend([None] * (hi + 1 - m))
            if lo >= m:
                continue  # every new vertex is in the part just added, None already (the usual attach)
            if run and hi < m:
                col[lo : hi + 1] = [None] * n  # (one slice: a step per entry in C)
                continue
            for k in range(n):
                v = ids[k]
                if col[v] is not None:
                    col[v] = None
        oe = self._outedges
        if oe:
            if len(oe) <= n:  # (the cache's keys in the ids' range are the only candidates: usually none)
                near = [x for x in oe if lo <= x <= hi]
                dead = set(ids).intersection(near) if near else ()
            else:
                dead = oe.keys() & ids  # (found in C: not a pop per new vertex)
            for x in dead:
                del oe[x]

    @cython.locals(ids=list, k=cython.Py_ssize_t, n=cython.Py_ssize_t, m=cython.Py_ssize_t, v=cython.Py_ssize_t)
    def vertices_removed(self, vids: Sequence[int]) -> None:
        """:meth:`vertex_removed` of each of ``vids``, one typed pass per column (a bulk removal).  O(len(vids))."""
        if not vids:
            return
        self.memo_clear()
        ids = vids if type(vids) is list else list(vids)
        n = len(ids)
        for col in self._vertex_columns():
            m = len(col)
            for k in range(n):
                v = ids[k]
                if v < m:
                    col[v] = None
        oe = self._outedges
        if oe:
            for v in oe.keys() & set(vids):
                del oe[v]

    def vertex_removed(self, vid: int) -> None:
        self.memo_clear()
        for col in self._vertex_columns():
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
        self._win.clear()
        self._win_of.clear()
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
            # (a list built in one loop with the columns read once, then sorted: a generator read
            # three attributes per edge)
            ew, uq, dst = self.e_weight, g.v_uniq, g.e_dst
            keys = [(-ew[e], -uq[dst[e]], e) for e in lst]
            keys.sort()
            self._outedges[u] = keys
        return keys

    def _upd_by_outedges(self, ss: str, meta: JobMeta, u: int, e: int) -> None:
        """Re-rank out-edge ``e`` of ``u`` by its child's free units of the last pruning type at ``meta.now``."""
        col = self.subplan.get(ss)
        g = self.g
        p = col[g.e_dst[e]] if col is not None else None
        if p is None:
            return
        pls = p._planners
        if not pls:
            return
        avail = pls[-1].avail_resources_at(meta.now)
        if avail == 0 and not p._spans:
            return
        # _outedge_order's answer where u's ranked out-edges are made already
        keys = self._outedges.get(u) if self._outedges_built else None
        if keys is None:
            keys = self._outedge_order(u)  # builds u's ranked out-edges if they are not yet
            if keys is None:
                return
        ew = self.e_weight
        ow = ew[e]
        if self._undo is not None:
            self._undo.append((3, u, e, ow))  # update._UNDO_WEIGHT
        w = 0 if avail < 0 else avail
        # _set_edge_weight inlined (keys: u's list, as _set_edge_weight would find it)
        nuq = -g.v_uniq[g.e_dst[e]]
        # with the sentinel when e was never weighed, and again with it when a sibling never was
        # (the first matches on a new graph): the object compares below cost ten times more
        if cython.compiled and (
            _rank_set_typed(keys, ow, nuq, e, w, ow == UINT64_MAX)
            or (ow != UINT64_MAX and _rank_set_typed(keys, ow, nuq, e, w, True))
        ):
            ew[e] = w
        else:
            self._set_edge_weight(u, e, w)

    def _set_edge_weight(self, u: int, e: int, w: int) -> None:
        """Give out-edge ``e`` of ``u`` weight ``w``, keeping ``u``'s ranked out-edges in order."""
        keys = self._outedges.get(u)
        ew = self.e_weight
        if keys is not None:
            g = self.g
            uq = -g.v_uniq[g.e_dst[e]]
            ow = ew[e]
            if cython.compiled and (
                _rank_set_typed(keys, ow, uq, e, w, ow == UINT64_MAX)
                or (ow != UINT64_MAX and _rank_set_typed(keys, ow, uq, e, w, True))
            ):
                ew[e] = w
                return
            old = (-ew[e], uq, e)
            new = (-w, uq, e)
            i = bisect_left(keys, old)
            if i < len(keys) and keys[i] == old:
                if new != old:
                    if (i == 0 or keys[i - 1] < new) and (i + 1 == len(keys) or new < keys[i + 1]):
                        keys[i] = new  # its rank is kept: no deletion and insertion
                    else:
                        del keys[i]
                        insort(keys, new)
            else:
                insort(keys, new)
        ew[e] = w

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
            self._prime_combine(r, mine, to_parent)

    def _prime_combine(self, r: Any, mine: dict[str, int], to_parent: dict[str, int]) -> None:
        """Add request ``r``'s subtree counts (``mine``, per unit of ``r``) into its parent's."""
        for t, c in mine.items():
            self._accum_if(t, r.count.min * c, to_parent)

    # ------------------------------------------------------------ pruning
