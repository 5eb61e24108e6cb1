"""The hierarchy benchmark: the least-squares fit and a one-repetition end-to-end run."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from hierarchy.bench import fit_line, generate_inputs, main
from tests.conftest import BENCH, need


def test_fit_line_recovers_a_line() -> None:
    """fit_line returns the slope, intercept and R² of an exact line, and R² < 1 for noisy points."""
    slope, icpt, r2 = fit_line([1, 2, 3, 4], [3, 5, 7, 9])
    assert slope == pytest.approx(2) and icpt == pytest.approx(1) and r2 == pytest.approx(1)
    assert fit_line([1, 2, 3, 4], [1, 3, 2, 4])[2] < 1


def test_bench_smoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no benchmark inputs anywhere, one repetition of the smallest request runs on generated
    inputs of the same shape through five real instances, and writes the CSV and summary."""
    monkeypatch.setattr("fluxlite.cli.bench.find_bench_dir", lambda given=None: None)
    out = tmp_path / "out"
    rc = main(["--reps", "1", "--warmup", "0", "--requests", "T8", "--modes", "deferred", "--skip-single",
               "--no-plots", "--out", str(out)])  # fmt: skip
    assert rc == 0
    assert "generated graphs and jobspecs of the same shape" in capsys.readouterr().out
    with open(out / "nested_summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["level"] for r in rows] == ["L4", "L3", "L2", "L1", "L0"]
    assert int(rows[0]["n"]) == 19 + 18
    assert "leaf MatchGrow total" in (out / "summary.txt").read_text()


def test_bench_with_state_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--state``: every one of the five instances runs with a state file, and a grow and its shrink
    go through (each writing it)."""
    import hierarchy._launch as launch

    started: list[list[dict]] = []
    real = launch.start_tree

    def spy(spec: Any, run_dir: Path) -> Any:
        tree = real(spec, run_dir)
        started.append(tree.records)
        return tree

    monkeypatch.setattr(launch, "start_tree", spy)
    monkeypatch.setattr("fluxlite.cli.bench.find_bench_dir", lambda given=None: None)
    out = tmp_path / "out"
    rc = main(["--reps", "1", "--warmup", "0", "--requests", "T8", "--modes", "deferred", "--skip-single",
               "--no-plots", "--state", "--out", str(out)])  # fmt: skip
    assert rc == 0
    assert "(unix transport, state files on)" in capsys.readouterr().out
    (records,) = started
    assert len(records) == 5 and all(r["state"] for r in records)
    assert "leaf MatchGrow total" in (out / "summary.txt").read_text()


def test_generated_inputs_have_the_shape_of_the_shared_ones(tmp_path: Path) -> None:
    """The generated L0/L4 and T1..T8 give the graphs and requests of the published inputs."""
    need(BENCH)
    from fluxlite.api import Engine
    from fluxlite.jobspec import load_jobspec
    from fluxlite.readers import load_graph

    gen = generate_inputs(tmp_path)
    for name in ("L0", "L4"):
        a = load_graph(gen / "graphs" / f"{name}.graphml", format="grug")
        b = load_graph(BENCH / "graphs" / f"{name}.graphml", format="grug")
        assert sorted(map(a.path, a.vertices())) == sorted(map(b.path, b.vertices()))
    for req in ("T1", "T4", "T7", "T8"):
        counts = []
        for d in (gen, BENCH):
            eng = Engine.from_file(BENCH / "graphs" / "L0.graphml", policy="first")
            r = eng.allocate(load_jobspec(d / "jobspecs" / f"{req}.yaml"), fmt="simple")
            counts.append(r.text.count("core"))
        assert counts[0] == counts[1] > 0, req


def test_bench_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Unknown request names and missing inputs are one-line errors with status 1."""
    assert main(["--requests", "T9", "--out", str(tmp_path)]) == 1
    assert main(["--bench-dir", str(tmp_path), "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "T9" in err[0] and "not found" in err[1]


def test_against_a_baseline_reports_both_trees_and_their_ratio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--baseline HEAD: one round of each tree in its own processes; compare.txt has both columns and
    the ratio, the load average, and raw rows tagged by tree."""
    monkeypatch.setattr("fluxlite.cli.bench.find_bench_dir", lambda given=None: None)
    out = tmp_path / "out"
    rc = main(["--reps", "1", "--warmup", "0", "--requests", "T8", "--modes", "deferred", "--skip-single",
               "--no-plots", "--no-progress", "--baseline", "HEAD", "--rounds", "1", "--out", str(out)])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    text = (out / "compare.txt").read_text()
    assert "baseline: HEAD = " in text and "load average" in text
    row = next(x for x in text.splitlines() if "1 socket, deferred attach" in x).split()
    this, base, ratio = map(float, row[-3:])
    assert this > 0 and base > 0 and ratio == pytest.approx(this / base, rel=1e-2)
    with open(out / "compare_raw.csv") as f:
        trees = {r["tree"] for r in csv.DictReader(f)}
    assert trees == {"this", "baseline"}


def test_a_baseline_git_does_not_know_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--baseline", "no-such-revision-xyz", "--requests", "T8", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--baseline no-such-revision-xyz" in err[0]


@pytest.mark.parametrize("mode", ["allocate", "grow", "attach"])
def test_single_level_workers_run_and_reset(mode: str, tmp_path: Path) -> None:
    """Each single-level measurement runs its operation and puts the engine back between repetitions
    (the attach worker gives the socket back by path: below the node, vertices carry rank -1)."""
    from hierarchy.bench import _single_worker

    got = _single_worker(mode, generate_inputs(tmp_path), 2)
    assert got["n"] == 19 + 18
    assert (got["attach_ms"] if mode == "attach" else got["match_ms"]) > 0


def test_a_negative_fitted_figure_is_not_a_met_target() -> None:
    """A fitted line with a negative intercept (a loaded run's noise) is no cost: the target is not measured,
    not met, in summary.txt's verdicts and compare.txt's target column."""
    from hierarchy.bench import TARGETS, compare_report, verdict

    assert verdict(0.2, 0.3) == "met" and verdict(0.5, 0.3) == "NOT met"
    assert verdict(-0.66, 0.3) == "not measured (negative fit)"
    assert verdict(float("nan"), 0.3) == "not measured"
    head = {k: 1.0 for k in ("attach_cpu_slope_us", "attach_cpu_intercept_ms", "comm_slope_us", "comm_intercept_ms",
                             "leaf_t1_sync_ms", "leaf_t8_deferred_ms", "leaf_t8_sync_ms")}  # fmt: skip
    this = {**head, "attach_slope_us": 11.3, "attach_intercept_ms": -0.66, "leaf_t1_deferred_ms": 19.0}
    base = {**head, "attach_slope_us": 11.4, "attach_intercept_ms": 0.2, "leaf_t1_deferred_ms": 63.7}
    cmp = {
        "trees": {"this": {"headline": this, "fits": []}, "baseline": {"headline": base, "fits": []}},
        "labels": {"this": "a", "baseline": "b"},
        "loads": [5.0, 9.0],
        "rounds": 1,
        "reps": 1,
    }
    lines = {
        ln.split("  ")[1].strip(): ln
        for ln in compare_report(cmp).splitlines()
        if ln.startswith("  attach+upd")
    }
    assert lines["attach+update intercept, worst level (ms, sync)"].endswith(
        f"<={TARGETS['attach_intercept_ms']:g} n/a"
    )
    assert lines["attach+update slope, worst level L1..L4 (us/elem, sync)"].endswith("NOT")
    leaf = next(ln for ln in compare_report(cmp).splitlines() if "64 nodes, deferred" in ln)
    assert leaf.endswith("<=20 met")


def test_compare_gives_the_ratio_round_by_round_and_its_range() -> None:
    """With several rounds, compare.txt also gives each round's ratio (this/baseline of that round's runs)
    and their range, from the rounds' own headlines (not the medians over all rounds)."""
    from hierarchy.bench import compare_report

    keys = ("attach_slope_us", "attach_intercept_ms", "attach_cpu_slope_us", "attach_cpu_intercept_ms",
            "comm_slope_us", "comm_intercept_ms", "leaf_t1_deferred_ms", "leaf_t1_sync_ms",
            "leaf_t8_deferred_ms", "leaf_t8_sync_ms")  # fmt: skip

    def head(v: float, **kw: float) -> dict[str, float]:
        return {**dict.fromkeys(keys, v), **kw}

    rounds = [
        {"this": head(1.0, leaf_t8_deferred_ms=9.0), "baseline": head(2.0, leaf_t8_deferred_ms=10.0)},
        {"this": head(1.0, leaf_t8_deferred_ms=8.0), "baseline": head(4.0, leaf_t8_deferred_ms=10.0)},
        {"this": head(3.0, leaf_t8_deferred_ms=11.0), "baseline": head(3.0, leaf_t8_deferred_ms=10.0)},
    ]
    cmp = {
        "trees": {
            "this": {"headline": head(1.0), "fits": []},
            "baseline": {"headline": head(3.0), "fits": []},
        },
        "labels": {"this": "a", "baseline": "b"},
        "loads": [1.0],
        "rounds": 3,
        "reps": 1,
        "per_round": rounds,
    }
    text = compare_report(cmp)
    section = text.split("the ratio round by round")[1]
    leaf = next(ln for ln in section.splitlines() if "1 socket, deferred attach" in ln).split()
    assert leaf[-6:] == ["0.800", "..", "1.100", "0.900", "0.800", "1.100"]
    slope = next(ln for ln in section.splitlines() if ln.strip().startswith("attach+update slope")).split()
    assert slope[-3:] == ["0.500", "0.250", "1.000"]
    cmp["per_round"] = rounds[:1]  # one round: nothing to add to the medians' ratio
    assert "round by round" not in compare_report(cmp)
