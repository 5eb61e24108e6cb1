"""Pruning-filter configuration: which subtree aggregates each vertex keeps.

A filter spec is Fluxion's ``HL:LL[,HL:LL...]`` string: at every vertex of type
``HL`` (``ALL`` for every type) keep an aggregate of how many ``LL`` units are
free in its subtree, over time.  ``ALL:core,ALL:node`` (the default) lets the
matcher skip any subtree without enough free cores or nodes.

Types are ordered the way Fluxion's interned strings are: by first use, not by
name.  The order decides the layout of each vertex's aggregate planner and,
for the ``first`` policy, which aggregate orders the children.
"""

from __future__ import annotations

from fluxlite.errors import InputError

__all__ = ["ANY", "PruneFilters", "TypeOrder"]

ANY = "*"

# Types Fluxion interns at start-up, in that order (data_std.cpp).
_PREDEFINED = ("cluster", "core", "socket", "gpu", "node", "rack", "slot")


class TypeOrder:
    """Resource types numbered in order of first use (Fluxion's interner)."""

    __slots__ = ("rank",)

    def __init__(self) -> None:
        self.rank: dict[str, int] = {}
        for t in _PREDEFINED:
            self.intern(t)

    def intern(self, t: str) -> int:
        r = self.rank.get(t)
        if r is None:
            r = self.rank[t] = len(self.rank)
        return r

    def key(self, t: str) -> int:
        r = self.rank.get(t)
        return self.intern(t) if r is None else r


class PruneFilters:
    """Parsed pruning-filter spec for one subsystem."""

    __slots__ = ("_cache", "anchors", "order", "total", "version")

    def __init__(self, spec: str, order: TypeOrder) -> None:
        self.order = order
        #: anchor type (or ANY) -> pruned types
        self.anchors: dict[str, set[str]] = {}
        #: every pruned type
        self.total: set[str] = set()
        self._cache: dict[str, tuple[str, ...]] = {}
        #: bumped by every :meth:`add` (readers keep what they derive until it changes)
        self.version = 0
        spec = spec.strip()
        if spec:
            for pair in spec.split(","):
                self._register(pair)

    def _register(self, pair: str) -> None:
        hl, sep, ll = pair.partition(":")
        hl = "".join(hl.split())
        ll = "".join(ll.split())
        if not sep or not hl or not ll:
            raise InputError(f"invalid prune filter {pair!r}: expected HL-type:LL-type (e.g. ALL:core)")
        anchor = ANY if hl == "ALL" else hl
        self.order.intern(anchor if anchor != ANY else ll)
        self.order.intern(ll)
        self.add(anchor, ll)

    def add(self, anchor: str, ptype: str) -> None:
        """Install ``ptype`` as tracked at ``anchor`` vertices (Fluxion's set_pruning_type)."""
        if anchor == ANY:
            for s in self.anchors.values():
                s.discard(ptype)
            self.anchors.setdefault(ANY, set()).add(ptype)
        elif ptype not in self.anchors.get(ANY, ()):
            self.anchors.setdefault(anchor, set()).add(ptype)
        self.total.add(ptype)
        self._cache.clear()
        self.version += 1

    def is_pruning_type(self, t: str) -> bool:
        return t in self.total

    def types_for(self, anchor_type: str) -> tuple[str, ...]:
        """Aggregated types kept at a vertex of ``anchor_type``, in Fluxion's order."""
        got = self._cache.get(anchor_type)
        if got is not None:
            return got
        key = self.order.key
        out = sorted(self.anchors.get(anchor_type, ()), key=key)
        if anchor_type != ANY:
            out += sorted((t for t in self.anchors.get(ANY, ()) if t != anchor_type), key=key)
        got = self._cache[anchor_type] = tuple(out)
        return got

    def __str__(self) -> str:
        parts = []
        for anchor, types in self.anchors.items():
            for t in sorted(types, key=self.order.key):
                parts.append(f"{'ALL' if anchor == ANY else anchor}:{t}")
        return ",".join(parts)
