"""Unpack a git revision of the checkout fluxlite runs from: the baselines the benchmarks measure in
the same run (``--baseline REF`` of ``sim deadline bench``, ``bench hierarchy``, ``bench burst`` and
``bench kube``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from fluxlite.errors import CommandError, InputError

REPO = Path(__file__).resolve().parent.parent


#: set to 1 to leave a baseline pure Python even when this checkout runs compiled modules
BASELINE_PURE_ENV = "FLUXLITE_BASELINE_PURE"
#: the files a revision's compile step needs besides ``fluxlite/``
_BUILD_FILES = ("setup.py", "pyproject.toml")


def _archive(ref: str, into: Path, paths: tuple[str, ...]) -> None:
    try:
        arch = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", ref, *paths],
            capture_output=True,
            check=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        err = (getattr(exc, "stderr", b"") or b"").decode(errors="replace").strip()
        raise InputError(f"cannot read git revision {ref!r}: {err or exc}") from None
    with tarfile.open(fileobj=io.BytesIO(arch.stdout)) as tar:
        tar.extractall(into, filter="data")


def extract_revision(ref: str, into: Path, *paths: str, build: bool = True) -> str:
    """Unpack revision ``ref`` (only ``paths`` of it, if any are given) under ``into``, built as this
    checkout runs (:func:`build_like_this`, unless ``build`` is false); returns how it will run.

    An unknown revision, or no git checkout, is an ``InputError`` naming the revision; nothing is
    written then.
    """
    _archive(ref, into, paths)
    return build_like_this(ref, into) if build else "pure Python (not built)"


def build_like_this(ref: str, tree: Path) -> str:
    """Compile the hot modules of the unpacked revision ``tree`` in place when this checkout runs
    compiled ones, so that a benchmark compares like with like (a compiled checkout against a pure
    baseline would credit the compiler to the change).  Returns how the baseline will run, and
    says it on standard error.

    Left pure Python: when this checkout runs none compiled (or ``FLUXLITE_PURE`` is set), when
    ``FLUXLITE_BASELINE_PURE=1``, when the revision has no compile step (before ``setup.py``), or
    when its compile fails (the reason is given).  Costs the revision's compile, about a minute of
    two cores.
    """
    from fluxlite import _compiled

    why = None
    if os.environ.get(BASELINE_PURE_ENV, "").strip() not in ("", "0"):
        why = f"{BASELINE_PURE_ENV} is set"
    elif _compiled.pure_requested() or not _compiled.status()["compiled"]:
        why = "as this checkout"
    else:
        missing = [f for f in _BUILD_FILES if not (tree / f).exists()]
        if missing:
            try:
                _archive(ref, tree, tuple(missing))
            except InputError:
                why = "the revision has no compile step"
    if why is None:
        t0 = time.monotonic()
        try:
            r = subprocess.run(
                [sys.executable, "setup.py", "build_ext", "--inplace"],
                cwd=tree,
                capture_output=True,
                text=True,
                timeout=1800,
                env={k: v for k, v in os.environ.items() if k != "FLUXLITE_PURE_PYTHON"},
            )
        except (OSError, subprocess.SubprocessError) as exc:
            why = f"its compile did not run: {exc}"
        else:
            built = _built(tree)
            if r.returncode != 0 or not built:
                last = (r.stderr.strip().splitlines() or ["no module compiled"])[-1]
                why = f"its compile failed: {last[:200]}"
            else:
                how = f"compiled in place like this checkout ({built} modules, {time.monotonic() - t0:.0f} s)"
                sys.stderr.write(f"baseline {ref}: {how}\n")
                return how
    how = f"pure Python ({why})"
    sys.stderr.write(f"baseline {ref}: {how}\n")
    return how


def _built(tree: Path) -> int:
    """How many modules the in-place build of ``tree`` recorded in its manifest."""
    try:
        doc = json.loads((tree / "fluxlite" / "_compiled.json").read_text())
    except (OSError, ValueError):
        return 0
    mods = doc.get("modules") if isinstance(doc, dict) else None
    return len(mods) if isinstance(mods, dict) else 0


def run_in_tree(tree: str, code: str, arg: str, timeout: float) -> dict[str, Any]:
    """Run ``code`` (given ``arg`` as ``sys.argv[1]``) in a fresh interpreter whose ``fluxlite`` is the
    one unpacked under ``tree``; return the JSON object on its last line of output.

    A failed run is a ``CommandError`` carrying its last line of stderr; ``subprocess.TimeoutExpired``
    (the process is stopped) is the caller's to handle.
    """
    r = subprocess.run(
        [sys.executable, "-c", code, arg],
        capture_output=True,
        text=True,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": tree},
        timeout=timeout,
    )
    if r.returncode != 0:
        raise CommandError(f"the baseline run failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(r.stdout.strip().splitlines()[-1])
