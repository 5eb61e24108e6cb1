"""Root cache: the pass-through root's merged child evaluations, kept across matches.

When the graph root matches nothing in the request (a ``slot`` or a
``socket`` asked for directly, as T8 does), every child of the root is a
candidate and Fluxion merges all their edge groups before choosing.  The
memo of :mod:`fluxlite.match.shortcuts` already reuses each child's
evaluation while no update or cancel walk went through it, but still loops
over every child per match (16,384 on N16384) and merges their groups one by
one.  This module keeps, for one request context, the concatenation of the
children's groups per type (with their scores as a numpy array), and after a
match re-evaluates only the children an update or cancel walk went through
(found from the epoch log those walks write), splicing their groups in
place.  The root then receives the same groups, in the same order, as the
full merge, and :func:`fluxlite.match._scoring._choose_prefix` picks the
winners among them without sorting the rest.  Per match the cost is
O(children touched since the last match) Python steps plus O(children) numpy
work.

Used only for wide roots (:data:`ROOT_CACHE_MIN` children or more) whose
children are all internal vertices of one type.  The entries are the memo's,
so invalidation is the memo's: a new request context or ``memo_clear``
replaces the memo dict, and the cache is rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fluxlite.match._common import pack_marks
from fluxlite.match._scoring import Dfu, Evals

__all__ = ["ROOT_CACHE_MIN", "RootCache", "explore_root_cached"]

#: fewest children of the root for which the cache pays off (at 128 children,
#: L0 with ``low``, a T8 match takes ~0.45 ms with it and ~0.6 ms without)
ROOT_CACHE_MIN = 64


class RootCache:
    """Per-type concatenations of the evaluations of the root's children, in graph order."""

    __slots__ = (
        "entries",
        "key",
        "kids",
        "log",
        "memo",
        "pos",
        "post",
        "pre",
        "sig",
        "sigs",
        "types",
        "volatile",
    )

    def __init__(self, key: tuple, memo: dict, kids: list[tuple[int, int]]) -> None:
        self.key = key
        self.memo = memo
        #: (edge, child) in graph (sibling) order
        self.kids = kids
        self.pos = {v: j for j, (_e, v) in enumerate(kids)}
        #: per child: (rc, exclusive, Dfu, marks, preorder, postorder)
        self.entries: list[tuple] = [()] * len(kids)
        #: type -> [egroups, scores (np.int64), starts (np.int64, len n + 1), qual, total, children having it]
        self.types: dict[str, list[Any]] = {}
        #: per child: the tuple of its Dfu's types (None when rc != 0); counts of each tuple
        self.sig: list[tuple | None] = [None] * len(kids)
        self.sigs: dict[tuple, int] = {}
        #: children whose evaluation could not be memoized (re-evaluated every match)
        self.volatile: set[int] = set()
        self.pre = 0
        self.post = 0
        #: vertices that update/cancel walks went through since the last match
        self.log: list[int] = []


class _Deferred:
    """The marks of the cached children, replayed when the update walk enters one (read-only view)."""

    __slots__ = ("cache", "done")

    def __init__(self, cache: RootCache) -> None:
        self.cache = cache
        self.done: set[int] = set()

    def __bool__(self) -> bool:
        return True

    def __contains__(self, u: int) -> bool:
        """Would :meth:`pop` give marks for ``u``?"""
        j = self.cache.pos.get(u)
        if j is None or u in self.done:
            return False
        ent = self.cache.entries[j]
        return bool(ent and ent[3])

    def pop(self, u: int, default: Any = None) -> Any:
        c = self.cache
        j = c.pos.get(u)
        if j is None or u in self.done:
            return default
        self.done.add(u)
        ent = c.entries[j]
        return ent[3] if ent and ent[3] else default


def _evaluate(
    tr: Any, meta: Any, e: int, tgt: int, resources: Sequence[Any], pristine: bool, excl: bool
) -> tuple:
    """The child's (rc, x, Dfu, marks, pre, post) from the memo, or a fresh evaluation (memoized if clean)."""
    memo = tr._memo
    ep = tr._epoch.get(tgt, 0)
    got = memo.get(tgt)
    if got is not None and got[0] == ep:
        return (*got[1:], True)
    marked = tr._marked
    m0, pre0, post0 = len(marked), tr.preorder, tr.postorder
    err0 = (tr.err_msg, tr.errno)
    rc, x, cd = tr._eval_child(meta, e, tgt, resources, pristine, excl)
    e_needs, e_excl = tr.e_needs, tr.e_excl
    marks = pack_marks(marked[m0:], e_needs, e_excl)
    pre, post = tr.preorder - pre0, tr.postorder - post0
    clean = (tr.err_msg, tr.errno) == err0
    if clean:
        memo[tgt] = (ep, rc, x, cd, marks, pre, post)
    # the fresh visit's counts are already in tr.preorder/postorder
    tr.preorder, tr.postorder = pre0, post0
    return (rc, x, cd, marks, pre, post, clean)


def _set_entry(c: RootCache, j: int, ent: tuple, building: bool) -> None:
    """Put child ``j``'s evaluation in the per-type concatenations (replacing its old groups)."""
    rc, _x, cd, _marks, pre, post, clean = ent
    old = c.entries[j]
    if old:
        c.pre -= old[4]
        c.post -= old[5]
    c.entries[j] = ent[:6]
    c.pre += pre
    c.post += post
    if clean:
        c.volatile.discard(j)
    else:
        c.volatile.add(j)
    osig = c.sig[j]
    nsig = tuple(cd.evals) if rc == 0 else None
    if osig is not None:
        n = c.sigs[osig] - 1
        if n:
            c.sigs[osig] = n
        else:
            del c.sigs[osig]
    if nsig is not None:
        c.sigs[nsig] = c.sigs.get(nsig, 0) + 1
    c.sig[j] = nsig
    n_kids = len(c.kids)
    for t in set(osig or ()) | set(nsig or ()):
        slot = c.types.get(t)
        if slot is None:
            slot = c.types[t] = [
                [],
                [],
                [0] * n_kids if building else np.zeros(n_kids + 1, dtype=np.int64),
                0,
                0,
                0,
            ]
        new = cd.evals[t] if (nsig is not None and t in cd.evals) else None
        egs_new = new.egroups if new is not None else []
        if building:
            # children arrive in order: append (scores and starts become arrays at the end)
            slot[0].extend(egs_new)
            slot[1].extend(eg[0] for eg in egs_new)
            slot[2][j] = len(egs_new)
        else:
            starts = slot[2]
            a, b = int(starts[j]), int(starts[j + 1])
            slot[0][a:b] = egs_new
            slot[1] = np.concatenate(
                (slot[1][:a], np.asarray([eg[0] for eg in egs_new], dtype=np.int64), slot[1][b:])
            )
            d = len(egs_new) - (b - a)
            if d:
                starts[j + 1 :] += d
        if osig is not None and t in osig:
            oev = old[2].evals[t]
            slot[3] -= oev.qual_count
            slot[4] -= oev.total_count
            slot[5] -= 1
        if new is not None:
            slot[3] += new.qual_count
            slot[4] += new.total_count
            slot[5] += 1


def explore_root_cached(
    tr: Any,
    meta: Any,
    u: int,
    ss: str,
    resources: Sequence[Any],
    pristine: bool,
    excl: bool,
    dfu: Dfu,
    kid_edges: list[int],
) -> int | None:
    """The pass-through root's exploration from the cache; None when the cache does not apply here.

    Same groups, same order, same marks (replayed on entry) as visiting
    every child and merging their evaluations in graph order.
    """
    g = tr.g
    col = g.out[ss]
    dst = g.e_dst
    key = (u, ss, g.version, id(tr._memo))
    c: RootCache | None = tr._rootc
    if c is None or c.key != key or c.memo is not tr._memo or len(c.log) > 4 * len(c.kids):
        seq = g.e_seq
        edges = sorted(kid_edges, key=seq.__getitem__)
        if any(not col[dst[e]] for e in edges):
            return None
        c = RootCache(key, tr._memo, [(e, dst[e]) for e in edges])
        tr._rootc = None
        tr._ep_log = None
        for j, (e, v) in enumerate(c.kids):
            _set_entry(c, j, _evaluate(tr, meta, e, v, resources, pristine, excl), True)
        for slot in c.types.values():
            slot[1] = np.asarray(slot[1], dtype=np.int64)
            slot[2] = np.concatenate(([0], np.cumsum(slot[2], dtype=np.int64)))
        tr._rootc = c
        tr._ep_log = c.log
    else:
        dirty = {c.pos[v] for v in c.log if v in c.pos}
        c.log.clear()
        dirty |= c.volatile
        for j in sorted(dirty):
            e, v = c.kids[j]
            _set_entry(c, j, _evaluate(tr, meta, e, v, resources, pristine, excl), False)
    if len(c.sigs) > 1:
        # children disagree on which types they report: merge them one by one (exact, O(children))
        found = False
        for ent in c.entries:
            if ent[0] == 0:
                dfu.merge(ent[2])
                found = True
        rc = 0 if found else -1
    elif not c.sigs:
        rc = -1
    else:
        (order,) = c.sigs
        for t in order:
            slot = c.types[t]
            ev = dfu.evals.get(t)
            if ev is None:
                # the root's own Dfu is never chosen from or added to (its type is not
                # requested): it may hold the cache's list, which its parent copies (Dfu.absorb
                # copies an Evals with keys: keep them set here)
                ev = dfu.evals[t] = Evals()
                ev.egroups = slot[0]
                ev.keys = slot[1]
            else:
                ev.egroups.extend(slot[0])
            ev.qual_count += slot[3]
            ev.total_count += slot[4]
        rc = 0
    tr.preorder += c.pre
    tr.postorder += c.post
    tr._deferred = _Deferred(c)
    return rc
