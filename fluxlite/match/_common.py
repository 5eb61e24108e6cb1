"""Constants, job metadata and small helpers shared by every stage of the traverser.

Owns: time limits (``SYSTEM_*``), allocation kinds (``AT_*``), match kinds and
exploration modes, :func:`calc_count` (how many units a count range selects),
:class:`JobMeta`, node-centric score factors, and the copy-on-write helpers
for per-vertex dicts shared by many leaves of one allocation, and the packed
form of a memoized evaluation's edge marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from fluxlite.jobspec import Tristate

SYSTEM_DEFAULT_DURATION = 43200
SYSTEM_MAX_DURATION = 3153600000
UINT_MAX = 4294967295
UINT64_MAX = 18446744073709551615

AT_ALLOC = 0
AT_RESERVE = 1
AT_SATISFIABILITY = 2

# match kinds
_RESOURCE_MATCH, _SLOT_MATCH, _NONE_MATCH, _PRISTINE_NONE_MATCH = 0, 1, 2, 3

# exploration modes: who chooses among the children explored at a vertex
_MODE_FULL = 0  # an ancestor, among candidates from several subtrees: visit all
_MODE_LOCAL = 1  # this vertex (it matched a resource with children requests)
_MODE_SLOT = 2  # this vertex, forming slots of fixed shape
_MODE_ROOT = 3  # the graph root, a pass-through whose children are all candidates

_TRISTATE_TRUE = Tristate.TRUE
_TRISTATE_FALSE = Tristate.FALSE


def calc_count(r: Any, qc: int) -> int:
    """How many units of resource request ``r`` to select when ``qc`` qualify (Fluxion's calc_count)."""
    c = r.count
    lo, hi = c.min, c.max
    if lo > hi or lo > qc:
        return 0
    op = c.oper
    operand = c.operand
    if op == "+":
        count = qc if qc < hi else hi
        rng = count - lo
        return count - (rng % operand if operand else 0)
    if op == "*":
        if operand == 1:
            return lo
        count = 0
        cur = lo
        while cur <= qc and cur <= hi:
            count = cur
            cur *= operand
            if operand == 0:
                break
        return count
    if op == "^":
        if operand < 2 or lo == 1:
            return lo
        count = 0
        cur = lo
        while cur <= qc and cur <= hi:
            base = cur
            count = cur
            for _ in range(1, operand):
                cur *= base
        return count
    return 0


_NO_MEMO = (-1,)


def _request_sig(resources: Sequence[Any], ud: dict[int, dict[str, int]]) -> tuple:
    """A hashable value equal for requests that every walk treats alike.

    The structure, and the pruning counts ``ud`` (the traverser's primed
    ``user_data``) of each request: those are not always a function of the
    structure -- an xor_slot variant keeps the counts primed for the whole
    jobspec, minimum over all its alternatives -- and they decide which
    subtrees a walk skips.
    """
    out = []
    for r in resources:
        d = ud.get(id(r))
        out.append(
            (
                r.type,
                r.count,
                r.unit,
                r.label,
                r.id,
                r.exclusive,
                tuple(sorted(d.items())) if d else (),
                _request_sig(r.with_, ud),
            )
        )
    return tuple(out)


def calc_effective_max(r: Any) -> int:
    return calc_count(r, UINT_MAX)


@dataclass(slots=True)
class JobMeta:
    """What one match is for: job id, window and kind (Fluxion's jobmeta_t)."""

    jobid: int
    at: int
    now: int
    duration: int
    alloc_type: int = AT_ALLOC
    constraint: Any = None
    queue: str = ""


class _ScoreFactor:
    __slots__ = ("add_by", "factor", "multiply_by")

    def __init__(self, add_by: int, multiply_by: int) -> None:
        self.add_by = add_by
        self.multiply_by = multiply_by
        self.factor = 0

    def calc(self, base: int, tie: int) -> int:
        mul = (base + self.add_by) * self.multiply_by
        t = abs(_cmod(tie, self.multiply_by) - 1)
        self.factor = mul + t
        return self.factor


class _Shared(dict):  # type: ignore[type-arg]
    """A per-vertex dict shared by many leaves of one allocation (copy before changing it)."""

    __slots__ = ()


def _drop(col: list[Any], u: int, key: int, memo: dict[tuple[int, int], tuple] | None = None) -> Any:
    """Remove ``key`` from the dict ``col[u]`` without changing a dict shared with other vertices.

    With ``memo`` (one per release walk), vertices that share a dict get one
    shared dict without ``key`` in its place (it stays shared, so the next
    allocation over them can share again); the memo keeps each old dict
    alive, so an id in its keys is never another dict's.
    """
    d = col[u]
    if len(d) == 1:
        col[u] = None
        return d[key]
    if type(d) is _Shared:
        if memo is not None:
            mk = (id(d), key)
            got = memo.get(mk)
            if got is None:
                nd = _Shared(d)
                del nd[key]
                got = memo[mk] = (nd, d)
            col[u] = got[0]
            return d[key]
        d = col[u] = dict(d)
    return d.pop(key)


def _own(col: list[Any], u: int) -> dict[Any, Any]:
    """The dict ``col[u]``, created or copied so that changing it affects only ``u``."""
    d = col[u]
    if d is None:
        d = col[u] = {}
    elif type(d) is _Shared:
        d = col[u] = dict(d)
    return d


def pack_marks(edges: list[int], e_needs: list[int], e_excl: list[bool]) -> tuple:
    """The marks on ``edges`` as (edges, needs, exclusive) sequences, gathered at C level; () if none.

    What a memoized evaluation keeps of the edges it marked (replayed by
    ``UpdateStage._replay``).  O(len(edges)).
    """
    if not edges:
        return ()
    if len(edges) == 1:
        e = edges[0]
        return ((e,), (e_needs[e],), (e_excl[e],))
    pick = itemgetter(*edges)
    return (edges, pick(e_needs), pick(e_excl))


def _cmod(a: int, b: int) -> int:
    """C's % (truncates toward zero)."""
    r = abs(a) % b
    return -r if a < 0 else r
