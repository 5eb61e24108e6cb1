"""REPL commands for elasticity: attach, remove, partial-cancel, update, grow, shrink.

Installed into ``fluxlite query``'s command table by :func:`install`.
"""

from __future__ import annotations

__all__ = ["install"]

_installed = False


def install() -> None:
    """Register the elasticity commands once."""
    global _installed
    if _installed:
        return
    _installed = True
