"""Cost of one scheduling pass at a given queue depth: ``fluxlite sim batch bench-pass``.

Each pass rebuilds the plan (see :mod:`fluxlite.queue.policies._backfill`):
EASY makes one reservation and tests every other pending job against the
root aggregate; conservative makes a reservation for every pending job.
The setup is the same for every policy and depth: a machine of ``nodes``
whole nodes, all busy with running jobs of random sizes and walltimes
(seeded), then ``depth`` pending jobs (random sizes and walltimes), one
first pass (not timed: it makes the reservations), then, timed, a pass
after an early job end (the plan is rebuilt) and a pass after one more
arrival at the tail (the plan is kept: see ``Queue.new_since_plan``).  The baseline is EASY at depth 100 in the same
run on the same machine: ratios are what carry over between machines.

Each pass is timed twice: wall clock and the process's CPU time (on a
shared, loaded machine the CPU time is the steadier figure).  With
``baseline`` (a git revision, e.g. ``main``) every cell is also run, right
after this code's, by that revision's own ``bench_pass`` in a fresh
interpreter (its pass timed by CPU time), with a time limit per cell: a
cell that does not finish in it is reported with the time it ran.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import time
from typing import Any

from fluxlite.queue import Job

__all__ = ["baseline_cell", "bench_pass"]


def _setup(policy: str, depth: int, nodes: int, seed: int) -> tuple[Any, list[Any]]:
    from fluxlite.api import Engine
    from fluxlite.queue import Queue
    from fluxlite.readers.generate import generate_graph

    rng = random.Random(seed)
    racks = nodes // 32 if nodes >= 128 and nodes % 32 == 0 else 0
    eng = Engine(generate_graph(racks=racks, nodes=32 if racks else nodes, sockets=0, cores=0))
    q = Queue(eng, policy)
    jid = 0
    running = []
    left = nodes
    while left > 0:
        jid += 1
        size = min(left, rng.randint(1, max(1, nodes // 16)))
        left -= size
        running.append(q.submit(Job(jid, size, rng.randint(100, 3600)), 0))
    q.schedule(0)
    for _ in range(depth):
        jid += 1
        q.submit(Job(jid, rng.randint(1, max(1, nodes // 8)), rng.randint(60, 7200)), 0)
    q.schedule(0)  # the first plan
    return q, running


def bench_pass(depths: tuple[int, ...] = (100, 10000), policies: tuple[str, ...] = ("easy", "conservative"),
               nodes: int = 1024, passes: int = 3, seed: int = 1, progress: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """Median seconds per pass for each (policy, depth); one early end before each timed pass."""
    rows = []
    for policy in policies:
        for depth in depths:
            q, running = _setup(policy, depth, nodes, seed)
            times, kept, cpu = [], [], []
            for k in range(passes):
                job = running[k]
                q.complete(job.jobid, 1 + k)  # an early end: the plan is rebuilt
                t, c = time.perf_counter(), time.process_time()
                q.schedule(1 + k)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                q.submit(Job(10**9 + k, 1, 60), 1 + k)  # an arrival at the tail: the plan is kept
                t = time.perf_counter()
                q.schedule(1 + k)
                kept.append(time.perf_counter() - t)
            med = statistics.median(times)
            rows.append({
                "policy": policy, "depth": depth, "nodes": nodes, "passes": passes,
                "median_s_per_pass": med, "ms_per_queued_job": 1000 * med / depth,
                "median_cpu_s_per_pass": statistics.median(cpu),
                "median_s_kept_plan": statistics.median(kept),
                "reservations": sum(1 for j in q.pending if j.resv_at is not None),
            })  # fmt: skip
            if progress:
                r = rows[-1]
                print(f"  {policy:<13} depth {depth:>6}: rebuild {med:9.4f} s per pass (median of {passes}; "
                      f"CPU {r['median_cpu_s_per_pass']:.4f} s), "
                      f"{r['ms_per_queued_job']:.4f} ms per queued job; kept plan {r['median_s_kept_plan']:.4f} s; "
                      f"{r['reservations']} reservations held", flush=True)  # fmt: skip
    base = rows[0]["median_s_per_pass"]
    for r in rows:
        r["ratio_to_first"] = r["median_s_per_pass"] / base if base > 0 else float("nan")
    return rows


# run in the baseline's tree: its own bench_pass for one cell, the pass timed by CPU time
_BASELINE_CODE = """
import json, sys, time, types
import fluxlite.sim.batch.passbench as pb
pb.time = types.SimpleNamespace(perf_counter=time.process_time, process_time=time.process_time)
a = json.loads(sys.argv[1])
rows = pb.bench_pass((a["depth"],), (a["policy"],), nodes=a["nodes"], passes=a["passes"], seed=a["seed"],
                     progress=False)
print(json.dumps(rows[0]))
"""


def baseline_cell(tree: str, policy: str, depth: int, nodes: int, passes: int, limit: float,
                  seed: int = 1) -> dict[str, Any]:  # fmt: skip
    """One (policy, depth) cell measured by the code unpacked under ``tree``; ``limit`` seconds at most.

    Returns its row (``median_s_per_pass`` is CPU time there) or, when it
    did not finish, ``{"timeout_s": limit}``; the process is stopped then.
    """
    args = json.dumps({"policy": policy, "depth": depth, "nodes": nodes, "passes": passes, "seed": seed})
    from fluxlite.revision import run_in_tree

    t = time.perf_counter()
    try:
        return run_in_tree(tree, _BASELINE_CODE, args, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"timeout_s": limit, "ran_s": time.perf_counter() - t}
