"""The compiled hot modules: load one only while it was built from the .py that is there now.

``setup.py`` compiles fluxlite's hot modules with Cython (the .py files stay the one source) and
writes ``fluxlite/_compiled.json``: each compiled module's name and the SHA-1 of the .py it was
built from.  :func:`install` (called by ``fluxlite/__init__.py``) puts a finder first on
``sys.meta_path`` that answers only for those modules:

* the .py's hash matches the manifest: the finder steps aside and Python's own path finder loads
  the extension module (it prefers extensions to sources);
* the .py was edited since the build (an editable checkout): the finder loads the .py, and the
  process warns once, naming every stale module and the rebuild command;
* ``FLUXLITE_PURE=1`` in the environment: every module loads from its .py (debugging, cProfile).

No manifest (a pure install, a source tree never built) means no finder at all.  :func:`status`
lists what is compiled, pure and stale (``fluxlite info --json``, ``fluxlite --version``).
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.machinery import EXTENSION_SUFFIXES, FileFinder, SourceFileLoader
from pathlib import Path
from typing import Any

import orjson

try:  # CPython's own SHA-1: imports in microseconds, where hashlib loads OpenSSL (milliseconds)
    from _sha1 import sha1
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import sha1

__all__ = ["REBUILD", "install", "pure_requested", "status"]

PKG_DIR = Path(__file__).resolve().parent
MANIFEST = PKG_DIR / "_compiled.json"
REBUILD = "pip install -e . (or: python setup.py build_ext --inplace)"


def pure_requested() -> bool:
    """Whether ``FLUXLITE_PURE`` asks for the .py sources of every compiled module."""
    return os.environ.get("FLUXLITE_PURE", "") not in ("", "0")


def _read_doc() -> dict[str, Any]:
    try:
        doc = orjson.loads(MANIFEST.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _read_manifest() -> dict[str, str]:
    mods = _read_doc().get("modules")
    return {str(k): str(v) for k, v in mods.items()} if isinstance(mods, dict) else {}


def _source(name: str) -> Path:
    return PKG_DIR.parent.joinpath(*name.split(".")).with_suffix(".py")


def _hash(path: Path) -> str | None:
    try:
        return sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _extension(name: str) -> Path | None:
    src = _source(name)
    for suffix in EXTENSION_SUFFIXES:
        p = src.with_suffix(suffix)
        if p.exists():
            return p
    return None


class CompiledFinder:
    """A meta-path finder for the manifest's modules: the extension if current, else the .py."""

    def __init__(self, manifest: dict[str, str], pure: bool) -> None:
        self.manifest = manifest
        self.pure = pure
        self.loaded: dict[str, str] = {}  # module -> "compiled" | "pure" | "stale"
        self._warned = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        want = self.manifest.get(fullname)
        if want is None:
            return None
        src = _source(fullname)
        if not self.pure:
            if _hash(src) == want:
                self.loaded[fullname] = "compiled"
                return None  # Python's path finder loads the extension module
            self.loaded[fullname] = "stale"
            self._warn_stale()
        else:
            self.loaded[fullname] = "pure"
        if not src.exists():
            return None
        return FileFinder(str(src.parent), (SourceFileLoader, [".py"])).find_spec(fullname)

    def _warn_stale(self) -> None:
        if self._warned:
            return
        self._warned = True
        stale = sorted(m for m, h in self.manifest.items() if _hash(_source(m)) != h)
        warnings.warn(
            f"fluxlite: the compiled build is older than {len(stale)} edited source file(s), which load as "
            f"pure Python (slower): {', '.join(stale)}; rebuild with: {REBUILD}",
            RuntimeWarning,
            stacklevel=3,
        )


_finder: CompiledFinder | None = None


def install() -> CompiledFinder | None:
    """Put the finder on ``sys.meta_path`` (once) when a manifest lists compiled modules."""
    global _finder
    if _finder is not None:
        return _finder
    manifest = _read_manifest()
    if not manifest:
        return None
    _finder = CompiledFinder(manifest, pure_requested())
    sys.meta_path.insert(0, _finder)
    return _finder


def status() -> dict[str, Any]:
    """What is compiled: per manifest module ``compiled`` / ``stale`` / ``pure`` / ``missing``, and why.

    ``compiled``: its extension is there and built from the current .py (and, if imported, it
    loaded); ``stale``: the .py changed since the build; ``pure``: FLUXLITE_PURE is set, or it was
    imported from its .py; ``missing``: the manifest names it but its extension file is gone.
    """
    manifest = _read_manifest()
    failed = [str(m) for m in _read_doc().get("failed", [])]
    pure = pure_requested()
    mods: dict[str, str] = {}
    for name, want in sorted(manifest.items()):
        if _extension(name) is None:
            mods[name] = "missing"
        elif _hash(_source(name)) != want:
            mods[name] = "stale"
        elif pure:
            mods[name] = "pure"
        else:
            m = sys.modules.get(name)
            mods[name] = "pure" if m is not None and str(getattr(m, "__file__", "")).endswith(".py") else "compiled"
    counts = {k: sum(1 for v in mods.values() if v == k) for k in ("compiled", "stale", "pure", "missing")}
    return {
        "manifest": str(MANIFEST) if manifest else None,
        "pure_requested": pure,
        "modules": mods,
        **counts,
        "failed_to_compile": failed,
        "rebuild": REBUILD,
    }


def summary() -> str:
    """One line: ``compiled 13/13`` (and stale/pure counts), or ``pure Python (nothing compiled)``."""
    st = status()
    if not st["modules"]:
        failed = f", {len(st['failed_to_compile'])} failed to compile" if st["failed_to_compile"] else ""
        return f"pure Python (nothing compiled{failed})"
    n = len(st["modules"])
    parts = [f"compiled {st['compiled']}/{n}"]
    parts += [f"{k} {st[k]}" for k in ("stale", "pure", "missing") if st[k]]
    if st["failed_to_compile"]:
        parts.append(f"failed to compile {len(st['failed_to_compile'])}")
    return ", ".join(parts) + (" (FLUXLITE_PURE set)" if st["pure_requested"] else "")
