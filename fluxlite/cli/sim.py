"""``fluxlite sim``: the simulators (one event kernel, the real engine underneath).

``fluxlite sim deadline ...``  deadline-bound jobs on grid machines: run, sweep, bench, plots
``fluxlite sim batch ...``     batch queues, malleable and evolving jobs, ESP workloads
``fluxlite sim reproduce``     rerun the published studies into examples/experiments/REPRODUCTION.md
"""

from __future__ import annotations

from collections.abc import Sequence

from fluxlite.cli._registry import dispatch

__all__ = ["SIMULATORS", "main"]

#: simulator name -> (module with a ``main(argv)``, one-line description)
SIMULATORS: dict[str, tuple[str, str]] = {
    "deadline": (
        "fluxlite.sim.deadline.cli",
        "deadline-bound jobs on grid/torus machines (Hilbert, Manhattan, leak)",
    ),
    "batch": ("fluxlite.sim.batch.cli", "batch queues with malleable and evolving jobs (ESP, SWF)"),
    "reproduce": ("fluxlite.sim.reproduce", "rerun the published studies into REPRODUCTION.md (--quick: smoke run)"),
}


def main(argv: Sequence[str]) -> int:
    return dispatch("fluxlite sim", SIMULATORS, argv, what="simulator")
