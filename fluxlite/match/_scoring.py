"""Scoring bookkeeping of the depth-first-and-up (DFU) match walk.

While the traverser walks the resource graph, every vertex that *could* serve
a jobspec request reports an *edge group* to its parent: its score (higher or
lower is better depending on the policy), how many units it offers, whether it
is wanted exclusively, and the graph edges that lead to it.  A vertex that
matched a jobspec resource with children then picks the best ``k`` edge
groups of each requested child type (``choose_best_k``); the chosen edges are
marked so that the update walk later allocates exactly them.

The selection must order edge groups exactly as Fluxion does, including how
ties between equal scores are broken, because fluxlite's outputs are compared
byte for byte with Fluxion's.  Fluxion sorts with ``std::sort`` from GNU
libstdc++ (introsort, not stable); :func:`std_sort` reproduces that algorithm
step by step, and is only used when a tie is actually present (otherwise any
correct sort gives the same order).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

# the std::sort replay lives in _stdsort (so _sortprefix can use its heap sort without importing this
# module); its names stay importable from here
from fluxlite.match._stdsort import (  # noqa: F401
    _k_partial_sort,
    _partial_sort,
    std_sort,
    std_sort_keyed,
)

__all__ = ["MATCH_MET", "MATCH_UNMET", "Dfu", "Evals", "std_sort"]

MATCH_UNMET = 0
MATCH_MET = 1

# An edge group is a tuple (score, count, exclusive, root, edges) where edges is
# a tuple of (count, needs, exclusive, eid) tuples.  Egroup fields by index:
SCORE, COUNT, EXCL, ROOT, EDGES = 0, 1, 2, 3, 4


class Evals:
    """All edge groups of one resource type seen below one vertex."""

    __slots__ = ("best_i", "best_k", "egroups", "iter_cur", "keys", "qual_count", "total_count")

    def __init__(self) -> None:
        self.egroups: list[tuple] = []
        #: the scores of ``egroups`` as a numpy array, when a bulk producer has
        #: them (valid only while its length is that of ``egroups``)
        self.keys: Any = None
        self.qual_count = 0
        self.total_count = 0
        self.best_k = 0
        self.best_i = 0
        self.iter_cur = 0

    def add(self, eg: tuple) -> None:
        self.total_count += eg[COUNT]
        if eg[SCORE] > 0:  # cutline is 0
            self.qual_count += eg[COUNT]
        self.egroups.append(eg)

    def merge(self, o: Evals) -> None:
        self.qual_count += o.qual_count
        self.total_count += o.total_count
        if not self.egroups:
            self.keys = o.keys
        self.egroups.extend(o.egroups)

    def choose_best_k(self, k: int, descending: bool) -> bool:
        """Order the edge groups best-first and mark the first ones covering ``k`` units."""
        if k == 0 or k > self.qual_count:
            return False
        egs = self.egroups
        keys = self.keys
        self.keys = None
        if keys is not None and len(keys) == len(egs) and len(egs) > _PREFIX_MIN:
            i = _choose_prefix(egs, keys, k, descending)
        else:
            sort_egroups(egs, descending)
            i = 0
            left = k
            while left > 0:
                left -= egs[i][COUNT]
                i += 1
        self.best_k = k
        self.best_i = i
        return True


#: above this many edge groups with their scores at hand, only the chosen front is sorted
_PREFIX_MIN = 256


def _choose_prefix(egs: list[tuple], keys: Any, k: int, descending: bool) -> int:
    """Move the first groups of std::sort's order covering ``k`` units to the front; return how many.

    The groups behind them are left in an unspecified order (nothing reads
    past ``best_i``).  See :mod:`fluxlite.match._sortprefix`.
    """
    from fluxlite.match._sortprefix import std_sort_prefix_blocks

    front: list[int] = []
    left = k
    i = 0
    for block in std_sort_prefix_blocks(-keys if descending else keys):
        for j in block.tolist():
            front.append(j)
            if left > 0:
                left -= egs[j][COUNT]
                i += 1
        if left <= 0:
            break
    # a permutation of egs with ``front`` first: O(len(front))
    m = len(front)
    items = [egs[j] for j in front]
    taken = set(front)
    displaced = [egs[p] for p in range(m) if p not in taken]
    holes = [j for j in front if j >= m]
    for h, d in zip(holes, displaced, strict=True):
        egs[h] = d
    egs[:m] = items
    return i


def sort_egroups(egs: list[tuple], descending: bool) -> None:
    """Sort edge groups by score exactly as libstdc++'s std::sort would."""
    n = len(egs)
    if n < 2:
        return
    if n <= 16:
        # libstdc++ sorts up to 16 elements by insertion, which is stable -- so is Python's sort
        egs.sort(key=_score, reverse=descending)
        return
    scores = [eg[0] for eg in egs]
    if len(set(scores)) == n:
        # No ties: the sorted order is unique.  Ties with n <= 16: libstdc++
        # uses insertion sort, which is stable -- so is Python's sort.
        egs.sort(key=_score, reverse=descending)
        return
    # ties: libstdc++'s introsort order, replayed over the (negated when descending) scores
    std_sort_keyed([-s for s in scores] if descending else scores, egs)


#: an edge group's score (the sort key; itemgetter runs in C, a def per call would not)
_score = itemgetter(SCORE)


class Dfu:
    """The scoring API object of one vertex visit (Fluxion's ``scoring_api_t``).

    ``evals`` maps a resource type to its :class:`Evals`; ``overall_score``
    and ``avail`` are how a child passes its result up to the parent.
    """

    __slots__ = ("avail", "evals", "hier_constrain_now", "overall_score")

    def __init__(self) -> None:
        self.evals: dict[str, Evals] = {}
        self.hier_constrain_now = False
        self.overall_score = -1
        self.avail = 0

    def get(self, t: str) -> Evals:
        ev = self.evals.get(t)
        if ev is None:
            ev = self.evals[t] = Evals()
        return ev

    def add(self, t: str, eg: tuple) -> None:
        ev = self.evals.get(t)
        if ev is None:
            ev = self.evals[t] = Evals()
        ev.add(eg)

    def qualified_count(self, t: str) -> int:
        ev = self.evals.get(t)
        return 0 if ev is None else ev.qual_count

    def total_count(self, t: str) -> int:
        ev = self.evals.get(t)
        return 0 if ev is None else ev.total_count

    def merge(self, o: Dfu) -> None:
        for t, oev in o.evals.items():
            ev = self.evals.get(t)
            if ev is None:
                ev = self.evals[t] = Evals()
            ev.merge(oev)

    def absorb(self, o: Dfu) -> None:
        """:meth:`merge` of a Dfu its caller drops right after (a visit's own, see
        ``SelectStage._resolve``): an :class:`Evals` of a type this one lacks is taken over rather
        than copied into a new one, which is what the copy would hold (same counts, groups and keys;
        none chosen yet: one chosen would have made the visit enforce instead of merge).  An Evals
        made costs more than the rest of the merge; every successful visit merges into its parent.

        Copied as :meth:`merge` does: an Evals with groups chosen, and one with bulk scores
        (``keys``), whose group list may be one its producer keeps (the root cache's, see
        ``rootcache.explore_root_cached``: the parent sorts what it takes over).  Nothing else may
        hold ``o`` or its other Evals."""
        evals = self.evals
        for t, oev in o.evals.items():
            ev = evals.get(t)
            if ev is None:
                if oev.keys is None and not oev.best_k and not oev.best_i:
                    evals[t] = oev
                    continue
                ev = evals[t] = Evals()
            ev.merge(oev)

    def choose_accum_best_k(self, t: str, k: int, descending: bool) -> None:
        ev = self.get(t)
        if ev.choose_best_k(k, descending):
            self.hier_constrain_now = True

    def choose_accum_all(self, t: str, descending: bool) -> None:
        ev = self.get(t)
        if ev.choose_best_k(ev.qual_count, descending):
            self.hier_constrain_now = True
