"""``fluxlite sim batch``: run with JSON/CSV/plots, YAML configs, SWF traces, one-line errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

from fluxlite.sim.batch.cli import main
from fluxlite.sim.batch.workloads import synthetic_swf

KEYS = {"makespan_s", "utilization", "throughput_per_min", "avg_wait_s", "avg_response_s",
        "dyn_requests", "dyn_satisfied_jobs", "corridor_violations"}  # fmt: skip


def test_run_esp_writes_summary_csv_and_plots(tmp_path, capsys):
    """The summary has the documented keys and agrees with the per-job CSV."""
    out = tmp_path / "s.json"
    rc = main(["run", "--workload", "esp", "--queue", "easy", "--json", str(out),
               "--csv", str(tmp_path / "j.csv"), "--plots", str(tmp_path / "p")])  # fmt: skip
    assert rc == 0
    s = json.loads(out.read_text())
    assert set(s) >= KEYS and s["jobs"] == s["completed"] == 230
    rows = list(csv.DictReader((tmp_path / "j.csv").read_text().splitlines()))
    assert len(rows) == 230
    waits = [int(r["wait"]) for r in rows]
    assert abs(sum(waits) / len(waits) - s["avg_wait_s"]) < 1e-6
    ends = [int(r["end"]) for r in rows]
    assert s["makespan_s"] == max(ends) - min(int(r["submit"]) for r in rows)
    assert {p.name for p in (tmp_path / "p").iterdir()} == {"wait.png", "utilization.png", "gantt.png"}
    assert "makespan_s" in capsys.readouterr().out


def test_yaml_config_and_swf_trace(tmp_path):
    """A YAML config selects an SWF trace; flags override it; every job completes."""
    trace = tmp_path / "t.swf"
    synthetic_swf(trace, jobs=60, nodes=16, seed=3)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"workload: swf\nswf: {trace}\nqueue: fcfs\n")
    out = tmp_path / "s.json"
    assert main(["run", "--config", str(cfg), "--queue", "conservative", "--json", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["queue"] == "conservative" and s["completed"] == 60


def test_bad_input_is_one_line_and_nonzero(tmp_path, capsys):
    """Unknown YAML keys, missing traces and bad fairness files: one line on stderr, exit 2."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("workload: esp\nqueueing: easy\n")
    dfs = tmp_path / "dfs.cfg"
    dfs.write_text("DFSPOLICY NONE\nBOGUS 1\n")
    for args, needle in [
        (["run", "--config", str(cfg)], "unknown option 'queueing'"),
        (["run", "--workload", "swf"], "needs --swf"),
        (
            ["run", "--workload", "esp-dynamic", "--dynamic", "--dfs", str(dfs)],
            f"{dfs}:2: unknown key 'BOGUS'",
        ),
        (["run", "--workload", "esp", "--queue", "lifo"], "unknown queue policy 'lifo'"),
        (["run", "--workload", "esp", "--malleable", "power"], "needs a workload with a power corridor"),
        (["run", "--workload", "power20", "--corridor", "0:1700"], "expected FROM:LOW:HIGH"),
    ]:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1
    # and through the real command line, without a traceback
    p = subprocess.run([sys.executable, "-m", "fluxlite.cli.main", "sim", "batch", "run", "--config", str(cfg)],
                       capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 2 and "unknown option" in p.stderr and "Traceback" not in p.stderr


def test_power_corridor_from_yaml(tmp_path):
    """A corridor schedule given in YAML replaces the default one; an always-wide corridor is never broken."""
    cfg = tmp_path / "p.yaml"
    cfg.write_text("workload: power20\nmalleable: power\ncorridor: [[0, 0, 100000]]\n")
    out = tmp_path / "p.json"
    assert main(["run", "--config", str(cfg), "--json", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["corridor_violations"] == 0 and s["completed"] == 20


def test_config_may_name_the_outputs(tmp_path):
    """``json:``/``csv:`` keys in a config write those files, as --json/--csv do; a flag overrides a key."""
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"workload: esp\nqueue: easy\njson: {tmp_path / 'a.json'}\ncsv: {tmp_path / 'jobs.csv'}\n")
    assert main(["run", "--config", str(cfg)]) == 0
    assert json.loads((tmp_path / "a.json").read_text())["queue"] == "easy"
    assert (tmp_path / "jobs.csv").read_text().startswith("jobid")
    assert main(["run", "--config", str(cfg), "--json", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "b.json").exists()


def test_bench_pass_against_a_baseline_revision(tmp_path, capsys):
    """--baseline HEAD: each cell is also run by that revision's own bench_pass; a cell over the limit is
    reported as not finished (and its process stopped); a bad revision is one line."""
    from fluxlite.sim.batch.passbench import baseline_cell

    out = tmp_path / "p.json"
    rc = main(["bench-pass", "--depths", "6", "--policies", "conservative", "--passes", "1", "--nodes", "8",
               "--baseline", "HEAD", "--json", str(out)])  # fmt: skip
    assert rc == 0
    (row,) = json.loads(out.read_text())
    assert row["baseline"] == "HEAD" and row["baseline_cpu_s_per_pass"] > 0 and row["baseline_over_this"] > 0
    assert row["reservations"] >= 1
    assert "HEAD: CPU" in capsys.readouterr().out
    got = baseline_cell(str(tmp_path), "conservative", 6, 8, 1, limit=0.001)
    assert got["timeout_s"] == 0.001
    assert main(["bench-pass", "--depths", "6", "--baseline", "no-such-revision-xyz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-revision-xyz" in err[0]
