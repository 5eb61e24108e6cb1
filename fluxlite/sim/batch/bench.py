"""``fluxlite bench batch``: the batch simulator's benchmark (same as ``fluxlite sim batch bench``)."""

from __future__ import annotations

from collections.abc import Sequence

from fluxlite.sim.batch.cli import main as _cli

__all__ = ["main"]


def main(argv: Sequence[str]) -> int:
    return _cli(["bench", *argv])
