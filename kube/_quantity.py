"""Kubernetes resource quantities (``250m``, ``1Gi``, ``129e6``) as exact numbers.

The API serialises a quantity as a decimal number with an optional suffix:
binary (``Ki Mi Gi Ti Pi Ei``), decimal (``n u m k M G T P E``) or an
exponent (``e3``, ``E6``).  :func:`parse_quantity` returns a
:class:`~fractions.Fraction`, so ``100m`` cores is exactly 1/10 and rounding
is the caller's explicit choice (:func:`ceil_units`, :func:`floor_units`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from fluxlite.errors import InputError

__all__ = ["ceil_units", "floor_units", "parse_quantity"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))((?:[eE][+-]?\d+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")
_CACHE: dict[str, Fraction] = {}


def parse_quantity(value: str | int | float, *, field: str = "quantity") -> Fraction:
    """The exact value of a quantity; :class:`InputError` naming ``field`` if malformed."""
    if isinstance(value, bool):
        raise InputError(f"{field}: expected a quantity, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    got = _CACHE.get(value)
    if got is not None:
        return got
    m = _RE.match(value.strip()) if isinstance(value, str) else None
    if m is None:
        raise InputError(f"{field}: {value!r} is not a Kubernetes quantity")
    num = Fraction(m.group(1))
    suf = m.group(2) or ""
    if suf in _BINARY:
        out = num * _BINARY[suf]
    elif suf in _DECIMAL:
        out = num * _DECIMAL[suf]
    else:
        out = num * Fraction(10) ** int(suf[1:])
    if out < 0:
        raise InputError(f"{field}: {value!r} is negative")
    if len(_CACHE) < 4096:
        _CACHE[value] = out
    return out


def ceil_units(q: Fraction, unit: Fraction) -> int:
    """How many ``unit``-sized vertices a request of ``q`` needs (rounded up)."""
    return math.ceil(q / unit)


def floor_units(q: Fraction, unit: Fraction) -> int:
    """How many whole ``unit``-sized vertices a capacity of ``q`` provides (rounded down)."""
    return math.floor(q / unit)
