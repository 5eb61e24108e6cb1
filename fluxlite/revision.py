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
from pathlib import Path
from typing import Any

from fluxlite.errors import CommandError, InputError

REPO = Path(__file__).resolve().parent.parent


def extract_revision(ref: str, into: Path, *paths: str) -> None:
    """Unpack revision ``ref`` (only ``paths`` of it, if any are given) under ``into``.

    An unknown revision, or no git checkout, is an ``InputError`` naming the revision; nothing is
    written then.
    """
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
