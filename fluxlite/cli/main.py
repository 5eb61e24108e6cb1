"""The ``fluxlite`` command: one entry point, one subcommand per tool.

``fluxlite query``      resource-query compatible command loop (the main tool)
``fluxlite graph``      generate, convert and inspect resource graphs
``fluxlite bench``      benchmarks (``bench match``, ``bench hierarchy``)
``fluxlite instance``   run a scheduler instance as a gRPC service
``fluxlite hierarchy``  launch / stop a tree of instances
``fluxlite grow``       MatchGrow a job at a running instance
``fluxlite shrink``     release part of a job at a running instance
``fluxlite info``       version and which hot modules run compiled (``--json``)

Errors in user input are printed as one line on standard error and the exit
status is non-zero; there is never a traceback for bad input.
"""

from __future__ import annotations

import sys

from fluxlite.cli._registry import dispatch

__all__ = ["main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "query": ("fluxlite.cli.query", "resource-query compatible command loop on a resource graph"),
    "graph": ("fluxlite.cli.graph", "generate, convert and inspect resource graphs"),
    "bench": ("fluxlite.cli.bench", "benchmarks: match, hierarchy, burst, kube, grid, deadline, batch"),
    "instance": ("hierarchy.cli", "run one scheduler instance as a gRPC service"),
    "hierarchy": ("hierarchy.cli", "launch or stop a tree of scheduler instances"),
    "grow": ("hierarchy.cli", "MatchGrow a running job at an instance"),
    "shrink": ("hierarchy.cli", "release part of a running job at an instance"),
    "providers": ("providers.cli", "external providers: EC2 cleanup and listing, a local moto endpoint"),
    "auth": ("hierarchy.cli", "user identities of a tree: site key, user keys"),
    "sim": ("fluxlite.cli.sim", "simulators: deadline (grid allocators, leak), batch (queues, ESP)"),
    "kube": ("kube.cli", "Kubernetes scheduler shim (run), Fluence gRPC sidecar (sidecar), node graph"),
    "info": ("fluxlite.cli.info", "version and which hot modules run compiled (Cython), pure or stale"),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-V", "--version"):
        from fluxlite import __version__
        from fluxlite._compiled import summary

        sys.stdout.write(f"fluxlite {__version__} ({summary()})\n")
        return 0
    try:
        return dispatch("fluxlite", SUBCOMMANDS, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
