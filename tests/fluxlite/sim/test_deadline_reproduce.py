"""The deadline study's reproduction section: a real (quick) sweep, the findings, choices and figures."""

from __future__ import annotations

import csv

from fluxlite.sim.deadline.cli import main
from fluxlite.sim.deadline.reproduce import CHOICES, QUICK, _findings


def test_quick_section_runs_resumes_and_reports_every_finding(tmp_path, capsys) -> None:
    assert main(["reproduce", "--out", str(tmp_path), "--quick", "--quiet"]) == 0
    md = (tmp_path / "deadline" / "REPRODUCTION-deadline.md").read_text()
    data = tmp_path / "deadline" / "sweep.csv"
    with data.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5 * 3 * len(QUICK["types"])  # strategies x loads x the quick mixes
    findings = [ln for ln in md.splitlines() if ln.startswith("| ") and "journal 5." in ln]
    assert len(findings) == 7
    assert all(("reproduce" in ln) or ("no data" in ln) for ln in findings)
    for choice, _what, source, _abl in CHOICES:  # every choice cites the paper or says it is silent
        assert f"| {choice} |" in md
        assert "section" in source or "silent" in source or "figure" in source or "ambiguous" in source
    for png in ("deadline-async.png",):
        assert (tmp_path / "deadline" / "plots" / png).stat().st_size > 0
        assert f"](deadline/plots/{png})" in md
    # a rerun reuses the finished sweep: no new rows
    before = data.read_text()
    assert main(["reproduce", "--out", str(tmp_path), "--quick", "--quiet"]) == 0
    assert data.read_text() == before


def _rows(accept: dict[str, float], load_shift: float = 0.0) -> list[dict[str, str]]:
    out = []
    for ld_i, ld in enumerate(("normal", "heavy", "very-heavy")):
        for s, a in accept.items():
            for t in ("0", "1", "2", "3", "uniform"):
                acc = max(0.0, a - ld_i * load_shift) * 100
                out.append(
                    {"strategy": s, "load": ld, "type": t, "comm": "async", "trace": "0", "jobs": "100",
                     "accepted": str(acc), "cancelled": "0", "completed": str(acc)}
                )  # fmt: skip
    return out


def test_verdicts_follow_the_numbers() -> None:
    strat = {"count": 0.51, "hilbert": 0.6, "manhattan": 0.62, "leak": 0.97, "leak-noncontig": 0.99}
    good = {f[0].split(" (")[0]: f[3] for f in _findings(_rows(strat))}
    assert good["Leak policies accept nearly all jobs at every load"] == "reproduces"
    bad = {f[0].split(" (")[0]: f[3] for f in _findings(_rows({**strat, "leak": 0.5, "leak-noncontig": 0.5}))}
    assert bad["Leak policies accept nearly all jobs at every load"].startswith("**does not")
    # the count check's published 51 / 40 / 26 %: falling by ~12 points a load is within 20 %
    falling = {"count": 0.51, "hilbert": 0.6, "manhattan": 0.6, "leak": 1.0, "leak-noncontig": 1.0}
    got = next(f for f in _findings(_rows(falling, load_shift=0.12)) if f[0].startswith("The count-only"))
    assert got[3].startswith("reproduces") and "falls with load: yes" in got[2]
