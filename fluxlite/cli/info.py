"""fluxlite info: the version and which hot modules run compiled (Cython), pure or stale.

    fluxlite info            one line per module
    fluxlite info --json     the same as JSON (fluxlite._compiled.status())
"""

from __future__ import annotations

import argparse
import sys

import orjson

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fluxlite info", description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the status as JSON")
    a = ap.parse_args(argv)
    from fluxlite import __version__
    from fluxlite._compiled import status, summary

    st = status()
    if a.json:
        sys.stdout.write(orjson.dumps({"version": __version__, **st}, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    sys.stdout.write(f"fluxlite {__version__}: {summary()}\n")
    for name, state in st["modules"].items():
        sys.stdout.write(f"  {state:<9} {name}\n")
    if st["stale"]:
        sys.stdout.write(f"stale modules load from their .py; rebuild with: {st['rebuild']}\n")
    return 0
