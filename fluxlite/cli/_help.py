"""Docstrings as ``--help`` text: reStructuredText inline markup becomes plain text.

Module and function docstrings are written for Sphinx (````code````, ``:func:`name```, ``::`` before a
literal block); a terminal shows that markup raw.  :func:`plain` keeps the words and drops the markup.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["plain"]

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|ref|py:\w+):`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(doc: str | None) -> str:
    """``doc`` without RST inline markup: ````x```` and ``:func:`x``` become ``x``, a paragraph's
    closing ``::`` becomes ``:``."""
    text = inspect.cleandoc(doc or "")
    text = _ROLE.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    return re.sub(r"(\S)::$", r"\1:", text, flags=re.M)
