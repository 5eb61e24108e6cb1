"""A one-trace sample of the full deadline sweep, code trees in turns, and the projection to 20 traces.

``python sample.py OUTDIR NAME=ROOT NAME=ROOT... [--traces N] [--workers W]`` runs, load by load
and tree by tree in turns (first tree normal, second tree normal, ..., first tree heavy, ...),
``fluxlite sim deadline sweep --strategies all --loads LOAD --types all --comms async,sync
--traces N --workers W`` with ``sweepcpu.py`` (CPU seconds of the sweep and its workers), into
``OUTDIR/NAME-LOAD.csv``.  It then prints and writes ``OUTDIR/sample.json``: per tree the runs,
CPU seconds per run, wall seconds, the projected wall minutes of the full sweep (``--traces 20``:
3,000 runs) as ``wall x 3000 / runs`` at the load of the moment and as ``CPU per run x 3000 / W``
(the machine's W cores busy with nothing else), the ratios to the first tree, and how many rows
are identical to the first tree's in every column but ``wall_seconds``.  A root is a checkout or
``git archive REV | tar -x -C ROOT``.
"""

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOADS = ("normal", "heavy", "very-heavy")
KEY = ("strategy", "load", "type", "comm", "trace")
FULL_RUNS = 3000  # 5 strategies x 3 loads x 5 types x 2 styles x 20 traces


def _sweep(root: str, out: Path, load: str, traces: int, workers: int, jobs: int) -> dict:
    cmd = [sys.executable, str(HERE / "sweepcpu.py"), root, str(out), "--strategies", "all", "--loads", load]
    cmd += ["--types", "all", "--comms", "async,sync", "--traces", str(traces), "--workers", str(workers)]
    cmd += ["--jobs", str(jobs)]
    got = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(got.stdout.strip().splitlines()[-1])


def _rows(paths: list[Path]) -> dict[tuple[str, ...], dict[str, str]]:
    out = {}
    for p in paths:
        with p.open(newline="") as fh:
            for row in csv.DictReader(fh):
                out[tuple(row[k] for k in KEY)] = {k: v for k, v in row.items() if k != "wall_seconds"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("trees", nargs="+", metavar="NAME=ROOT", help="the first one is the baseline")
    ap.add_argument("--traces", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=1000, help="jobs per trace (the sweep's 1000)")
    a = ap.parse_args()
    outdir = Path(a.outdir).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    sides = dict(t.split("=", 1) for t in a.trees)
    seg: dict[str, list[dict]] = {s: [] for s in sides}
    for load in LOADS:
        for side, root in sides.items():
            out = outdir / f"{side}-{load}.csv"
            out.unlink(missing_ok=True)
            r = _sweep(root, out, load, a.traces, a.workers, a.jobs)
            r["load"] = load
            seg[side].append(r)
            print(side, json.dumps(r), flush=True)
    summary: dict = {"traces": a.traces, "workers": a.workers, "trees": sides, "segments": seg}
    base = next(iter(sides))
    rb = _rows([outdir / f"{base}-{ld}.csv" for ld in LOADS])
    for side in sides:
        runs = sum(r["runs"] for r in seg[side])
        cpu = sum(r["cpu_s"] for r in seg[side])
        wall = sum(r["wall_s"] for r in seg[side])
        rn = _rows([outdir / f"{side}-{ld}.csv" for ld in LOADS])
        summary[side] = {
            "runs": runs,
            "cpu_s": round(cpu, 1),
            "cpu_per_run": round(cpu / runs, 3),
            "wall_s": round(wall, 1),
            "projected_min_at_this_load": round(wall * FULL_RUNS / runs / 60, 1),
            "projected_min_cpu_bound": round(cpu / runs * FULL_RUNS / a.workers / 60, 1),
            "rows_identical_to_" + base: sum(1 for k in rb if rn.get(k) == rb[k]),
            "same_keys": rb.keys() == rn.keys(),
        }
    for side in sides:
        summary[side]["cpu_ratio"] = round(summary[side]["cpu_per_run"] / summary[base]["cpu_per_run"], 3)
        summary[side]["wall_ratio"] = round(summary[side]["wall_s"] / summary[base]["wall_s"], 3)
    (outdir / "sample.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "segments"}, indent=2))


if __name__ == "__main__":
    main()
