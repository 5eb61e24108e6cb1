"""JSON text exactly as jansson's ``json_dumps()`` prints it.

Fluxion builds its JSON with jansson and prints it with
``json_dumps(o, JSON_INDENT(0))``.  The rules that matter for byte-exact
output (jansson >= 2.8, which always keeps object keys in insertion order):

* ``JSON_INDENT(0)`` without ``JSON_COMPACT`` puts everything on one line,
  separates items with ``", "`` and keys from values with ``": "``;
  ``JSON_COMPACT`` drops both spaces; ``JSON_INDENT(n>0)`` starts every item
  on a new line indented by ``n * depth`` spaces (the ``", "`` space is then
  replaced by the newline).
* Empty containers print as ``[]`` and ``{}`` whatever the indentation.
* Strings are UTF-8 (no ``\\uXXXX`` for non-ASCII); ``"`` and ``\\`` and the
  control characters are escaped, ``\\b \\f \\n \\r \\t`` by name and the
  other control characters as ``\\u00XX`` with *upper-case* hex digits.
  ``/`` is not escaped.
* Integers print in decimal; reals as ``%.17g`` with ``.0`` appended when the
  text has neither a dot nor an exponent, and with the exponent's ``+`` sign
  and leading zeros removed (``1e+20`` -> ``1e20``).

:func:`dumps` reproduces that for any JSON-able Python value (dict, list,
tuple, str, int, float, bool, None).  The common case (indent 0, not compact,
no floats) goes through CPython's C JSON encoder, whose output is identical
apart from the case of ``\\u00xx`` escapes, which is fixed up afterwards.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from json.encoder import encode_basestring as _c_quote  # C-accelerated, no ASCII escaping

__all__ = ["dumps", "quote"]

_NEEDS_FIX = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def _upper_escape(m: re.Match[str]) -> str:
    return f"{m.group(1)}\\u00{m.group(2).upper()}"


def _fix_ctrl(text: str) -> str:
    """Upper-case the hex digits of ``\\u00xx`` escapes (jansson prints ``%04X``)."""
    if "\\u00" not in text:
        return text
    return _NEEDS_FIX.sub(_upper_escape, text)


def quote(s: str) -> str:
    """``s`` as a jansson-escaped JSON string literal, quotes included."""
    out = _c_quote(s)
    if "\\u00" in out:
        out = _fix_ctrl(out)
    return out


def _real(v: float) -> str:
    if not math.isfinite(v):
        raise ValueError(f"jansson cannot encode the non-finite real {v!r}")
    text = f"{v:.17g}"
    if "." not in text and "e" not in text:
        text += ".0"
    e = text.find("e")
    if e >= 0:
        mant, exp = text[: e + 1], text[e + 1 :]
        sign = "-" if exp.startswith("-") else ""
        digits = exp.lstrip("+-").lstrip("0")
        text = mant + sign + digits
    return text


_FAST = json.JSONEncoder(
    ensure_ascii=False,
    check_circular=False,
    allow_nan=False,
    separators=(", ", ": "),
)


def _has_float(obj: object) -> bool:
    stack = [obj]
    pop = stack.pop
    push = stack.extend
    while stack:
        x = pop()
        t = type(x)
        if t is str or t is int or t is bool or x is None:
            continue
        if t is dict:
            push(x.values())  # type: ignore[attr-defined]
        elif t is list or t is tuple:
            push(x)  # type: ignore[arg-type]
        elif isinstance(x, float):
            return True
        elif isinstance(x, dict):
            push(x.values())
        elif isinstance(x, (list, tuple)):
            push(x)
    return False


def dumps(obj: object, *, indent: int = 0, compact: bool = False, sort_keys: bool = False) -> str:
    """Serialize ``obj`` the way ``json_dumps(obj, flags)`` does.

    ``indent`` is the ``JSON_INDENT(n)`` value (0..31), ``compact`` is
    ``JSON_COMPACT`` and ``sort_keys`` is ``JSON_SORT_KEYS``.  Unlike jansson
    without ``JSON_ENCODE_ANY`` this also encodes bare scalars.
    """
    if not 0 <= indent <= 31:
        raise ValueError(f"jansson indentation must be 0..31, not {indent}")
    if indent == 0 and not compact and not sort_keys and not _has_float(obj):
        return _fix_ctrl(_FAST.encode(obj))
    return "".join(_iterdump(obj, indent, compact, sort_keys, 0))


def _iterdump(obj: object, indent: int, compact: bool, sort_keys: bool, depth: int) -> Iterator[str]:
    if obj is None:
        yield "null"
    elif obj is True:
        yield "true"
    elif obj is False:
        yield "false"
    elif isinstance(obj, str):
        yield quote(obj)
    elif isinstance(obj, int):
        yield int.__repr__(obj)
    elif isinstance(obj, float):
        yield _real(obj)
    elif isinstance(obj, dict):
        if not obj:
            yield "{}"
            return
        sep = ":" if compact else ": "
        items = sorted(obj.items()) if sort_keys else obj.items()
        yield "{"
        yield _indent(indent, compact, depth + 1, False)
        n = len(obj)
        for i, (k, v) in enumerate(items):
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, not {type(k).__name__}")
            yield quote(k)
            yield sep
            yield from _iterdump(v, indent, compact, sort_keys, depth + 1)
            if i < n - 1:
                yield ","
                yield _indent(indent, compact, depth + 1, True)
            else:
                yield _indent(indent, compact, depth, False)
        yield "}"
    elif isinstance(obj, (list, tuple)):
        if not obj:
            yield "[]"
            return
        yield "["
        yield _indent(indent, compact, depth + 1, False)
        n = len(obj)
        for i, v in enumerate(obj):
            yield from _iterdump(v, indent, compact, sort_keys, depth + 1)
            if i < n - 1:
                yield ","
                yield _indent(indent, compact, depth + 1, True)
            else:
                yield _indent(indent, compact, depth, False)
        yield "]"
    else:
        raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


def _indent(indent: int, compact: bool, depth: int, space: bool) -> str:
    if indent > 0:
        return "\n" + " " * (indent * depth)
    if space and not compact:
        return " "
    return ""
