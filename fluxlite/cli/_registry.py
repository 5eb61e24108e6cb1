"""One dispatcher for every command family: ``fluxlite``, ``fluxlite bench``, ``fluxlite sim``;
and the list of modules that add commands to ``fluxlite query``'s loop.

A family is a registry ``name -> (module, one-line description)``; the
module is imported only when its command runs (so the engine never imports
gRPC, boto3 or kubernetes), and its ``main_NAME(argv)`` (or ``main(argv)``)
runs with the rest of the command line.

The query loop (:mod:`fluxlite.cli.query`) holds the command table; a module
of further commands imports the loop and adds to its table in ``install()``.
The loop never imports those modules: it asks :func:`install_query_commands`,
which imports the ones named in :data:`QUERY_COMMANDS` (so the imports run one
way: command modules -> query loop -> this registry).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["QUERY_COMMANDS", "dispatch", "install_query_commands", "usage"]

#: modules whose ``install()`` adds commands to ``fluxlite query``, in the order they are added
#: (the grid commands first: the elasticity commands' ``grow`` hands ``strategy=`` forms to them)
QUERY_COMMANDS: tuple[str, ...] = ("fluxlite.cli.grid_cmds", "fluxlite.cli.elastic_cmds")


def install_query_commands() -> None:
    """Add every module of :data:`QUERY_COMMANDS` to the query loop's table (each only once)."""
    for name in QUERY_COMMANDS:
        importlib.import_module(name).install()


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
