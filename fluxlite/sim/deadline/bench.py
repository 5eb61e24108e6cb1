"""``fluxlite sim deadline bench`` (also ``fluxlite bench deadline``): speed of the deadline simulator.

One 1,000-job Lublin-Feitelson trace on the 16x8 grid with 4 cores per node,
per strategy, each run in a fresh (spawned) process so its peak RSS is its
own: wall time of the simulation (median of ``--repeat``; the trace
generation and the machine's construction are reported apart), simulation
events per second (kernel callbacks: arrivals, phase ends, kills,
snapshots), engine operations included, and the process's peak RSS.
Target: <= 2 s per trace.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.sim.deadline.options import COMM_NAMES, LOAD_NAMES, STRATEGY_NAMES, TYPE_NAMES, csv_list

__all__ = ["BENCH_DESCRIPTION", "add_bench_arguments", "main", "run_bench"]

BENCH_DESCRIPTION = (
    "One 1,000-job trace on the 16x8x4 machine per strategy, each in a fresh process: "
    "wall time (median of --repeat), events per second, peak RSS. Target: <= 2 s per trace."
)


def add_bench_arguments(b: argparse.ArgumentParser) -> None:
    """The bench's options (``fluxlite sim deadline bench`` and ``fluxlite bench deadline``)."""
    b.add_argument(
        "--strategies",
        type=csv_list(STRATEGY_NAMES),
        default=list(STRATEGY_NAMES),
        metavar="LIST",
        help=f"comma-separated strategies, or all ({','.join(STRATEGY_NAMES)})",
    )
    b.add_argument("--load", choices=LOAD_NAMES, default="normal", help="load of the trace (normal)")
    b.add_argument("--type", choices=TYPE_NAMES, default="uniform", dest="jtype", help="job types (uniform)")
    b.add_argument("--comm", choices=COMM_NAMES, default="async", help="communication style (async)")
    b.add_argument("--jobs", type=int, default=1000, help="jobs in the trace (1000)")
    b.add_argument("--repeat", type=int, default=3, help="runs per strategy (median; 3)")
    b.add_argument("--backend", choices=("auto", "grid", "interim"), default="auto", help="who chooses nodes")
    b.add_argument("--json", metavar="FILE", help="write the measurements as JSON")


def _one(strategy: str, load: str, jtype: str, comm: str, jobs: int, backend: str) -> dict[str, Any]:
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.sim import simulate
    from fluxlite.sim.deadline.workload import lublin_trace

    t0 = time.perf_counter()
    trace = lublin_trace(jobs, load, jtype, seed=1)
    t1 = time.perf_counter()
    m = Machine(16, 8, 4, strategy=strategy, backend=backend)
    t2 = time.perf_counter()
    res = simulate(trace, strategy, comm, machine=m)
    t3 = time.perf_counter()
    return {
        "trace_s": t1 - t0,
        "machine_s": t2 - t1,
        "sim_s": t3 - t2,
        "events": res.events,
        "accepted": res.accepted,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "backend": m.backend,
    }


def run_bench(a: argparse.Namespace) -> int:
    ctx = mp.get_context("spawn")
    rows = []
    print(
        f"deadline bench: {a.jobs}-job trace, load {a.load}, type {a.jtype}, comm {a.comm}, 16x8x4, "
        f"median of {a.repeat} fresh processes"
    )
    print(
        f"{'strategy':<16}{'sim s':>8}{'min s':>8}{'events':>8}{'events/s':>10}{'RSS MB':>8}{'accepted':>9}"
        f"{'target':>8}"
    )
    for s in a.strategies:
        runs = []
        for _ in range(a.repeat):
            with ctx.Pool(1) as pool:
                runs.append(pool.apply(_one, (s, a.load, a.jtype, a.comm, a.jobs, a.backend)))
        sim = statistics.median(r["sim_s"] for r in runs)
        ev = runs[0]["events"]
        row = {
            "strategy": s,
            "sim_s_median": sim,
            "sim_s_min": min(r["sim_s"] for r in runs),
            "sim_s_all": [r["sim_s"] for r in runs],
            "trace_s": statistics.median(r["trace_s"] for r in runs),
            "machine_s": statistics.median(r["machine_s"] for r in runs),
            "events": ev,
            "events_per_s": ev / sim if sim > 0 else 0.0,
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            "accepted": runs[0]["accepted"],
            "meets_2s": sim <= 2.0,
            "backend": runs[0]["backend"],
        }
        rows.append(row)
        print(
            f"{s:<16}{sim:>8.2f}{row['sim_s_min']:>8.2f}{ev:>8}{row['events_per_s']:>10.0f}"
            f"{row['peak_rss_mb']:>8.0f}{row['accepted']:>9}{'ok' if row['meets_2s'] else 'MISSED':>8}"
        )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "load": a.load,
                    "type": a.jtype,
                    "comm": a.comm,
                    "jobs": a.jobs,
                    "repeat": a.repeat,
                    "results": rows,
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
