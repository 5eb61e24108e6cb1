"""Build fluxlite, compiling its hot modules with Cython when it can (the .py files stay the one source).

Everything else is in pyproject.toml.  The compiled modules are an optional speed-up:

* ``FLUXLITE_PURE_PYTHON=1`` at install skips compiling;
* without Cython or a C compiler, or when a module fails to compile, the install still succeeds in
  pure Python with one warning;
* the build writes ``fluxlite/_compiled.json``, each compiled module's source hash, which
  ``fluxlite._compiled`` checks at import so that an edited .py is never shadowed by an old build.

``FLUXLITE_CYTHON_MODULES=mod,mod`` (dotted names) compiles only those (tests use it);
``FLUXLITE_CYTHON_CFLAGS`` replaces the optimisation flags (default ``-O1 -g0``, see docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
MANIFEST = "fluxlite/_compiled.json"

# The modules that carry the time (profiles of the deadline sweep, `fluxlite bench match` busy L0 and
# empty T8, the batch simulator, the hierarchy attach and the match writers; see docs/benchmarks.md,
# "Compiled modules").
HOT = (
    "fluxlite.match.update",
    "fluxlite.match.release",
    "fluxlite.match.fresh",
    "fluxlite.match.select",
    "fluxlite.match.state",
    "fluxlite.planner._planner",
    "fluxlite.planner._multi",
    "fluxlite.graph._store",
    "fluxlite.grid.ops",
    "fluxlite.grid.alloc",
    "fluxlite.sim.kernel",
    "fluxlite.sim.deadline.sim",
    "fluxlite.sim.deadline.program",
    "fluxlite.match._traverser",
    "fluxlite.match._common",
    "fluxlite.match._stdsort",
    "fluxlite.match._scoring",
    "fluxlite.match.rootcache",
    "fluxlite.match.shortcuts",
    "fluxlite.match._window",
    "fluxlite.match.explore",
    "fluxlite.writers.simple",
    "fluxlite.writers.jgf",
    "fluxlite.writers.rv1",
)
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True}


def _warn(msg: str) -> None:
    bar = "*" * 78
    sys.stderr.write(f"\n{bar}\nfluxlite: {msg}\n{bar}\n\n")


def _source_hash(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _modules() -> list[str]:
    picked = os.environ.get("FLUXLITE_CYTHON_MODULES", "").strip()
    return [m.strip() for m in picked.split(",") if m.strip()] if picked else list(HOT)


class BuildExt(build_ext):
    """build_ext: parallel, every extension optional, one warning for what failed, and the manifest."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self._failed: dict[str, str] = {}  # module -> why it failed to compile

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # a compiler error, a missing compiler: the module stays pure Python
            self._failed[ext.name] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"

    def run(self) -> None:
        t0 = time.monotonic()
        translated = {e.name: e for e in _cythonize(self.extensions)}
        self.extensions = [e for e in self.extensions if e.name in translated]
        for e in self.extensions:  # the C sources Cython wrote, on setuptools' own Extension objects
            e.sources = translated[e.name].sources
        super().run()
        built = []
        for ext in self.extensions:
            out = Path(self.get_ext_fullpath(ext.name))
            if out.exists() and ext.name not in self._failed:
                built.append(ext.name)
        if _WANTED:
            self._write_manifest(built)
        if self._failed:
            _warn(
                f"{len(self._failed)} module(s) failed to compile and stay pure Python (fluxlite works, "
                "slower): " + "; ".join(f"{m} ({why})" for m, why in self._failed.items())
            )
        elif built:
            sys.stderr.write(f"fluxlite: compiled {len(built)} modules in {time.monotonic() - t0:.0f} s\n")

    def _write_manifest(self, built: list[str]) -> None:
        doc = {m: _source_hash(HERE / (m.replace(".", "/") + ".py")) for m in sorted(built)}
        failed = sorted({e.name for e in _WANTED} - set(built))  # compile errors and what Cython never translated
        text = json.dumps({"version": 1, "modules": doc, "failed": failed}, indent=1, sort_keys=True) + "\n"
        targets = {Path(self.build_lib) / MANIFEST}
        if self.inplace or getattr(self, "editable_mode", False):
            targets.add(HERE / MANIFEST)
        for t in targets:
            t.parent.mkdir(parents=True, exist_ok=True)
            t.write_text(text)

    def get_outputs(self) -> list[str]:
        return [*super().get_outputs(), str(Path(self.build_lib) / MANIFEST)]


def _ext_modules() -> list:
    """The hot modules as Extensions of their .py sources (translated to C when build_ext runs)."""
    _WANTED[:] = []
    if os.environ.get("FLUXLITE_PURE_PYTHON", "") not in ("", "0"):
        sys.stderr.write("fluxlite: FLUXLITE_PURE_PYTHON is set: installing pure Python (nothing compiled)\n")
        _remove_inplace_builds()
        return []
    flags = os.environ.get("FLUXLITE_CYTHON_CFLAGS", "-O1 -g0").split()
    _WANTED[:] = [
        Extension(m, [m.replace(".", "/") + ".py"], optional=True, extra_compile_args=flags)
        for m in _modules()
    ]
    return list(_WANTED)


def _remove_inplace_builds() -> None:
    """Delete an earlier in-place build (extension files, manifest) so that a pure install runs pure."""
    gone = [HERE / MANIFEST] if (HERE / MANIFEST).exists() else []
    for m in HOT:
        gone += (HERE / m.replace(".", "/")).parent.glob(m.rsplit(".", 1)[1] + ".*.so")
    for p in gone:
        p.unlink()
    if gone:
        sys.stderr.write(f"fluxlite: removed {len(gone)} files of an earlier in-place build\n")


_WANTED: list = []  # every Extension asked for (the manifest's "failed" lists those not built)


def _cythonize(exts: list) -> list:
    if not exts:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError as e:
        _warn(f"Cython is not available ({e}): installing pure Python (fluxlite works, slower)")
        return []
    try:
        return cythonize(exts, compiler_directives=DIRECTIVES, nthreads=os.cpu_count() or 1, quiet=True)
    except Exception as e:  # Cython itself failed on a module: keep the install pure Python
        _warn(f"Cython failed ({type(e).__name__}: {e}): installing pure Python (fluxlite works, slower)")
        return []


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": BuildExt})
