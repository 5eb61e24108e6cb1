"""``fluxlite bench grid``: cost of each grid operation on the engine (medians, in microseconds).

A seeded random stream of deadline jobs (sizes 1..32 nodes, runtimes
100..3000 s, deadline slack x3) goes through ``allocate_deadline`` with each
static allocator, finished jobs are cancelled; then a stream of leak starts,
forks, joins and cancels runs with each leak strategy.  Every timing is one
engine call (choice of nodes and allocation through the planner and the
aggregates together).  ``--json FILE`` writes the table for scripts.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "run_leak", "run_static"]


def run_static(policy: str, width: int, height: int, cores: int, jobs: int, seed: int) -> dict[str, Any]:
    from fluxlite.api import Engine
    from fluxlite.errors import DeadlineError
    from fluxlite.grid import generate_grid

    eng = Engine(generate_grid(width, height, cores), policy=policy)
    rnd = random.Random(seed)
    acc: list[float] = []
    rej: list[float] = []
    can: list[float] = []
    live: list[tuple[int, int]] = []
    now = 0
    sizes = [s for s in (1, 2, 4, 8, 16, 32) if s <= width * height]
    t_all = time.perf_counter()
    for _ in range(jobs):
        now += rnd.randint(0, 300)
        keep = []
        for jid, end in live:
            if end <= now:
                t = time.perf_counter()
                eng.cancel(jid)
                can.append(time.perf_counter() - t)
            else:
                keep.append((jid, end))
        live = keep
        k = rnd.choice(sizes)
        d = rnd.randint(100, 3000)
        t = time.perf_counter()
        try:
            r = eng.allocate_deadline(k, now, now + 3 * d, now=now, duration=d)
        except DeadlineError:
            rej.append(time.perf_counter() - t)
            continue
        acc.append(time.perf_counter() - t)
        live.append((r.jobid, r.at + d))
    total = time.perf_counter() - t_all

    def med(xs: list[float]) -> float:
        return round(statistics.median(xs) * 1e6, 1) if xs else 0.0

    return {
        "what": policy,
        "accepted": len(acc),
        "rejected": len(rej),
        "allocate_us": med(acc),
        "reject_us": med(rej),
        "cancel_us": med(can),
        "total_s": round(total, 3),
    }


def run_leak(strategy: str, width: int, height: int, cores: int, ops: int, seed: int) -> dict[str, Any]:
    from fluxlite.api import Engine
    from fluxlite.errors import BusyError
    from fluxlite.grid import generate_grid

    eng = Engine(generate_grid(width, height, cores))
    rnd = random.Random(seed)
    ts: dict[str, list[float]] = {"start": [], "fork": [], "join": [], "cancel": []}
    t_all = time.perf_counter()
    for now in range(1, ops + 1):
        jobs = list(eng.leak_jobs.values())
        op = rnd.random()
        if op < 0.2 or not jobs:
            t = time.perf_counter()
            with contextlib.suppress(BusyError):
                eng.leak_start(rnd.randint(1, 8), strategy, now=now, duration=100000)
            ts["start"].append(time.perf_counter() - t)
        elif op < 0.6:
            job = rnd.choice(jobs)
            parent = rnd.choice(job.procs).node if job.procs else None
            t = time.perf_counter()
            with contextlib.suppress(BusyError):
                eng.grow(job.jobid, None, strategy=strategy, parent=parent, now=now)
            ts["fork"].append(time.perf_counter() - t)
        elif op < 0.95:
            job = rnd.choice(jobs)
            if job.procs:
                proc = rnd.choice(job.procs)
                t = time.perf_counter()
                eng.leak_join(job.jobid, proc)
                ts["join"].append(time.perf_counter() - t)
        else:
            job = rnd.choice(jobs)
            t = time.perf_counter()
            eng.cancel(job.jobid)
            ts["cancel"].append(time.perf_counter() - t)
    total = time.perf_counter() - t_all
    out: dict[str, Any] = {"what": strategy}
    for k, xs in ts.items():
        out[f"{k}_us"] = round(statistics.median(xs) * 1e6, 1) if xs else 0.0
    out["total_s"] = round(total, 3)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from fluxlite.errors import FluxliteError
    from fluxlite.grid import parse_grid_size

    p = argparse.ArgumentParser(
        prog="fluxlite bench grid",
        description="Median cost of grid allocations, cancels, leak starts, forks and joins on the engine.",
    )
    p.add_argument("--grid", default="16x8", metavar="WxH", help="machine size (default 16x8)")
    p.add_argument("--cores", type=int, default=4, help="cores per node (default 4)")
    p.add_argument("--jobs", type=int, default=1000, help="deadline jobs per static allocator (default 1000)")
    p.add_argument("--ops", type=int, default=2000, help="leak operations per strategy (default 2000)")
    p.add_argument("--seed", type=int, default=1, help="seed of the generated requests (default 1)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = p.parse_args(argv)
    try:
        w, h = parse_grid_size(a.grid)
        rows = [run_static(pol, w, h, a.cores, a.jobs, a.seed) for pol in ("hilbert", "manhattan", "count")]
        leak = [run_leak(s, w, h, a.cores, a.ops, a.seed) for s in ("leak", "leak-noncontig")]
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite bench grid: {exc}\n")
        return 1
    out = sys.stdout
    out.write(f"grid {w}x{h}x{a.cores}, {a.jobs} deadline jobs, {a.ops} leak operations (medians, us)\n")
    out.write(
        f"{'allocator':<16}{'accepted':>9}{'rejected':>9}{'allocate':>10}{'reject':>9}{'cancel':>9}{'total s':>9}\n"
    )
    for r in rows:
        out.write(
            f"{r['what']:<16}{r['accepted']:>9}{r['rejected']:>9}{r['allocate_us']:>10}"
            f"{r['reject_us']:>9}{r['cancel_us']:>9}{r['total_s']:>9}\n"
        )
    out.write(f"{'strategy':<16}{'start':>9}{'fork':>9}{'join':>10}{'cancel':>9}{'total s':>9}\n")
    for r in leak:
        out.write(
            f"{r['what']:<16}{r['start_us']:>9}{r['fork_us']:>9}{r['join_us']:>10}{r['cancel_us']:>9}{r['total_s']:>9}\n"
        )
    if a.json:
        import json

        with open(a.json, "w") as f:
            json.dump({"static": rows, "leak": leak, "grid": a.grid, "cores": a.cores}, f, indent=2)
    return 0
