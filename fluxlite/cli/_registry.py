"""One dispatcher for every command family: ``fluxlite``, ``fluxlite bench``, ``fluxlite sim``.

A family is a registry ``name -> (module, one-line description)``; the
module is imported only when its command runs (so the engine never imports
gRPC, boto3 or kubernetes), and its ``main_NAME(argv)`` (or ``main(argv)``)
runs with the rest of the command line.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["dispatch", "usage"]


def usage(prog: str, registry: dict[str, tuple[str, str]], what: str = "command") -> str:
    lines = [f"usage: {prog} {{{','.join(registry)}}} [options]", ""]
    lines += [f"  {name:<10} {desc}" for name, (_mod, desc) in registry.items()]
    return "\n".join(lines) + f"\n\nRun '{prog} <{what}> --help' for the options.\n"


def dispatch(
    prog: str, registry: dict[str, tuple[str, str]], argv: Sequence[str], what: str = "command"
) -> int:
    """Run ``argv[0]`` of ``registry`` with ``argv[1:]``; usage on -h, exit 2 for an unknown name."""
    args = list(argv)
    text = usage(prog, registry, what)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(text)
        return 0
    name = args[0]
    entry = registry.get(name)
    if entry is None:
        sys.stderr.write(f"{prog}: unknown {what} {name!r}\n{text}")
        return 2
    try:
        mod = importlib.import_module(entry[0])
    except ImportError as exc:
        sys.stderr.write(f"{prog} {name}: not available: {exc}\n")
        return 2
    func = getattr(mod, f"main_{name}", None) or mod.main
    return int(func(args[1:]) or 0)
