"""RFC 31 job constraints (``attributes.system.constraints``) as Fluxion reads them.

A constraint is a mapping with at most one operator: ``properties`` (a list of
quoted property names, each optionally negated with a leading ``^``; all must
hold), ``hostlist`` (RFC 29 hostlists; the host name must be in one),
``ranks`` (RFC 22 idsets; the rank must be in one), or ``and``/``or``/``not``
over a list of nested constraints (``not`` negates the ``and`` of its list).
The empty mapping matches everything.

Fluxion applies a job's constraint only to vertices of type ``node`` (and
``storage_node`` where configured); choosing which vertices to test is the
caller's business: :meth:`Constraint.match` just evaluates the expression
against one vertex's properties, host name and rank.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

from fluxlite.jobspec._scalars import FieldError, as_string, describe

__all__ = [
    "ConditionalConstraint",
    "Constraint",
    "HostlistConstraint",
    "PropertyConstraint",
    "RankConstraint",
    "decode_hostlist",
    "decode_idset",
    "parse_constraint_value",
]

# Characters Fluxion refuses in a property name (after an optional leading '^').
_BAD_PROPERTY_CHARS = frozenset("!&'\"^`|()")
_UINT_MAX = 4294967295


@dataclass(frozen=True, slots=True)
class Constraint:
    """The empty constraint: matches every vertex.  Base of all constraints.

    Fluxion tests a job's constraint only on ``node`` vertices (and
    ``storage_node`` ones where so configured); callers pick the vertices.
    """

    def match(self, properties: Container[str], hostname: str, rank: int) -> bool:
        """Whether a vertex with these properties (a mapping or set of names), host name and rank satisfies this."""
        return True

    def to_dict(self) -> dict[str, Any]:
        """The RFC 31 mapping form."""
        return {}


@dataclass(frozen=True, slots=True)
class PropertyConstraint(Constraint):
    """Every listed property must be set on the vertex (``^name``: must not be)."""

    values: tuple[str, ...]

    def match(self, properties: Container[str], hostname: str, rank: int) -> bool:
        for value in self.values:
            if value[:1] == "^":
                if value[1:] in properties:
                    return False
            elif value not in properties:
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"properties": list(self.values)}


@dataclass(frozen=True, slots=True)
class HostlistConstraint(Constraint):
    """The vertex's host name must belong to one of the hostlists."""

    hosts: tuple[str, ...]
    _entries: tuple[tuple[Any, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        entries: list[tuple[Any, ...]] = []
        for hosts in self.hosts:
            decoded = decode_hostlist(hosts)
            if decoded is None:
                raise ValueError(f"invalid hostlist {hosts!r}")
            entries.extend(decoded)
        object.__setattr__(self, "_entries", tuple(entries))

    def match(self, properties: Container[str], hostname: str, rank: int) -> bool:
        return any(_host_in(entry, hostname) for entry in self._entries)

    def names(self, limit: int) -> list[str] | None:
        """Every host name the hostlists can match (one per number, zero-padded as written).

        None when there are more than ``limit`` of them (then a caller scans
        instead of looking names up).  A name matches exactly when it is in
        this list.  O(names).
        """
        total = 0
        for entry in self._entries:
            total += 1 if entry[0] == "single" else entry[3] - entry[2] + 1
            if total > limit:
                return None
        out: list[str] = []
        for entry in self._entries:
            kind = entry[0]
            if kind == "single":
                out.append(entry[1])
                continue
            prefix, lo, hi, width = entry[1], entry[2], entry[3], entry[4]
            suffix = entry[5] if kind == "suffixed" else ""
            out.extend(f"{prefix}{n:0{width}d}{suffix}" for n in range(lo, hi + 1))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"hostlist": list(self.hosts)}


@dataclass(frozen=True, slots=True)
class RankConstraint(Constraint):
    """The vertex's rank must belong to one of the idsets."""

    ranks: tuple[str, ...]
    _lows: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _highs: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ranges: list[tuple[int, int]] = []
        for ids in self.ranks:
            decoded = decode_idset(ids)
            if decoded is None:
                raise ValueError(f"invalid idset {ids!r}")
            ranges.extend(decoded)
        merged: list[list[int]] = []
        for lo, hi in sorted(ranges):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        object.__setattr__(self, "_lows", tuple(r[0] for r in merged))
        object.__setattr__(self, "_highs", tuple(r[1] for r in merged))

    def match(self, properties: Container[str], hostname: str, rank: int) -> bool:
        i = bisect_right(self._lows, rank) - 1
        return i >= 0 and rank <= self._highs[i]

    def ranks_upto(self, limit: int) -> list[int] | None:
        """Every rank in the idsets, ascending; None when there are more than ``limit``.  O(ranks)."""
        if sum(hi - lo + 1 for lo, hi in zip(self._lows, self._highs)) > limit:
            return None
        return [r for lo, hi in zip(self._lows, self._highs) for r in range(lo, hi + 1)]

    def to_dict(self) -> dict[str, Any]:
        return {"ranks": list(self.ranks)}


@dataclass(frozen=True, slots=True)
class ConditionalConstraint(Constraint):
    """``and``/``or``/``not`` over nested constraints (``not`` = not all of them)."""

    op: str
    operands: tuple[Constraint, ...]

    def match(self, properties: Container[str], hostname: str, rank: int) -> bool:
        if self.op == "or":
            return any(c.match(properties, hostname, rank) for c in self.operands)
        result = all(c.match(properties, hostname, rank) for c in self.operands)
        return not result if self.op == "not" else result

    def to_dict(self) -> dict[str, Any]:
        return {self.op: [c.to_dict() for c in self.operands]}


# ---------------------------------------------------------------------------
# RFC 22 idsets (flux-core's idset_decode rules)

_IDSET_NUMBER = re.compile(r"0|[1-9][0-9]*")


def _idset_number(s: str) -> int | None:
    if _IDSET_NUMBER.fullmatch(s) is None:
        return None
    n = int(s)
    return n if n < _UINT_MAX else None


def decode_idset(s: str) -> list[tuple[int, int]] | None:
    """The ``(lo, hi)`` ranges of an RFC 22 idset such as ``"0-3,7"``, or None if invalid.

    Optional enclosing brackets are allowed; elements must ascend without
    overlapping; ranges need ``lo < hi``; no leading zeros.
    """
    if len(s) >= 2 and s[0] == "[" and s[-1] == "]":
        s = s[1:-1]
    if "[" in s or "]" in s:
        return None
    ranges: list[tuple[int, int]] = []
    last = -1
    for tok in s.split(","):
        if not tok:
            continue  # strtok skips empty fields
        lo_s, dash, hi_s = tok.partition("-")
        lo = _idset_number(lo_s)
        if lo is None:
            return None
        hi = lo
        if dash:
            hi_n = _idset_number(hi_s)
            if hi_n is None or hi_n <= lo:
                return None
            hi = hi_n
        if lo <= last:
            return None
        ranges.append((lo, hi))
        last = hi
    return ranges


# ---------------------------------------------------------------------------
# RFC 29 hostlists (flux-core's hostlist_decode rules)
#
# An entry is ("single", name), ("range", prefix, lo, hi, width) or
# ("suffixed", prefix, lo, hi, width, suffix).

_MAX_RANGE = 1 << 20
_MAX_RANGES = 10240
_SEPARATORS = "\t, "
_LO_PREFIX = re.compile(r"[ \t\n\v\f\r]*\+?[0-9]+")
_HI_TEXT = re.compile(r"[ \t\n\v\f\r]*\+?[0-9]+\Z")


def _tokens(s: str) -> list[str]:
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in _SEPARATORS:
            i += 1
        if i >= n:
            break
        start, level = i, 0
        while i < n and (level != 0 or s[i] not in _SEPARATORS):
            if s[i] == "[":
                level += 1
            elif s[i] == "]":
                level -= 1
            i += 1
        out.append(s[start:i])
    return out


def _parse_range(s: str) -> tuple[int, int, int] | None:
    lo_s, dash, hi_s = s.partition("-")
    if dash and hi_s[:1] == "-":
        return None
    m = _LO_PREFIX.match(lo_s)
    if m is None:
        return None
    lo = int(m.group())
    if hi_s:
        if _HI_TEXT.match(hi_s) is None:
            return None
        hi = int(hi_s)
    else:
        if m.end() != len(lo_s):
            return None
        hi = lo
    if lo > hi or hi - lo + 1 > _MAX_RANGE:
        return None
    return lo, hi, len(lo_s)


def decode_hostlist(s: str) -> list[tuple[Any, ...]] | None:
    """The entries of an RFC 29 hostlist such as ``"foo[0-3,7],bar"``, or None if invalid."""
    entries: list[tuple[Any, ...]] = []
    for tok in _tokens(s):
        open_at = tok.find("[")
        if open_at >= 0:
            prefix, rest = tok[:open_at], tok[open_at + 1 :]
            close_at = rest.find("]")
            if close_at < 0:
                return None
            inner, suffix = rest[:close_at], rest[close_at + 1 :]
            parts = inner.split(",")
            if len(parts) > _MAX_RANGES:
                return None
            for part in parts:
                rng = _parse_range(part)
                if rng is None:
                    return None
                lo, hi, width = rng
                if suffix:
                    entries.append(("suffixed", prefix, lo, hi, width, suffix))
                else:
                    entries.append(("range", prefix, lo, hi, width))
        elif "]" in tok:
            return None
        else:
            digits = len(tok) - len(tok.rstrip("0123456789"))
            if digits:
                entries.append(("range", tok[:-digits], int(tok[-digits:]), int(tok[-digits:]), digits))
            else:
                entries.append(("single", tok))
    return entries


def _number_matches(digits: str, lo: int, hi: int, width: int) -> bool:
    if not digits or not digits.isascii() or not digits.isdigit():
        return False
    n = int(digits)
    return lo <= n <= hi and f"{n:0{width}d}" == digits


def _host_in(entry: tuple[Any, ...], name: str) -> bool:
    kind = entry[0]
    if kind == "single":
        return name == entry[1]
    prefix = entry[1]
    if not name.startswith(prefix):
        return False
    if kind == "range":
        return _number_matches(name[len(prefix) :], entry[2], entry[3], entry[4])
    suffix = entry[5]
    if not name.endswith(suffix) or len(name) < len(prefix) + len(suffix):
        return False
    return _number_matches(name[len(prefix) : len(name) - len(suffix)], entry[2], entry[3], entry[4])


# ---------------------------------------------------------------------------
# Parsing


def parse_constraint_value(
    value: object, path: str, plain_items: dict[int, tuple[bool, ...]] | None = None
) -> Constraint:
    """Build a :class:`Constraint` from its document value, as Fluxion validates it.

    ``plain_items`` tells, for a YAML document, which items of each
    ``properties`` list were unquoted scalars (keyed by ``id`` of the list);
    Fluxion accepts only quoted strings there.  None means every string was
    quoted (JSON input).  Raises :class:`FieldError` naming the field.
    """
    if not isinstance(value, dict):
        raise FieldError(path, f"a constraint must be a mapping, got {describe(value)}")
    if len(value) == 0:
        return Constraint()
    if len(value) > 1 or getattr(value, "pairs", None) is not None:
        keys = ", ".join(str(k) for k in value)
        raise FieldError(path, f"a constraint may hold only one operator, got {keys}", value)
    ((op, operands),) = value.items()
    here = f"{path}.{op}"
    if not isinstance(operands, list):
        raise FieldError(here, f"the value of {op!r} must be a sequence, got {describe(operands)}", value, op)
    if op == "properties":
        plain = plain_items.get(id(operands)) if plain_items is not None else None
        props: list[str] = []
        for i, prop in enumerate(operands):
            if prop.__class__ is not str:
                raise FieldError(
                    f"{here}[{i}]", f"a property must be a quoted string, got {describe(prop)}", operands, i
                )
            if plain is not None and plain[i]:
                raise FieldError(
                    f"{here}[{i}]",
                    f"a property must be a quoted string (Fluxion refuses unquoted YAML here), got {prop}",
                    operands,
                    i,
                )
            name = prop[1:] if prop[:1] == "^" else prop
            if not _BAD_PROPERTY_CHARS.isdisjoint(name):
                raise FieldError(
                    f"{here}[{i}]",
                    f"invalid property {prop!r}: a name may not contain any of !&'\"^`|() "
                    "(only a single leading ^ for negation)",
                    operands,
                    i,
                )
            props.append(prop)
        return PropertyConstraint(tuple(props))
    if op in ("hostlist", "ranks"):
        texts: list[str] = []
        for i, item in enumerate(operands):
            s = as_string(item)
            if s is None:
                raise FieldError(f"{here}[{i}]", f"must be a string, got {describe(item)}", operands, i)
            if op == "hostlist" and decode_hostlist(s) is None:
                raise FieldError(f"{here}[{i}]", f"invalid hostlist {s!r}", operands, i)
            if op == "ranks" and decode_idset(s) is None:
                raise FieldError(f"{here}[{i}]", f"invalid idset {s!r}", operands, i)
            texts.append(s)
        if op == "hostlist":
            return HostlistConstraint(tuple(texts))
        return RankConstraint(tuple(texts))
    if op in ("and", "or", "not"):
        return ConditionalConstraint(
            op, tuple(parse_constraint_value(c, f"{here}[{i}]", plain_items) for i, c in enumerate(operands))
        )
    raise FieldError(
        here,
        f"unknown constraint operator {op!r} (known: properties, hostlist, ranks, and, or, not)",
        value,
        op,
    )
