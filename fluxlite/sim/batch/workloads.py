"""Workloads of the batch simulator: ESP (static, dynamic, malleable), the power scenario, SWF.

Every workload is a list of :class:`SimJob` (a queue :class:`Job` plus its
performance model and, for evolving jobs, when it asks for more) and the
machine it runs on.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fluxlite.errors import InputError
from fluxlite.queue import Job
from fluxlite.queue.malleable import PowerCorridor, allowed_sizes
from fluxlite.sim.batch.model import ESP_SIGMA, SpeedupModel, TwoSpeedModel

__all__ = [
    "ESP_TYPES",
    "SimJob",
    "Workload",
    "esp",
    "esp_dynamic",
    "esp_malleable",
    "power20",
    "swf_workload",
]

#: type -> (fraction of the machine, count, static time s, constraint for the malleable study)
ESP_TYPES: dict[str, tuple[float, int, int, str]] = {
    "A": (0.03125, 75, 267, "none"), "B": (0.06250, 9, 322, "pof2"), "C": (0.50000, 3, 534, "none"),
    "D": (0.25000, 3, 616, "even"), "E": (0.50000, 3, 315, "none"), "F": (0.06250, 9, 1846, "pof2"),
    "G": (0.12500, 6, 1334, "even"), "H": (0.15625, 6, 1067, "odd"), "I": (0.03125, 24, 1432, "none"),
    "J": (0.06250, 24, 725, "pof2"), "K": (0.09375, 15, 487, "none"), "L": (0.12500, 36, 366, "even"),
    "M": (0.25000, 15, 187, "none"), "Z": (1.00000, 2, 100, "none"),
}  # fmt: skip
#: dynamic execution times of the evolving types (4 more cores granted)
ESP_DYNAMIC_TIMES = {"F": 1230, "G": 1067, "H": 896, "I": 716, "J": 483}
Z_PRIORITY = 1_000_000


@dataclass
class SimJob:
    job: Job
    model: Any
    runtime: float
    #: evolving jobs: fractions of the static time at which to ask, and how much
    dyn_at: tuple[float, ...] = ()
    dyn_count: int = 0


@dataclass
class Workload:
    name: str
    nodes: int
    cores_per_node: int
    unit: str
    jobs: list[SimJob]
    corridor: PowerCorridor | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def _round(x: float) -> int:
    return max(1, math.floor(x + 0.5))


def _esp_order(seed: int) -> list[str]:
    types = [t for t, (_f, n, _t, _c) in ESP_TYPES.items() if t != "Z" for _ in range(n)]
    random.Random(seed).shuffle(types)
    return types


def _esp_submits(n: int) -> list[int]:
    """First 50 at 0, then one every 30 s."""
    return [0 if i < 50 else (i - 49) * 30 for i in range(n)]


def esp(nodes: int = 32, seed: int = 1, unit: str = "node", cores_per_node: int = 1) -> Workload:
    """230 ESP jobs of 14 types on ``nodes`` nodes (rigid)."""
    cap = nodes if unit == "node" else nodes * cores_per_node
    order = _esp_order(seed)
    submits = _esp_submits(len(order))
    jobs = []
    for i, (t, s) in enumerate(zip(order, submits)):
        frac, _n, secs, _c = ESP_TYPES[t]
        size = _round(frac * cap)
        jobs.append(
            SimJob(
                Job(i + 1, size, secs, submit=s, unit=unit, user=f"u{t}", kind=t),
                SpeedupModel(secs, size),
                secs,
            )
        )
    zt = submits[-1] + 1800
    for _k in range(2):
        jid = len(jobs) + 1
        job = Job(
            jid, cap, 100, submit=zt, unit=unit, user="uZ", kind="Z", priority=Z_PRIORITY, hold_backfill=True
        )
        jobs.append(SimJob(job, SpeedupModel(100, cap), 100))
    return Workload("esp", nodes, cores_per_node, unit, jobs, notes={"seed": seed})


def esp_dynamic(seed: int = 1, evolving: bool = True) -> Workload:
    """Dynamic ESP: 15 nodes x 8 cores, sizes in cores; F..J evolving (one user), 4 more cores at 16% and 25%."""
    w = esp(nodes=15, seed=seed, unit="core", cores_per_node=8)
    w.name = "esp-dynamic"
    for sj in w.jobs:
        t = sj.job.kind
        if t in ESP_DYNAMIC_TIMES:
            sj.job.user = "evolver"
            sj.job.evolving = evolving
            if evolving:
                sj.model = TwoSpeedModel(ESP_TYPES[t][2], ESP_DYNAMIC_TIMES[t], sj.job.size)
                sj.dyn_at = (0.16, 0.25)
                sj.dyn_count = 4
    return w


def esp_malleable(share: float = 0.5, seed: int = 1, walltime_factor: float = 1.5) -> Workload:
    """Malleable ESP on 32 nodes: ``share`` of the non-Z jobs malleable, min/max by their constraint."""
    if not 0.0 <= share <= 1.0:
        raise InputError(f"malleable share must be in [0, 1], got {share}")
    w = esp(nodes=32, seed=seed)
    w.name = "esp-malleable"
    cands = [sj for sj in w.jobs if sj.job.kind != "Z"]
    picked = set(random.Random(seed + 7).sample(range(len(cands)), round(share * len(cands))))
    for i, sj in enumerate(cands):
        if i not in picked:
            continue
        t = sj.job.kind
        cons = ESP_TYPES[t][3]
        sizes = allowed_sizes(1, 32, cons)
        job = sj.job
        job.malleable = True
        job.constraint = cons
        job.min_size, job.max_size = sizes[0], sizes[-1]
        if job.size not in sizes:  # start size must be allowed: the nearest allowed one
            job.size = min(sizes, key=lambda n: abs(n - job.size))
        sj.model = SpeedupModel(ESP_TYPES[t][2], job.size, ESP_SIGMA[t])
        sj.runtime = sj.model.time(job.size)
        job.walltime = math.ceil(sj.runtime * walltime_factor)
        job.mtct = sj.model.mtct(job.size)
    w.notes["share"] = share
    return w


def power20(seed: int = 1) -> Workload:
    """The power-corridor scenario: 14 nodes, 20 jobs alternating pi (170 W/node) and heat (250 W/node)."""
    rng = random.Random(seed)
    jobs = []
    for i in range(20):
        pi = i % 2 == 0
        size = rng.randint(1, 4)
        watts = 170.0 if pi else 250.0
        model = SpeedupModel(150.0 if pi else 200.0, size, 0.01 if pi else 0.08)
        wall = math.ceil(model.time(1)) + 60
        job = Job(
            i + 1, size, wall, submit=2 * i, kind="pi" if pi else "heat", user=f"u{i % 2}",
            malleable=True, min_size=1, max_size=14, pmin=watts, pmax=watts,
        )  # fmt: skip
        job.mtct = model.mtct(size)
        jobs.append(SimJob(job, model, model.time(size)))
    cor = PowerCorridor([(0, 1700.0, 2500.0), (200, 1000.0, 1700.0), (500, 2500.0, 3500.0)], idle_w=71.0)
    return Workload("power20", 14, 1, "node", jobs, corridor=cor, notes={"seed": seed})


def swf_workload(
    path: str | Path, nodes: int | None = None, cores_per_node: int = 1, limit: int | None = None
) -> Workload:
    """Jobs of an SWF trace: size = ceil(procs / cores_per_node) nodes, walltime = requested (else run) time."""
    from fluxlite.sim.swf import iter_swf, read_swf

    trace = read_swf(path)
    n = nodes or trace.max_nodes or (trace.max_procs and math.ceil(trace.max_procs / cores_per_node))
    if not n:
        raise InputError(f"{path}: no MaxNodes/MaxProcs in the header: give --nodes")
    _ = iter_swf
    jobs = []
    t0 = None
    for sj in trace.jobs:
        if sj.run_time <= 0 or sj.procs <= 0 or sj.submit_time < 0:
            continue
        t0 = sj.submit_time if t0 is None else t0
        size = min(n, math.ceil(sj.procs / cores_per_node))
        run = max(1, sj.run_time)
        wall = max(run, sj.walltime if sj.walltime > 0 else run)
        job = Job(len(jobs) + 1, size, wall, submit=sj.submit_time - t0, user=f"u{sj.user_id}", kind="swf")
        jobs.append(SimJob(job, SpeedupModel(run, size), run))
        if limit and len(jobs) >= limit:
            break
    return Workload("swf", n, cores_per_node, "node", jobs, notes={"trace": str(path)})


def synthetic_swf(
    path: str | Path, jobs: int = 10000, nodes: int = 1024, seed: int = 1, load: float = 0.9
) -> None:
    """Write a synthetic SWF trace (log-uniform sizes, log-normal run times, Poisson arrivals)."""
    from fluxlite.sim.swf import SwfJob, SwfTrace, write_swf

    rng = random.Random(seed)
    out = []
    sizes, runs = [], []
    for _ in range(jobs):
        sizes.append(min(nodes, 2 ** rng.randint(0, int(math.log2(nodes)) - 2) + rng.randint(0, 3)))
        runs.append(max(10, int(rng.lognormvariate(6.5, 1.2))))
    mean_work = sum(s * r for s, r in zip(sizes, runs)) / jobs
    gap = mean_work / (nodes * load)
    t = 0.0
    for i in range(jobs):
        t += rng.expovariate(1.0 / gap)
        req = int(runs[i] * rng.uniform(1.0, 2.0))
        out.append(
            SwfJob(i + 1, int(t), -1, runs[i], sizes[i], -1, -1, sizes[i], req, -1, 1, rng.randint(1, 50))
        )
    write_swf(SwfTrace(out, header={"MaxNodes": nodes, "MaxProcs": nodes}), path)


WORKLOADS = ("esp", "esp-dynamic", "esp-malleable", "power20", "swf")
