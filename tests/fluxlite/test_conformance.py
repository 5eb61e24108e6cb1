"""Fluxion's own resource-query test suite, run against `fluxlite query` (../shared/fluxion-conformance)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CONFORMANCE, need_shared


def test_every_conformance_case_passes(tmp_path: Path) -> None:
    """All 342 cases of Fluxion's resource-query suite produce byte-identical outputs."""
    need_shared()
    results = tmp_path / "results.json"
    query = f"{sys.executable} -m fluxlite.cli.main query"
    p = subprocess.run(
        [
            sys.executable,
            str(CONFORMANCE / "run.py"),
            "--query",
            query,
            "--json",
            str(results),
            "-j",
            str(os.cpu_count() or 2),
            "--diff",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    cases = json.loads(results.read_text())
    failed = [f"{c['category']}/{c['script']}: {c['desc']}" for c in cases if not c["passed"]]
    assert len(cases) == 342
    assert failed == [], p.stdout[-4000:]
