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

__all__ = ["main", "run_bench"]


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
    from fluxlite.sim.deadline.cli import main as sim_main

    return sim_main(["bench", *(argv or [])])
