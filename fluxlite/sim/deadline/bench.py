"""``fluxlite sim deadline bench`` (also ``fluxlite bench deadline``): speed of the deadline simulator.

One 1,000-job Lublin-Feitelson trace on the 16x8 grid with 4 cores per node,
per strategy, each run in a fresh process so its peak RSS is its own: wall
time of the simulation (median of ``--repeat``; the trace generation and the
machine's construction are reported apart), simulation events per second
(kernel callbacks: arrivals, phase ends, kills, snapshots), engine operations
included, the process's CPU seconds for the whole run (trace, machine and
simulation: on a loaded machine the steadier figure), and the process's peak
RSS.  Target: <= 2 s per trace.

``--baseline REF`` measures the code of git revision ``REF`` (e.g. ``main``)
in the same run, on the same machine, interleaved run by run with this
code's (``git archive REF`` into a temporary directory, run there in fresh
processes), and reports the ratios of the medians, of wall time and of CPU
time: the machine may be loaded, so the ratios are the figures to read.  ``--lag half-1h --margin 0.25
--type2-forks local`` give the trace and model of the code before the
reproduction (the same rows), so a baseline from then runs the same jobs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.revision import extract_revision
from fluxlite.sim.deadline.options import COMM_NAMES, LOAD_NAMES, STRATEGY_NAMES, TYPE_NAMES, add_list_option

__all__ = ["BENCH_DESCRIPTION", "add_bench_arguments", "main", "run_bench"]

BENCH_DESCRIPTION = (
    "One 1,000-job trace on the 16x8x4 machine per strategy, each in a fresh process: "
    "wall time (median of --repeat), events per second, peak RSS. Target: <= 2 s per trace."
)


def add_bench_arguments(b: argparse.ArgumentParser) -> None:
    """The bench's options (``fluxlite sim deadline bench`` and ``fluxlite bench deadline``)."""
    add_list_option(b, "--strategies", STRATEGY_NAMES, "strategies")
    b.add_argument("--load", choices=LOAD_NAMES, default="normal", help="load of the trace (normal)")
    b.add_argument("--type", choices=TYPE_NAMES, default="uniform", dest="jtype", help="job types (uniform)")
    b.add_argument("--comm", choices=COMM_NAMES, default="async", help="communication style (async)")
    b.add_argument("--jobs", type=int, default=1000, help="jobs in the trace (1000)")
    b.add_argument("--repeat", type=int, default=3, help="runs per strategy (median; 3)")
    b.add_argument("--backend", choices=("auto", "grid", "interim"), default="auto", help="who chooses nodes")
    b.add_argument(
        "--lag", choices=("uniform-63d", "half-1h", "none"), default="uniform-63d", help="lag model"
    )
    b.add_argument("--margin", type=float, default=0.0, help="requested = runtime x (1 + MARGIN) (0)")
    b.add_argument(
        "--type2-forks", choices=("leak", "local"), default="leak", help="type-2 forks under a leak"
    )
    b.add_argument(
        "--baseline",
        metavar="REF",
        help="also time git revision REF (e.g. main) in the same run, interleaved, and report the ratios",
    )
    b.add_argument("--json", metavar="FILE", help="write the measurements as JSON")


def _one(
    strategy: str, load: str, jtype: str, comm: str, jobs: int, backend: str, **model: Any
) -> dict[str, Any]:
    """One timed run (in the calling process).  ``model``: lag, margin, type2_forks."""
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.sim import simulate
    from fluxlite.sim.deadline.workload import lublin_trace

    gen = {
        k: v
        for k, v in (("lag_model", model.get("lag")), ("walltime_margin", model.get("margin")))
        if v is not None
    }
    sim_kw = {"type2_forks": model["type2_forks"]} if model.get("type2_forks") else {}
    t0 = time.perf_counter()
    trace = lublin_trace(jobs, load, jtype, seed=1, **gen)
    t1 = time.perf_counter()
    m = Machine(16, 8, 4, strategy=strategy, backend=backend)
    t2 = time.perf_counter()
    res = simulate(trace, strategy, comm, machine=m, **sim_kw)
    t3 = time.perf_counter()
    return {
        "trace_s": t1 - t0,
        "machine_s": t2 - t1,
        "sim_s": t3 - t2,
        "events": res.events,
        "accepted": res.accepted,
        "completed": res.completed,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "backend": m.backend,
    }


def _one_cpu(*args: Any, **model: Any) -> dict[str, Any]:
    """:func:`_one` plus ``cpu_s``: the process's CPU seconds for the whole run (trace, machine, simulation)."""
    t0 = time.process_time()
    r = _one(*args, **model)
    r["cpu_s"] = time.process_time() - t0
    return r


# the baseline's own _one, timed the same way as _one_cpu (an older _one does not measure CPU time)
_BASELINE_CODE = """
import json, sys, time
from fluxlite.sim.deadline.bench import _one
t0 = time.process_time()
r = _one(*json.loads(sys.argv[1]))
r["cpu_s"] = time.process_time() - t0
print(json.dumps(r))
"""


def _baseline_one(tree: str, args: list[Any]) -> dict[str, Any]:
    """One run of the baseline's ``_one`` in a fresh interpreter whose ``fluxlite`` is ``tree``'s."""
    from fluxlite.revision import run_in_tree

    return run_in_tree(tree, _BASELINE_CODE, json.dumps(args), timeout=3600)


def _row(s: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    sim = statistics.median(r["sim_s"] for r in runs)
    return {
        "strategy": s,
        "sim_s_median": sim,
        "cpu_s_median": statistics.median(r["cpu_s"] for r in runs),
        "sim_s_min": min(r["sim_s"] for r in runs),
        "sim_s_all": [r["sim_s"] for r in runs],
        "trace_s": statistics.median(r["trace_s"] for r in runs),
        "machine_s": statistics.median(r["machine_s"] for r in runs),
        "events": runs[0]["events"],
        "events_per_s": runs[0]["events"] / sim if sim > 0 else 0.0,
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "accepted": runs[0]["accepted"],
        "completed": runs[0].get("completed"),
        "meets_2s": sim <= 2.0,
        "backend": runs[0]["backend"],
    }


def run_bench(a: argparse.Namespace) -> int:
    ctx = mp.get_context("spawn")
    model = {"lag": a.lag, "margin": a.margin, "type2_forks": a.type2_forks}
    rows = []
    base_rows = []
    tmp = tempfile.TemporaryDirectory(prefix="fluxlite-bench-deadline-") if a.baseline else None
    try:
        built = ""
        if tmp is not None:
            built = extract_revision(a.baseline, Path(tmp.name), "fluxlite")
        print(
            f"deadline bench: {a.jobs}-job trace, load {a.load}, type {a.jtype}, comm {a.comm}, 16x8x4, "
            f"lag {a.lag}, margin {a.margin}, type-2 forks {a.type2_forks}; median of {a.repeat} fresh processes"
            + (f"; baseline {a.baseline} (its own defaults, {built}) interleaved" if a.baseline else "")
        )
        hdr = (
            f"{'strategy':<16}{'sim s':>8}{'min s':>8}{'cpu s':>8}{'events':>8}{'events/s':>10}{'RSS MB':>8}"
            f"{'accepted':>9}"
        )
        print(
            hdr
            + (f"{'base s':>8}{'ratio':>7}{'base cpu':>9}{'cpu ratio':>10}" if a.baseline else "")
            + f"{'target':>8}"
        )
        for s in a.strategies:
            runs, base = [], []
            for _ in range(a.repeat):
                with ctx.Pool(1) as pool:
                    runs.append(pool.apply(_one_cpu, (s, a.load, a.jtype, a.comm, a.jobs, a.backend), model))
                if tmp is not None:
                    base.append(_baseline_one(tmp.name, [s, a.load, a.jtype, a.comm, a.jobs, a.backend]))
            row = _row(s, runs)
            line = (
                f"{s:<16}{row['sim_s_median']:>8.2f}{row['sim_s_min']:>8.2f}{row['cpu_s_median']:>8.2f}{row['events']:>8}"
                f"{row['events_per_s']:>10.0f}{row['peak_rss_mb']:>8.0f}{row['accepted']:>9}"
            )
            if base:
                brow = _row(s, base)
                base_rows.append(brow)
                row["baseline_s_median"] = brow["sim_s_median"]
                row["ratio_to_baseline"] = row["sim_s_median"] / brow["sim_s_median"]
                row["baseline_cpu_s_median"] = brow["cpu_s_median"]
                row["cpu_ratio_to_baseline"] = row["cpu_s_median"] / brow["cpu_s_median"]
                # what both report (an older baseline may not report completed jobs)
                both = [k for k in ("accepted", "completed") if brow.get(k) is not None]
                row["same_result_as_baseline"] = all(row[k] == brow[k] for k in both)
                line += (
                    f"{brow['sim_s_median']:>8.2f}{row['ratio_to_baseline']:>7.2f}"
                    f"{brow['cpu_s_median']:>9.2f}{row['cpu_ratio_to_baseline']:>10.2f}"
                )
            rows.append(row)
            print(line + f"{'ok' if row['meets_2s'] else 'MISSED':>8}", flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "load": a.load,
                    "type": a.jtype,
                    "comm": a.comm,
                    "jobs": a.jobs,
                    "repeat": a.repeat,
                    "model": model,
                    "baseline": a.baseline,
                    "results": rows,
                    "baseline_results": base_rows,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``fluxlite bench deadline`` (same options as ``fluxlite sim deadline bench``)."""
    p = argparse.ArgumentParser(prog="fluxlite bench deadline", description=BENCH_DESCRIPTION)
    add_bench_arguments(p)
    a = p.parse_args(list(argv or []))
    if a.jobs < 1 or a.repeat < 1:
        p.error("--jobs and --repeat must be >= 1")
    return run_bench(a)
