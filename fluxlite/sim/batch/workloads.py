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

#: type -> (fraction of the machine, count, static time s, constraint for the malleable study):
#: the malleable paper's Table I (ESP's own fractions); the evolving paper's Table I differs
#: for H (0.15820) and K (0.09570): see ``EVOLVING_FRACTIONS``
ESP_TYPES: dict[str, tuple[float, int, int, str]] = {
    "A": (0.03125, 75, 267, "none"), "B": (0.06250, 9, 322, "pof2"), "C": (0.50000, 3, 534, "none"),
    "D": (0.25000, 3, 616, "even"), "E": (0.50000, 3, 315, "none"), "F": (0.06250, 9, 1846, "pof2"),
    "G": (0.12500, 6, 1334, "even"), "H": (0.15625, 6, 1067, "odd"), "I": (0.03125, 24, 1432, "none"),
    "J": (0.06250, 24, 725, "pof2"), "K": (0.09375, 15, 487, "none"), "L": (0.12500, 36, 366, "even"),
    "M": (0.25000, 15, 187, "none"), "Z": (1.00000, 2, 100, "none"),
}  # fmt: skip
#: the evolving-jobs paper's Table I sizes where they differ from ESP_TYPES
EVOLVING_FRACTIONS = {"H": 0.15820, "K": 0.09570}
#: dynamic execution times of the evolving types (4 more cores granted), evolving paper Table I
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


ARRIVALS = ("esp", "fixed")


def _esp_submits(n: int, arrival: str = "esp") -> list[int]:
    """``esp``: the first 50 at 0, then one every 30 s; ``fixed``: one every 30 s from 0."""
    if arrival not in ARRIVALS:
        raise InputError(f"unknown arrival pattern {arrival!r} (known: {', '.join(ARRIVALS)})")
    if arrival == "fixed":
        return [30 * i for i in range(n)]
    return [0 if i < 50 else (i - 49) * 30 for i in range(n)]


def esp(
    nodes: int = 32, seed: int = 1, unit: str = "node", cores_per_node: int = 1, arrival: str = "esp",
    fractions: dict[str, float] | None = None, runtime_factor: float = 1.0,
) -> Workload:  # fmt: skip
    """230 ESP jobs of 14 types on ``nodes`` nodes (rigid).

    ``fractions`` overrides type sizes; ``runtime_factor`` scales every run
    time and walltime (an ablation: real runs take longer than the nominal
    ESP times).
    """
    cap = nodes if unit == "node" else nodes * cores_per_node
    order = _esp_order(seed)
    submits = _esp_submits(len(order), arrival)
    jobs = []
    for i, (t, s) in enumerate(zip(order, submits)):
        frac, _n, secs, _c = ESP_TYPES[t]
        frac = (fractions or {}).get(t, frac)
        secs = max(1, round(secs * runtime_factor))
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
            jid, cap, max(1, round(100 * runtime_factor)), submit=zt, unit=unit, user="uZ", kind="Z", priority=Z_PRIORITY, hold_backfill=True
        )
        jobs.append(SimJob(job, SpeedupModel(job.walltime, cap), job.walltime))
    return Workload("esp", nodes, cores_per_node, unit, jobs, notes={"seed": seed})


DYN_MODELS = ("linear", "det-total")
#: how an evolving-ESP job's cores are requested: ``core`` anywhere (the baseline), ``node`` as whole
#: nodes (Torque ``nodes=ceil(c/8):ppn=8``; a dynamic request of 4 cores then takes one more node)
PLACEMENTS = ("core", "node")


def esp_dynamic(
    seed: int = 1, evolving: bool = True, dyn_model: str = "linear", walltime_factor: float = 1.0,
    runtime_factor: float = 1.0, placement: str = "core",
) -> Workload:  # fmt: skip
    """Dynamic ESP: 15 nodes x 8 cores, sizes in cores; F..J evolving (one user), 4 more cores at 16% and 25%.

    ``dyn_model``: after a grant, ``linear`` runs the remaining work at the
    dynamic speed (the remaining share of DET); ``det-total`` ends the job
    at start + DET (the whole run takes DET).  ``walltime_factor``: the
    requested walltime as a multiple of the static time.  ``placement``:
    ``node`` turns each job's ``c`` cores into ``ceil(c / 8)`` whole nodes
    and a dynamic request into one more node (an ablation; see PLACEMENTS).
    """
    if placement not in PLACEMENTS:
        raise InputError(f"unknown placement {placement!r} (known: {', '.join(PLACEMENTS)})")
    if dyn_model not in DYN_MODELS:
        raise InputError(f"unknown dynamic model {dyn_model!r} (known: {', '.join(DYN_MODELS)})")
    if walltime_factor < 1.0:
        raise InputError(f"walltime factor must be >= 1, got {walltime_factor}")
    w = esp(nodes=15, seed=seed, unit="core", cores_per_node=8, fractions=EVOLVING_FRACTIONS,
            runtime_factor=runtime_factor)  # fmt: skip
    w.name = "esp-dynamic"
    w.notes["dyn_model"] = dyn_model
    if placement == "node":
        w.unit = "node"
        w.notes["placement"] = placement
        for sj in w.jobs:
            sj.job.size = sj.job.min_size = sj.job.max_size = math.ceil(sj.job.size / w.cores_per_node)
            sj.job.unit = "node"
            sj.model = SpeedupModel(sj.runtime, sj.job.size)
    for sj in w.jobs:
        t = sj.job.kind
        if t != "Z":
            sj.job.walltime = math.ceil(sj.runtime * walltime_factor)
        if t in ESP_DYNAMIC_TIMES:
            sj.job.user = "evolver"
            sj.job.evolving = evolving
            if evolving:
                sj.model = TwoSpeedModel(
                    sj.runtime, ESP_DYNAMIC_TIMES[t] * sj.runtime / ESP_TYPES[t][2], sj.job.size
                )
                sj.dyn_at = (0.16, 0.25)
                sj.dyn_count = 4 if placement == "core" else 1
    return w


def esp_malleable(
    share: float = 0.5, seed: int = 1, walltime_factor: float = 1.5, arrival: str = "esp",
    sigma_scale: float = 1.0,
) -> Workload:  # fmt: skip
    """Malleable ESP on 32 nodes: ``share`` of the non-Z jobs malleable, min/max by their constraint.

    ``sigma_scale`` multiplies every type's communication share (an ablation
    of the speed-up model, which the paper does not give).
    """
    if not 0.0 <= share <= 1.0:
        raise InputError(f"malleable share must be in [0, 1], got {share}")
    if walltime_factor < 1.0 or sigma_scale < 0:
        raise InputError("need walltime factor >= 1 and sigma scale >= 0")
    w = esp(nodes=32, seed=seed, arrival=arrival)
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
        sj.model = SpeedupModel(ESP_TYPES[t][2], job.size, min(0.95, ESP_SIGMA[t] * sigma_scale))
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
