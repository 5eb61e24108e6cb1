"""Names and argument parsers shared by ``fluxlite sim deadline`` and ``fluxlite bench deadline``.

Light on purpose (no numpy, no engine): the command lines import it to build
their parsers.  The names match :data:`fluxlite.sim.deadline.STRATEGIES`,
:data:`~fluxlite.sim.deadline.LOADS`, :data:`~fluxlite.sim.deadline.TYPES`
and :data:`~fluxlite.sim.deadline.COMM_STYLES` (a test keeps them equal).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

__all__ = ["COMM_NAMES", "LOAD_NAMES", "STRATEGY_NAMES", "TYPE_NAMES", "add_list_option", "csv_list", "grid_size"]

STRATEGY_NAMES = ("count", "hilbert", "manhattan", "leak", "leak-noncontig")
LOAD_NAMES = ("normal", "heavy", "very-heavy")
TYPE_NAMES = ("0", "1", "2", "3", "uniform")
COMM_NAMES = ("async", "sync")


def grid_size(text: str) -> tuple[int, int]:
    """``16x8`` -> ``(16, 8)`` (an argparse type)."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"grid must look like 16x8, got {text!r}") from None
    if w < 1 or h < 1:
        raise argparse.ArgumentTypeError(f"grid sides must be >= 1, got {text!r}")
    return w, h


def csv_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated subset of ``choices``, or ``all``."""

    def parse(text: str) -> list[str]:
        vals = [v.strip() for v in text.split(",") if v.strip()]
        if vals == ["all"]:
            return list(choices)
        bad = [v for v in vals if v not in choices]
        if bad or not vals:
            raise argparse.ArgumentTypeError(
                f"{bad[0] if bad else text!r}: choose from {', '.join(choices)} or all"
            )
        return vals

    return parse


def add_list_option(p: argparse.ArgumentParser, flag: str, choices: Sequence[str], what: str) -> None:
    """``flag LIST``: a comma-separated subset of ``choices`` (or ``all``, the default)."""
    p.add_argument(
        flag,
        type=csv_list(choices),
        default=list(choices),
        metavar="LIST",
        help=f"comma-separated {what}, or all ({','.join(choices)})",
    )
