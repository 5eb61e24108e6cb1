"""``fluxlite bench burst`` on a local moto server: a tiny run writes its rows and leaves no files behind."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

import pytest

from providers.bench import main


def test_bench_burst_leaves_no_temporary_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One request of one type, no fleet: the CSV has its row, and the journal directory is gone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    out = tmp_path / "out"
    rc = main(["--reps", "1", "--fleet-reps", "0", "--types", "t2.micro", "--sizes", "1",
               "--no-plots", "--no-progress", "--out", str(out)])  # fmt: skip
    assert rc == 0
    with open(out / "burst.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["type"], r["instances"]) for r in rows] == [("t2.micro", "1")]
    assert list(tmp.iterdir()) == []
