"""``fluxlite-flux``: put fluxlite in a Flux instance's scheduler seat.

A Python broker module runs in the broker's embedded interpreter
(``/usr/bin/python3`` for a flux-core built by ``../shared/flux/build.sh``),
which does not see this package's virtualenv.  ``fluxlite-flux loader``
writes a small loader, ``DIR/sched-fluxlite.py``, that appends this package's
directory and this interpreter's site-packages to the broker's ``sys.path``
(appended, so flux-core's own bindings and their cffi come first) and then
loads :mod:`fluxsched.module`; and ``DIR/modprobe.d/fluxlite.toml``, which
makes ``flux start`` / ``flux batch`` load it instead of sched-simple when
``FLUX_MODPROBE_PATH_APPEND=DIR`` is in their environment.

The embedded interpreter and this one must be the same minor version (the
compiled dependencies, rustworkx/numpy/orjson, are per version).
"""

from __future__ import annotations

import argparse
import json
import os
import site
import sys
from pathlib import Path

from fluxlite.errors import FluxliteError, InputError

__all__ = ["main", "write_loader"]

MODULE_NAME = "sched-fluxlite"


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fluxlite" / "flux-module"


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def write_loader(directory: Path, args: list[str] | None = None, priority: int = 1000) -> Path:
    """Write ``sched-fluxlite.py`` and ``modprobe.d/fluxlite.toml`` into ``directory``; returns the loader."""
    from fluxsched.config import parse_settings

    parse_settings(args or [])  # refuse bad settings now rather than at load time
    directory = directory.resolve()
    pkg_root = str(Path(__file__).resolve().parent.parent)
    paths = [pkg_root, *(p for p in site.getsitepackages() if Path(p).is_dir())]
    directory.mkdir(parents=True, exist_ok=True)
    loader = directory / f"{MODULE_NAME}.py"
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    loader.write_text(
        f'"""{MODULE_NAME}: fluxlite as this instance\'s scheduler (written by fluxlite-flux loader)."""\n'
        "import sys\n\n"
        f"if '%d.%d' % sys.version_info[:2] != {ver!r}:\n"
        f"    raise ImportError('{MODULE_NAME} was written for Python {ver}; "
        "the broker runs Python %d.%d: run fluxlite-flux loader with that version' % sys.version_info[:2])\n"
        f"for _p in {paths!r}:\n"
        "    if _p not in sys.path:\n"
        "        sys.path.append(_p)\n\n"
        "from fluxsched.module import FluxliteScheduler, mod_main  # noqa: E402,F401\n"
    )
    conf = directory / "modprobe.d"
    conf.mkdir(exist_ok=True)
    (conf / "fluxlite.toml").write_text(
        "# written by fluxlite-flux loader: load fluxlite instead of sched-simple\n"
        "[[modules]]\n"
        f"name = {_toml_str(MODULE_NAME)}\n"
        f"module = {_toml_str(str(loader))}\n"
        'provides = ["sched", "feasibility"]\n'
        'after = ["job-manager", "resource"]\n'
        'requires = ["job-manager", "resource"]\n'
        'ranks = "0"\n'
        f"priority = {int(priority)}\n"
        f"args = [{', '.join(_toml_str(a) for a in (args or []))}]\n"
    )
    return loader


def scheduler_modules(module_list: str) -> list[str]:
    """The modules to remove, in order, to free the ``sched`` seat (from ``flux module list`` output).

    Whatever provides ``sched``, then ``feasibility``, then Fluxion's resource module (which
    holds ``resource.acquire`` without providing a service).
    """
    rows = []
    for line in module_list.splitlines()[1:]:
        parts = line.split()
        if not parts:
            continue
        services = parts[5].split(",") if len(parts) >= 6 else []
        rows.append((parts[0], services))
    out = [n for n, sv in rows if "sched" in sv]
    out += [n for n, sv in rows if "feasibility" in sv and n not in out]
    out += [n for n, _ in rows if n == "sched-fluxion-resource" and n not in out]
    return out


def load_into_instance(args: list[str], directory: Path | None = None) -> str:
    """Replace the running instance's scheduler by fluxlite (``flux`` on PATH, FLUX_URI set)."""
    import subprocess

    from fluxsched.config import parse_settings

    parse_settings(args)
    loader = write_loader(directory or default_dir())

    def flux(*a: str) -> str:
        r = subprocess.run(["flux", *a], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise InputError(f"flux {' '.join(a[:2])}: {r.stderr.strip()[:500]}")
        return r.stdout

    for name in scheduler_modules(flux("module", "list")):
        flux("module", "remove", name)
    flux("module", "load", str(loader), *args)
    return str(loader)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from fluxsched.bench import main as bench_main

        return bench_main(argv[1:])
    ap = argparse.ArgumentParser(
        prog="fluxlite-flux",
        description="Run fluxlite as the scheduler of a Flux instance (RFC 27 broker module).",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser(
        "loader",
        help="write the broker-module loader (and a modprobe.d entry); print the loader's path",
        description="Write DIR/sched-fluxlite.py and DIR/modprobe.d/fluxlite.toml and print the loader's "
        "path. Load it in a running instance with: flux module remove sched-simple; flux module load "
        "$(fluxlite-flux loader). Or start instances with FLUX_MODPROBE_PATH_APPEND=DIR to load it by "
        "config (flux start, flux batch).",
    )
    p.add_argument("--dir", type=Path, default=None, help=f"where to write (default {default_dir()})")
    p.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a module setting for the modprobe.d entry (repeatable; see 'fluxlite-flux options')",
    )
    p.add_argument("--print-dir", action="store_true", help="print the directory instead of the loader")
    ld = sub.add_parser(
        "load",
        help="in a running instance (flux on PATH), replace its scheduler by fluxlite",
        description="Remove the instance's scheduler (sched-simple, sched-fifo, sched-backfill, Fluxion's "
        "modules or an earlier fluxlite) and load sched-fluxlite with these settings.",
    )
    ld.add_argument("settings", nargs="*", metavar="KEY=VALUE", help="module settings (fluxlite-flux options)")
    ld.add_argument("--dir", type=Path, default=None, help=f"where the loader goes (default {default_dir()})")
    sub.add_parser("options", help="the module's settings (key=value load arguments)")
    sub.add_parser("bench", help="jobs scheduled per second and alloc latency (fluxlite-flux bench --help)")
    ns = ap.parse_args(argv)
    try:
        if ns.cmd == "loader":
            d = ns.dir or default_dir()
            loader = write_loader(d, ns.arg)
            print(loader.parent if ns.print_dir else loader)
        elif ns.cmd == "load":
            print(f"loaded {load_into_instance(ns.settings, ns.dir)}")
        elif ns.cmd == "options":
            from fluxsched.config import KEYS

            for k, v in KEYS.items():
                print(f"{k:18} {v}")
    except (FluxliteError, OSError) as exc:
        msg = str(exc) if isinstance(exc, FluxliteError) else f"{exc.strerror or exc}: {exc.filename or ''}"
        print(f"fluxlite-flux: {msg}", file=sys.stderr)
        return 1
    return 0


_ = InputError
