"""Sweeps: resumable CSV, local and Dask fan-out giving the same rows, and the CLI around them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from fluxlite.sim.deadline.cli import main
from fluxlite.sim.deadline.sweep import WALL_COLUMNS, plan, sweep

SMALL = {"jobs": 30, "width": 4, "height": 3, "cores": 2}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row[k] for k in ("strategy", "load", "type", "comm", "trace"))


def test_sweep_resumes_without_redoing_finished_runs(tmp_path) -> None:
    """A second sweep over the same CSV runs only the missing keys and leaves existing rows alone."""
    out = tmp_path / "s.csv"
    first = plan(["hilbert", "leak"], ["heavy"], ["1"], ["async"], 2, **SMALL)
    assert sweep(first, out, workers=1) == {"planned": 4, "skipped": 0, "ran": 4}
    rows = _rows(out)
    assert len(rows) == 4
    # tamper with a finished row: if the sweep redid it, the value would come back
    rows[0]["accepted"] = "-123"
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    bigger = plan(["hilbert", "leak"], ["heavy"], ["1"], ["async"], 3, **SMALL)
    assert sweep(bigger, out, workers=1) == {"planned": 6, "skipped": 4, "ran": 2}
    again = _rows(out)
    assert len(again) == 6 and again[0]["accepted"] == "-123"
    assert len({_key(r) for r in again}) == 6
    assert sweep(bigger, out, workers=1)["ran"] == 0


def test_dask_cluster_gives_the_same_rows_as_local_processes(tmp_path, dask_cluster) -> None:
    """Fanning out over a real Dask scheduler and two worker processes on loopback reproduces the rows."""
    specs = plan(
        ["count", "manhattan", "leak-noncontig"], ["normal", "very-heavy"], ["uniform"], ["sync"], 1, **SMALL
    )
    local = tmp_path / "local.csv"
    sweep(specs, local, workers=2)
    remote = tmp_path / "dask.csv"
    counts = sweep(specs, remote, scheduler=dask_cluster.scheduler_address)
    assert counts["ran"] == len(specs) == 6

    def norm(path: Path) -> dict[tuple[str, ...], dict[str, str]]:
        return {_key(r): {k: v for k, v in r.items() if k not in WALL_COLUMNS} for r in _rows(path)}

    assert norm(local) == norm(remote)


def test_cli_run_sweep_plot_and_errors(tmp_path, capsys) -> None:
    """run/sweep/plot/trace write their JSON summaries and files; bad input is one line, exit 2."""
    rj = tmp_path / "run.json"
    png = tmp_path / "occ.png"
    assert (
        main(
            [
                "run",
                "-s",
                "leak",
                "--jobs",
                "40",
                "--grid",
                "4x3",
                "--cores",
                "2",
                "--load",
                "heavy",
                "--at",
                "100,2000",
                "--occupancy",
                str(png),
                "--check",
                "--json",
                str(rj),
            ]
        )
        == 0
    )
    d = json.loads(rj.read_text())
    assert d["jobs"] == 40 and d["recount_errors"] == 0 and d["accepted"] + d["rejected"] == 40
    assert png.stat().st_size > 1000
    csvf = tmp_path / "s.csv"
    sj = tmp_path / "sweep.json"
    assert (
        main(
            [
                "sweep",
                "--strategies",
                "hilbert,leak",
                "--loads",
                "heavy",
                "--types",
                "0,uniform",
                "--comms",
                "async",
                "--traces",
                "2",
                "--jobs",
                "30",
                "--grid",
                "4x3",
                "--cores",
                "2",
                "--workers",
                "1",
                "-q",
                "-o",
                str(csvf),
                "--json",
                str(sj),
            ]
        )
        == 0
    )
    assert json.loads(sj.read_text())["ran"] == 8
    pj = tmp_path / "plot.json"
    assert main(["plot", str(csvf), "-o", str(tmp_path / "plots"), "--json", str(pj)]) == 0
    summary = json.loads(pj.read_text())["summary"]
    assert len(summary) == 4 and all(s["traces"] == 2 for s in summary)
    assert (tmp_path / "plots" / "deadline-async.png").stat().st_size > 1000
    assert "| async | heavy | 0 | hilbert | 2 |" in (tmp_path / "plots" / "table.md").read_text()
    occ = tmp_path / "occ"
    assert (
        main(
            [
                "plot",
                "--at",
                "500,3000",
                "-s",
                "manhattan",
                "--load",
                "heavy",
                "--type",
                "1",
                "--jobs",
                "30",
                "--grid",
                "4x3",
                "--cores",
                "2",
                "-o",
                str(occ),
                "--json",
                str(pj),
            ]
        )
        == 0
    )
    assert Path(json.loads(pj.read_text())["occupancy"]).stat().st_size > 1000
    swf = tmp_path / "t.swf"
    assert main(["trace", "--jobs", "20", "-o", str(swf)]) == 0
    assert main(["run", "--swf", str(swf), "--jobs", "20", "-s", "manhattan", "--json", str(rj)]) == 0
    assert json.loads(rj.read_text())["jobs"] == 20
    capsys.readouterr()
    assert main(["run", "--swf", str(tmp_path / "missing.swf")]) == 2
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 1 10 1\n")
    assert main(["run", "--swf", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "missing.swf" in err and "bad.swf:1:" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as ei:
        main(["run", "--grid", "0x3"])
    assert ei.value.code == 2
    assert main(["plot", str(rj)]) == 2


def test_runs_sharing_a_cached_trace_give_the_rows_of_a_fresh_trace_each(tmp_path, monkeypatch) -> None:
    """The runs of one trace share one generation per process (``_cached_trace``): every row equals
    the row of a run that generates its trace afresh, and only a change of a trace field (here the
    walltime margin) gives another trace."""
    from fluxlite.sim.deadline import sweep as sw

    specs = plan(["count", "hilbert", "leak"], ["heavy"], ["1", "2"], ["async", "sync"], 1, **SMALL)
    sw._cached_trace.cache_clear()
    cached = [sw.run_one(s) for s in specs]
    info = sw._cached_trace.cache_info()
    assert (info.misses, info.hits) == (2, len(specs) - 2)  # one trace per (load, type, trace)
    with monkeypatch.context() as mp:
        mp.setattr(sw, "make_jobs", sw._generate)
        fresh = [sw.run_one(s) for s in specs]

    def strip(r: dict) -> dict:
        return {k: v for k, v in r.items() if k not in WALL_COLUMNS}

    assert [strip(r) for r in cached] == [strip(r) for r in fresh]
    other = plan(["count"], ["heavy"], ["1"], ["async"], 1, margin=0.5, **SMALL)[0]
    assert sw.make_jobs(other) != sw.make_jobs(specs[0]) and sw.make_jobs(other) == sw._generate(other)
