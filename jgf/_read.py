"""Parsing JGF text into plain Python objects (orjson), with one-line errors.

This module only turns bytes/str into JSON values; the meaning of those
values (which keys are required, their types and defaults) is checked by
:mod:`jgf._validate`.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["JGFError", "loads"]


class JGFError(ValueError):
    """A JGF document is malformed.

    The message is one line and names the element at fault, for example
    ``nodes[12] (id "12"): metadata.paths: expected an object, got string``.
    ``where`` holds that element prefix (empty for whole-document errors).
    """

    def __init__(self, message: str, where: str = "") -> None:
        self.where = where
        self.detail = message
        text = f"{where}: {message}" if where else message
        super().__init__(" ".join(text.split("\n")))


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON text with orjson; malformed text raises :class:`JGFError`.

    The error names the line and column of the first syntax error.
    """
    if not isinstance(data, bytes | bytearray | memoryview | str):
        raise JGFError(f"expected JSON text (str or bytes), got {type(data).__name__}")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        msg = exc.msg if hasattr(exc, "msg") else str(exc)
        line = getattr(exc, "lineno", None)
        col = getattr(exc, "colno", None)
        loc = f" at line {line}, column {col}" if line is not None else ""
        raise JGFError(f"invalid JSON{loc}: {msg}") from exc
