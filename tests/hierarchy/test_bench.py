"""The hierarchy benchmark: the least-squares fit and a one-repetition end-to-end run."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from hierarchy.bench import fit_line, main
from tests.conftest import BENCH


def test_fit_line_recovers_a_line() -> None:
    """fit_line returns the slope, intercept and R² of an exact line, and R² < 1 for noisy points."""
    slope, icpt, r2 = fit_line([1, 2, 3, 4], [3, 5, 7, 9])
    assert slope == pytest.approx(2) and icpt == pytest.approx(1) and r2 == pytest.approx(1)
    assert fit_line([1, 2, 3, 4], [1, 3, 2, 4])[2] < 1


def test_bench_smoke(tmp_path: Path) -> None:
    """One repetition of the smallest request through five real instances writes the CSV and summary."""
    if not (BENCH / "graphs" / "L0.graphml").is_file():
        pytest.skip(f"benchmark inputs not found at {BENCH}")
    out = tmp_path / "out"
    rc = main(["--reps", "1", "--warmup", "0", "--requests", "T8", "--modes", "deferred", "--skip-single",
               "--no-plots", "--out", str(out), "--bench-dir", str(BENCH)])  # fmt: skip
    assert rc == 0
    with open(out / "nested_summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["level"] for r in rows] == ["L4", "L3", "L2", "L1", "L0"]
    assert int(rows[0]["n"]) == 19 + 18
    assert "leaf MatchGrow total" in (out / "summary.txt").read_text()


def test_bench_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Unknown request names and missing inputs are one-line errors with status 1."""
    assert main(["--requests", "T9", "--out", str(tmp_path)]) == 1
    assert main(["--bench-dir", str(tmp_path), "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "T9" in err[0] and "not found" in err[1]
