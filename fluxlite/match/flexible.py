"""The flexible traverser: jobspecs with ``or_slot`` and ``xor_slot`` alternatives (Fluxion's dfu_flexible).

This module owns what ``-T flexible`` changes over the simple traverser,
following Fluxion v0.54's ``resource/traversers/dfu_flexible.cpp`` step by
step, so that the same jobspec picks the same resources:

* **or_slot**: several ``slot`` siblings at one level are alternatives for
  each slot position.  At the vertex where the slots are formed the walk
  explores the *union* of the alternatives' resource types (per type the
  request with the largest ``count.min``), counts what qualifies, and then
  :meth:`FlexibleTraverser.select_or_config` chooses, by exhaustive search
  with a memo over the remaining counts, the sequence of alternatives that
  places the most slots; among equally good choices the first alternative
  in jobspec order wins.  With one slot alternative the number of slots is
  bounded by the slot's count (its effective max), with several it is not.
  Edge groups are then taken best-first (the match policy's order) per type.
* **xor_slot**: :func:`split_xor_slots` expands the jobspec into variants
  (each xor_slot sibling becomes a plain slot, one per variant, nested ones
  expanded recursively, cross product with required siblings, at most
  :data:`MAX_XOR_EXPANSION` variants); :meth:`FlexibleTraverser.select` tries
  the variants in order and keeps the first that matches.
* Pruning: an or_slot level asks the subtree aggregates for the *minimum*
  over the alternatives (Fluxion's ``min_if``), so a subtree that can serve
  any alternative is explored; for slots the last alternative's aggregate
  check decides (as Fluxion's ``prune_resources``).
* A resource sibling of an or_slot at the same level is refused at match
  time with Fluxion's "siblings in jobspec request same resource type".

Everything else (update, cancel, info, find, reservations, satisfiability)
is the simple traverser's, so a failed match leaves the state as it was.
The exact shortcuts of :mod:`fluxlite.match.shortcuts` and
:mod:`fluxlite.match.rootcache` stay on for every jobspec, with or without
alternatives, and give the plain walk's results (checked by the differential
test ``tests/fluxlite/test_flexible_shortcuts.py``, shortcuts on vs off):

* the root's aggregate check (no walk when the root has too few free units)
  reads :meth:`FlexibleTraverser.lower_bound`, the minimum over *all*
  alternatives, not Fluxion's primed counts, whose running minimum depends on
  the alternatives' order and is no lower bound;
* the skip index reads the same primed counts per request as the walk's own
  pruning (the ``min_if`` counts above), so it skips only what the walk prunes;
* the memo of the pass-through root's children (and the root cache) is keyed
  by the request's structure *and* its primed counts: an xor_slot variant
  keeps the whole jobspec's counts, a plain jobspec of the same shape not;
* best-first with early stop never plans over slot requests, and or_slot
  slots are formed from a full exploration of the vertex's children (the
  number of slots to place is not known before :meth:`select_or_config`),
  so there the walk is the plain one.

:func:`check_jobspec` refuses, for the Python API, slot alternatives the
chosen traverser cannot honour (a
:class:`~fluxlite.errors.JobspecError` naming the field); the REPL keeps
Fluxion's own messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from fluxlite.graph import UP
from fluxlite.match._common import (
    _NONE_MATCH,
    _PRISTINE_NONE_MATCH,
    _RESOURCE_MATCH,
    _SLOT_MATCH,
    AT_SATISFIABILITY,
    JobMeta,
    calc_count,
    calc_effective_max,
)
from fluxlite.match._scoring import Dfu
from fluxlite.match._traverser import Traverser

__all__ = [
    "MAX_XOR_EXPANSION",
    "TRAVERSER_POLICIES",
    "FlexibleTraverser",
    "check_jobspec",
    "split_xor_slots",
]

#: Fluxion's SYSTEM_MAX_XOR_EXPANSION: at most this many xor_slot variants
MAX_XOR_EXPANSION = 1000

#: the traverser policies of Fluxion v0.54 (``-T``)
TRAVERSER_POLICIES = ("simple", "flexible")


class XorExpansionError(ValueError):
    """Expanding xor_slot alternatives would give more than :data:`MAX_XOR_EXPANSION` variants."""


def _too_many(n: int) -> None:
    if n > MAX_XOR_EXPANSION:
        raise XorExpansionError(f"more than {MAX_XOR_EXPANSION} xor_slot variants")


def split_xor_slots(resources: Sequence[Any], origin: dict[int, Any] | None = None) -> list[tuple[Any, ...]]:
    """The xor_slot-free variants of ``resources``, in the order Fluxion tries them.

    Each variant is a tuple of requests: every non-xor sibling (its children
    expanded, cross product over siblings), plus exactly one xor_slot option
    (turned into a ``slot``) when the level has any.  A level without
    xor_slots anywhere below gives one variant, the requests unchanged.
    ``origin`` (if given) maps ``id`` of each new request to the request it
    was copied from.  Raises :class:`XorExpansionError` past
    :data:`MAX_XOR_EXPANSION` variants at any step.  O(variants x size).
    """
    base: list[tuple[Any, ...]] = [()]
    xor_options: list[Any] = []
    for r in resources:
        kids = split_xor_slots(r.with_, origin)
        if r.type == "xor_slot":
            for kv in kids:
                opt = dataclasses.replace(r, type="slot", with_=kv)
                if origin is not None:
                    origin[id(opt)] = origin.get(id(r), r)
                xor_options.append(opt)
                _too_many(len(xor_options))
            continue
        nxt: list[tuple[Any, ...]] = []
        for variant in base:
            for kv in kids:
                if kv is r.with_ or tuple(kv) == tuple(r.with_):
                    expanded = r
                else:
                    expanded = dataclasses.replace(r, with_=kv)
                    if origin is not None:
                        origin[id(expanded)] = origin.get(id(r), r)
                nxt.append((*variant, expanded))
                _too_many(len(nxt))
        base = nxt
    if not xor_options:
        if len(base) == 1 and base[0] == tuple(resources):
            return [resources if isinstance(resources, tuple) else tuple(resources)]
        return base
    out: list[tuple[Any, ...]] = []
    for variant in base:
        for opt in xor_options:
            out.append((*variant, opt))
            _too_many(len(out))
    return out


def _alternatives(resources: Sequence[Any], where: str) -> Iterator[tuple[str, int, int]]:
    """Levels that hold slot alternatives: (field path, slot siblings, xor_slot siblings)."""
    nslot = sum(1 for r in resources if r.type == "slot")
    nxor = sum(1 for r in resources if r.type == "xor_slot")
    if nslot > 1 or nxor:
        yield where, nslot, nxor
    for i, r in enumerate(resources):
        if r.with_:
            yield from _alternatives(r.with_, f"{where}[{i}].with")


def check_jobspec(jobspec: Any, traverser_policy: str = "simple") -> None:
    """Refuse, before any walk, slot alternatives the chosen traverser cannot honour.

    With ``simple``, a level with several ``slot`` siblings (or_slot) or any
    ``xor_slot`` is refused: Fluxion's simple traverser does not understand
    alternatives (it stops at "siblings in jobspec request same resource
    type" where it tests the siblings, knows no xor_slot, and below a
    resource silently uses the last slot only), so the Python API asks for
    ``traverser_policy="flexible"`` instead.  The REPL (:meth:`Engine.match`)
    keeps Fluxion's behaviour.  With ``flexible``, xor_slot alternatives that
    expand to more than :data:`MAX_XOR_EXPANSION` variants are refused
    (Fluxion's EOVERFLOW).
    Raises :class:`~fluxlite.errors.JobspecError` naming the field.
    """
    from fluxlite.errors import JobspecError

    resources = getattr(jobspec, "resources", None)
    if not resources:
        return
    if traverser_policy == "simple":
        for where, nslot, nxor in _alternatives(resources, "resources"):
            what = f"{nslot} slot siblings (or_slot)" if nslot > 1 else f"{nxor} xor_slot sibling(s)"
            raise JobspecError(
                f"{where}: {what} are alternatives, which only the flexible traverser matches "
                "(traverser_policy='flexible', fluxlite query -T flexible)"
            )
        return
    try:
        split_xor_slots(resources)
    except XorExpansionError as exc:
        raise JobspecError(f"resources: xor_slot alternatives expand to {exc}") from None


def has_alternatives(resources: Sequence[Any]) -> bool:
    """True if any level holds an ``xor_slot`` or more than one ``slot`` (or_slot alternatives)."""
    slots = 0
    for r in resources:
        if r.type == "xor_slot":
            return True
        if r.type == "slot":
            slots += 1
        if has_alternatives(r.with_):
            return True
    return slots > 1


class FlexibleTraverser(Traverser):
    """The DFU traverser with Fluxion's flexible matching of or_slot/xor_slot alternatives."""

    #: its own per-vertex tests: a constrained match walks the whole graph (not checked restricted)
    restrict = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: the jobspec being matched has slot alternatives (or_slot / xor_slot), and its requests
        self._alternatives = False
        self._jobspec_resources: Sequence[Any] = ()
        super().__init__(*args, **kwargs)
        #: the xor_slot variant that matched last (its requests), or None
        self.chosen_variant: tuple[Any, ...] | None = None
        self._variant_keep: list[Any] = []

    def _schedule(self, jobspec: Any, meta: JobMeta, x: bool, op: str, root: int, dfv: dict[str, int]) -> int:
        self._alternatives = has_alternatives(jobspec.resources)
        self._jobspec_resources = jobspec.resources
        try:
            return super()._schedule(jobspec, meta, x, op, root, dfv)
        finally:
            self._alternatives = False
            self._jobspec_resources = ()

    def _root_has_room(self, root: int, meta: JobMeta, dfv: dict[str, int]) -> bool:
        if self._alternatives:
            dfv = self.lower_bound(self._jobspec_resources)
        return super()._root_has_room(root, meta, dfv)

    def lower_bound(self, resources: Sequence[Any]) -> dict[str, int]:
        """Free units of each pruning type that any successful match of ``resources`` needs.

        Unlike Fluxion's priming (:meth:`_prime_combine`), which folds slot
        alternatives by a running minimum that depends on their order (a type
        only a later alternative asks for keeps that alternative's count),
        alternatives combine here by the minimum over *all* of them, a type
        that one of them does not ask for counting 0.  That is a true lower
        bound: a match forms at least ``max(count.min)`` disjoint slots, each
        holding at least the smallest alternative's units.  O(jobspec).
        """
        out: dict[str, int] = {}
        alts: dict[str, int] | None = None
        for r in resources:
            mine = self.lower_bound(r.with_)
            if r.type in ("slot", "xor_slot"):
                units = {t: r.count.min * c for t, c in mine.items()}
                if r.type in self.prune.total:
                    units[r.type] = r.count.min
                if alts is None:
                    alts = units
                else:
                    alts = {t: min(c, units[t]) for t, c in alts.items() if t in units}
                continue
            self._accum_if(r.type, r.count.min, out)
            for t, c in mine.items():
                self._accum_if(t, r.count.min * c, out)
        for t, c in (alts or {}).items():
            self._accum_if(t, c, out)
        return out

    # ------------------------------------------------------------ jobspec priming
    def _min_if(self, t: str, count: int, lowest: dict[str, int]) -> None:
        if t in self.prune.total:
            cur = lowest.get(t)
            if cur is None or cur > count:
                lowest[t] = count

    def _prime_combine(self, r: Any, mine: dict[str, int], to_parent: dict[str, int]) -> None:
        """As the simple traverser, but slot alternatives combine by minimum (Fluxion's min_if)."""
        if r.type not in ("slot", "xor_slot"):
            super()._prime_combine(r, mine, to_parent)
            return
        for t, c in mine.items():
            self._min_if(t, r.count.min * c, to_parent)
        # a type one alternative does not need must not prune the others
        for t in list(to_parent):
            if t not in mine:
                self._min_if(t, 0, to_parent)

    # ------------------------------------------------------------ select
    def select(self, resources: Sequence[Any], root: int, meta: JobMeta, excl: bool) -> int:
        """Try each xor_slot variant in order; the first that matches is kept."""
        origin: dict[int, Any] = {}
        try:
            variants = split_xor_slots(resources, origin)
        except XorExpansionError:
            self.err_msg += "select: split_xor_slots failed.\nValue too large for defined data type\n"
            self.errno = "EOVERFLOW"
            return -1
        if origin:
            ud = self._ud
            for new_id, old in origin.items():
                got = ud.get(id(old))
                if got is not None:
                    ud[new_id] = got
            self._variant_keep = variants  # keep the copies alive while their ids are keys
        self.chosen_variant = None
        for variant in variants:
            if super().select(variant, root, meta, excl) == 0:
                self.chosen_variant = variant
                return 0
        return -1

    # ------------------------------------------------------------ per-vertex test
    def _test(
        self, u: int, resources: Sequence[Any], pristine: bool
    ) -> tuple[int, Sequence[Any], int, bool, str]:
        t = self.g.v_type[u]
        match_r = None
        slots: Sequence[Any] | None = None
        nslots = 0
        matched = or_matched = False
        for r in resources:
            if r.type == t:
                if matched or or_matched:
                    self.err_msg += f"test: siblings in jobspec request same resource type : {t}.\n"
                    return _NONE_MATCH, resources, nslots, pristine, ""
                match_r = r
                for c in r.with_:
                    if c.type == "slot":
                        slots = r.with_
                        nslots = calc_effective_max(c)
                matched = True
            elif r.type == "slot":
                if matched:
                    self.err_msg += f"test: siblings in jobspec request same resource type : {t}.\n"
                    return _NONE_MATCH, resources, nslots, pristine, ""
                slots = resources
                # as Fluxion: the last slot alternative decides the number of slots
                nslots = calc_effective_max(r)
                or_matched = True
        if slots is not None:
            for r in slots:
                if self._slot_match(u, r):
                    return _SLOT_MATCH, slots, nslots, False, r.label
            return (_PRISTINE_NONE_MATCH if pristine else _NONE_MATCH), resources, nslots, pristine, ""
        if match_r is not None:
            return _RESOURCE_MATCH, match_r.with_, nslots, False, ""
        return (_PRISTINE_NONE_MATCH if pristine else _NONE_MATCH), resources, nslots, pristine, ""

    def _prune(self, meta: JobMeta, excl: bool, ss: str, u: int, resources: Sequence[Any]) -> int:
        g = self.g
        if meta.alloc_type != AT_SATISFIABILITY and g.v_status[u] != UP:
            return -1
        t = g.v_type[u]
        if meta.constraint is not None and t == "node" and not self._constraint_match(meta.constraint, u):
            return -1
        if self._avail(u, meta.at, meta.duration) == 0:
            return -1
        rc = 0
        for r in resources:
            rt = r.type
            if t != rt and rt != "slot":
                continue
            if rt != "slot":
                if self._by_excl(meta, u, excl, r) == -1 or self._by_subplan(meta, ss, u, r) == -1:
                    return -1
                rc = 0
            else:
                # a failing slot alternative does not stop the others: the last one checked decides
                rc = self._by_subplan(meta, ss, u, r)
        return rc

    # ------------------------------------------------------------ or_slot selection
    def select_or_config(
        self,
        slots: Sequence[Any],
        counts: dict[str, int],
        nslots: int,
        memo: dict[tuple[tuple[str, int], ...], tuple[dict[str, int], int, int]],
    ) -> tuple[dict[str, int], int, int]:
        """The best sequence of slot alternatives for ``counts`` qualified units per type.

        Returns ``(counts left after the first choice, slots placed, index of the
        first choice)``; the memo maps counts to that answer, so following the
        "counts left" keys replays the whole sequence.  Ties go to the earlier
        alternative.  One alternative: ``min(nslots, counts // per-slot)``, with
        ``nslots`` read as a C ``int`` as Fluxion does (so an unbounded slot
        count gives -1, see :meth:`_dom_slot`).
        Exponential in the worst case, memoized on the remaining counts.
        """
        key = tuple(sorted(counts.items()))
        got = memo.get(key)
        if got is not None:
            return got
        if len(slots) == 1:
            # Fluxion keeps this in a C int: an unbounded slot count (UINT_MAX) reads as -1
            most = nslots - (1 << 32) if nslots >= 1 << 31 else nslots
            for elem in slots[0].with_:
                have = counts.get(elem.type)
                count = calc_count(elem, counts.get(elem.type, 0))
                if have is None or have < count or count <= 0:
                    most = 0
                    break
                most = min(most, have // count)
            memo[key] = (counts, most, 0)
            return memo[key]
        best = -1
        for i, slot in enumerate(slots):
            left = dict(counts)
            ok = True
            for elem in slot.with_:
                count = calc_count(elem, counts.get(elem.type, 0))
                if count <= 0:
                    ok = False
                    break
                left[elem.type] = left.get(elem.type, 0) - count
            if not ok:
                continue
            placed = self.select_or_config(slots, left, nslots, memo)[1]
            if best < placed:
                best = placed
                memo[key] = (left, best + 1, i)
        if best < 0:
            memo[key] = ({}, 0, -1)
        return memo[key]

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
        """Form slots at ``u`` from the alternatives ``slot_shape`` (Fluxion's dfu_flexible::dom_slot)."""
        slots = slot_shape
        union: dict[str, Any] = {}
        for slot in slots:
            for r in slot.with_:
                have = union.get(r.type)
                # the largest request per type, or first-match policies would stop short
                if have is None or have.count.min < r.count.min:
                    union[r.type] = r
        shape = [union[t] for t in sorted(union)]
        dfu_slot = Dfu()
        if self._explore(meta, u, self.dom, shape, pristine, True, True, dfu_slot, nslots, 0) != 0:
            return -1
        for t in list(dfu_slot.evals):
            dfu_slot.choose_accum_all(t, self.slot_descending)
        counts = {t: dfu_slot.qualified_count(t) for t in sorted(union)}
        memo: dict[tuple[tuple[str, int], ...], tuple[dict[str, int], int, int]] = {}
        config = self.select_or_config(slots, counts, nslots, memo)
        # ... and the slot loop reads it back as unsigned: -1 runs until the edge
        # groups are used up, then fails with "not enough slots" (as in Fluxion)
        qual = config[1] if config[1] >= 0 else config[1] + (1 << 32)
        groups = []
        iters: dict[str, int] = {}
        for _ in range(qual):
            grp = self._take_slot(dfu_slot, slots[config[2]].with_, iters)
            if grp is None:
                return -1
            groups.append(grp)
            config = memo.get(tuple(sorted(config[0].items())), ({}, 0, -1))
        for grp in groups:
            dfu.add("slot", grp)
        return 0 if qual else -1
