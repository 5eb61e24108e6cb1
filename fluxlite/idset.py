"""Id sets as text: ``"0-35"``, ``"0,2,4-5"``, ``"[1-3,7]"``.

Two encoders live here because Fluxion uses two:

* :func:`compress_ids` is what Fluxion's writers use for ``R_lite`` ranks,
  core/gpu ids and property rank lists.  It walks an already *sorted*
  sequence and folds runs of consecutive values into ``lo-hi``; duplicates
  and negative values are kept as they come (``[-1, -1]`` -> ``"-1,-1"``),
  exactly as the C++ does.
* :func:`encode` / :func:`decode` follow flux-core's ``idset_encode()`` /
  ``idset_decode()`` for sets of unsigned ids: ranges folded, optional
  brackets (only when the set has more than one id), and a decoder that
  accepts brackets, reversed ranges (``"5-3"``) and empty tokens
  (``"1,,2"``) the way libidset does.

For a sorted list of distinct non-negative ids both encoders agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from fluxlite.errors import InputError

__all__ = ["UINT_MAX", "compress_ids", "decode", "decode_ranges", "encode", "iter_ranges"]

#: ids must be below this (libidset stores ``unsigned int``)
UINT_MAX = 2**32 - 1
_ULONG_MAX = 2**64 - 1

# strtoul(3): optional C-locale white space, optional sign, decimal digits
_STRTOUL = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")


def compress_ids(ids: Iterable[int]) -> str:
    """Fold a sorted id sequence into ``a-b,c`` text exactly as Fluxion's writers do."""
    out: list[str] = []
    base = 0
    runlen = 0
    first = True
    for i in ids:
        if not first and i == base + runlen + 1:
            runlen += 1
            continue
        if runlen:
            out.append(f"-{base + runlen},")
        elif not first:
            out.append(",")
        out.append(str(i))
        base = i
        runlen = 0
        first = False
    if runlen:
        out.append(f"-{base + runlen}")
    return "".join(out)


def iter_ranges(ids: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Maximal ``(lo, hi)`` runs of the distinct values of ``ids``, ascending."""
    lo = hi = -2
    started = False
    for i in sorted(set(ids)):
        if started and i == hi + 1:
            hi = i
            continue
        if started:
            yield lo, hi
        lo = hi = i
        started = True
    if started:
        yield lo, hi


def encode(ids: Iterable[int], *, brackets: bool = False, ranges: bool = True) -> str:
    """Encode a set of unsigned ids like flux-core's ``idset_encode()``.

    ``ranges`` is ``IDSET_FLAG_RANGE`` (fold runs into ``lo-hi``), ``brackets``
    is ``IDSET_FLAG_BRACKETS`` (``[...]`` around sets of two or more ids).
    """
    uniq = sorted(set(ids))
    for i in uniq[:1] + uniq[-1:]:
        if not 0 <= i < UINT_MAX:
            raise InputError("idset ids must be in [0, UINT_MAX)", id=i)
    if ranges:
        body = ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in iter_ranges(uniq))
    else:
        body = ",".join(map(str, uniq))
    if brackets and len(uniq) > 1:
        return f"[{body}]"
    return body


def _strtoul(tok: str, pos: int) -> tuple[int, int] | None:
    m = _STRTOUL.match(tok, pos)
    if m is None:
        return None
    n = int(m.group(2))
    if n > _ULONG_MAX:
        n = _ULONG_MAX
    if m.group(1) == "-" and n:
        n = _ULONG_MAX + 1 - n
    return n, m.end()


def decode_ranges(text: str) -> list[tuple[int, int]]:
    """Parse idset text into its ``(lo, hi)`` ranges, in the order written.

    Accepts what flux-core's ``idset_decode()`` accepts: an optional leading
    ``[`` and trailing ``]``, comma-separated ids and ``lo-hi`` ranges (a
    reversed range is swapped), empty tokens ignored.  Raises
    :class:`~fluxlite.errors.InputError` on anything else.
    """
    body = text
    if body.startswith("["):
        body = body[1:]
    if body.endswith("]"):
        body = body[:-1]
    out: list[tuple[int, int]] = []
    for tok in body.split(","):
        if not tok:
            continue
        got = _strtoul(tok, 0)
        if got is None or got[0] >= UINT_MAX or (got[1] < len(tok) and tok[got[1]] != "-"):
            raise InputError("invalid idset", idset=text, token=tok)
        lo = hi = got[0]
        if got[1] < len(tok):
            got = _strtoul(tok, got[1] + 1)
            if got is None or got[0] >= UINT_MAX or got[1] != len(tok):
                raise InputError("invalid idset", idset=text, token=tok)
            hi = got[0]
        if hi < lo:
            lo, hi = hi, lo
        out.append((lo, hi))
    return out


def decode(text: str) -> list[int]:
    """Parse idset text (see :func:`decode_ranges`) into a sorted list of distinct ids."""
    ids: set[int] = set()
    for lo, hi in decode_ranges(text):
        ids.update(range(lo, hi + 1))
    return sorted(ids)
