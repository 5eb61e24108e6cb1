"""Scalar conversions with the semantics Fluxion's jobspec reader gives them.

Fluxion reads jobspecs with yaml-cpp, which keeps every scalar as text and
converts it only when a field is read: ``as<unsigned>`` parses the text with a
C++ stream (so ``0x10`` is 16, ``010`` is 8, ``-1`` and ``1.0`` are refused),
``as<std::string>`` returns the text unchanged (and ``"null"`` for a null),
``as<double>`` also knows YAML's ``.inf``/``.nan`` spellings.  The document
tree handed to these helpers holds ``None``, ``bool``, ``int``, ``float`` and
``str`` values (see ``_parse``); an ``int``, ``float`` or ``bool`` there always
stands for its canonical spelling, so :func:`text` recovers the text yaml-cpp
would have seen.

:class:`FieldError` is the internal error raised by the readers; ``_parse``
turns it into a one-line :class:`fluxlite.errors.JobspecError`.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "UINT_MAX",
    "FieldError",
    "as_char",
    "as_double",
    "as_int",
    "as_string",
    "as_unsigned",
    "describe",
    "is_scalar",
    "text",
]

#: ``std::numeric_limits<unsigned>::max()``, the largest value of a count field.
UINT_MAX = 4294967295
_INT_MIN = -(2**31)
_INT_MAX = 2**31 - 1

# An integer as a C++ stream reads it with no base flag set: hexadecimal after
# 0x, octal after a leading 0, else decimal; trailing whitespace is allowed.
_INT_TEXT = re.compile(r"([+-]?)(?:0[xX]([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))[ \t\n\v\f\r]*\Z")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t\n\v\f\r]*\Z")
_SPECIAL_FLOATS = {
    ".inf": math.inf,
    ".Inf": math.inf,
    ".INF": math.inf,
    "+.inf": math.inf,
    "+.Inf": math.inf,
    "+.INF": math.inf,
    "-.inf": -math.inf,
    "-.Inf": -math.inf,
    "-.INF": -math.inf,
    ".nan": math.nan,
    ".NaN": math.nan,
    ".NAN": math.nan,
}
_SCALAR_TYPES = (str, int, float)  # bool is an int


class FieldError(ValueError):
    """A field of the document is invalid.

    ``path`` names the field (``resources[0].count.min``); ``container`` and
    ``key`` locate it in the document tree so a line number can be found.
    """

    def __init__(self, path: str, reason: str, container: object = None, key: object = None) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.container = container
        self.key = key


def is_scalar(value: object) -> bool:
    """True for what yaml-cpp calls a scalar (a null is not one)."""
    return isinstance(value, _SCALAR_TYPES)


def text(value: str | int | float) -> str:
    """The text of a scalar as yaml-cpp holds it."""
    if value.__class__ is str:
        return value  # type: ignore[return-value]
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def describe(value: object) -> str:
    """A short, one-line rendering of a value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a sequence"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(shown)
    return f"a {type(value).__name__}"


def _stream_int(value: object) -> int | None:
    if value.__class__ is int:
        return value  # type: ignore[return-value]
    if value.__class__ is not str:
        return None  # bool, float, null and containers never convert
    m = _INT_TEXT.match(value)  # type: ignore[arg-type]
    if m is None:
        return None
    sign, hexa, octal, dec = m.groups()
    if hexa is not None:
        n = int(hexa, 16)
    elif octal is not None:
        n = int(octal, 8)
    else:
        n = int(dec)
    return -n if sign == "-" else n


def as_unsigned(value: object) -> int | None:
    """``as<unsigned>``: the value, or None when yaml-cpp would refuse it."""
    if value.__class__ is str and value[:1] == "-":  # type: ignore[index]
        return None
    n = _stream_int(value)
    if n is None or n < 0 or n > UINT_MAX:
        return None
    return n


def as_int(value: object) -> int | None:
    """``as<int>`` (32-bit, signed): the value, or None."""
    n = _stream_int(value)
    if n is None or n < _INT_MIN or n > _INT_MAX:
        return None
    return n


def as_char(value: object) -> str | None:
    """``as<char>``: the single character of a one-character scalar, or None."""
    if not is_scalar(value):
        return None
    s = text(value)  # type: ignore[arg-type]
    if not s or s[1:].strip(" \t\n\v\f\r"):
        return None
    return s[0]


def as_double(value: object) -> float | None:
    """``as<double>``: the value, or None when yaml-cpp would refuse it."""
    cls = value.__class__
    if cls is float:
        return value  # type: ignore[return-value]
    if cls is int:
        return float(value)  # type: ignore[arg-type]
    if cls is not str:
        return None
    if _FLOAT_TEXT.match(value) is not None:  # type: ignore[arg-type]
        f = float(value)  # type: ignore[arg-type]
        return None if math.isinf(f) else f  # overflow fails the stream
    return _SPECIAL_FLOATS.get(value)  # type: ignore[arg-type]


def as_string(value: object) -> str | None:
    """``as<std::string>``: the text of a scalar, ``"null"`` for a null, else None."""
    if value is None:
        return "null"
    if is_scalar(value):
        return text(value)  # type: ignore[arg-type]
    return None
