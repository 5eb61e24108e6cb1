"""Unpack a git revision of the checkout fluxlite runs from: the baselines the benchmarks measure in
the same run (``--baseline REF`` of ``sim deadline bench``, ``bench hierarchy``, ``bench burst`` and
``bench kube``)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from fluxlite.errors import InputError

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
