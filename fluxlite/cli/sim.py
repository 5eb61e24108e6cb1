"""``fluxlite sim``: the simulators (one event kernel, the real engine underneath).

``fluxlite sim deadline ...``  deadline-bound jobs on grid machines: run, sweep, bench, plots
``fluxlite sim batch ...``     batch queues, malleable and evolving jobs, ESP workloads
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["SIMULATORS", "main"]

#: simulator name -> (module with a ``main(argv)``, one-line description)
SIMULATORS: dict[str, tuple[str, str]] = {
    "deadline": (
        "fluxlite.sim.deadline.cli",
        "deadline-bound jobs on grid/torus machines (Hilbert, Manhattan, leak)",
    ),
    "batch": ("fluxlite.sim.batch.cli", "batch queues with malleable and evolving jobs (ESP, SWF)"),
}


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    lines = ["usage: fluxlite sim {" + ",".join(SIMULATORS) + "} ...", ""]
    lines += [f"  {name:<10} {desc}" for name, (_mod, desc) in SIMULATORS.items()]
    usage = "\n".join(lines) + "\n\nRun 'fluxlite sim <name> --help' for the options.\n"
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage)
        return 0
    entry = SIMULATORS.get(args[0])
    if entry is None:
        sys.stderr.write(f"fluxlite sim: unknown simulator {args[0]!r}\n{usage}")
        return 2
    try:
        mod = importlib.import_module(entry[0])
    except ModuleNotFoundError as exc:
        sys.stderr.write(f"fluxlite sim {args[0]}: not available: {exc}\n")
        return 2
    return int(mod.main(args[1:]) or 0)
