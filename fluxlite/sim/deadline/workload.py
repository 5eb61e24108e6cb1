"""Deadline workloads: the Lublin-Feitelson model (seeded) and SWF traces, extended with deadlines.

The generator is the rigid-job model of U. Lublin and D. G. Feitelson, "The
workload on parallel supercomputers: modeling the characteristics of rigid
jobs", JPDC 63(11), 2003, with the published parameters of the whole
(typeless) sample, as in the authors' ``lublin99`` generator:

* size: serial with probability 0.244; otherwise ``2**u`` with ``u`` from a
  two-stage uniform on ``[0.8, UMED]`` (probability 0.86) or ``[UMED, UHI]``,
  ``UHI = log2(machine cores)`` and ``UMED = UHI - 2.5`` (the default
  4.5 for 128 processors); rounded to a power of two with probability 0.576;
* runtime: ``exp`` of a hyper-gamma, ``Gamma(4.2, 0.94)`` with probability
  ``p = -0.0054 * size + 0.78`` (clipped to [0, 1]), else ``Gamma(312, 0.03)``
  (shape, scale), redrawn above ``max_runtime``;
* arrivals: ``exp(Gamma(10.2303 * 1.0225, 0.4871))`` seconds worth of
  "points" paid to 48 half-hour buckets weighted by the daily cycle
  ``Gamma(8.1737, 3.9631)`` (shifted so the day starts at bucket 11).

Extensions for the deadline study (journal = ``deadline-static-vs-leak-journal.txt``,
each choice with its source; ``examples/experiments/deadline/`` has the ablations):

* **load** (journal section 5): the *submission* times are rescaled so that
  their mean gap is the *inter-arrival factor* in seconds: ``normal`` 1500,
  ``heavy`` 150, ``very-heavy`` 1 ("on average, a new job request is
  submitted to the RMS every second"); the daily cycle stays;
* **earliest start** (:data:`LAG_MODELS`): the journal gives no rule, but
  says the traces "provide 1000 job requests over a simulation time of about
  65 days for the heavy and very heavy load configurations and about 74 days
  for the normal load" (section 5).  With one request a second, 65 days of
  simulated time can only come from start times far after submission:
  ``uniform-63d`` (the default) draws ``earliest_start = submit + U(0, 63
  days)``, which makes a very heavy trace last about 65 days (63 days of
  start times plus the runtimes and slack of the last jobs); heavy and
  normal then last about 65 and 82 days (the paper: 65 and 74; no single
  window matches all three).  The distribution's shape is not in the paper
  (uniform: the least assumption).  Ablations: ``half-1h`` (half the jobs
  at submission, the rest up to an hour later: this code's earlier choice)
  and ``none`` (start at submission);
* **type**: runtime-behaviour type 0..3, one for all jobs or uniformly mixed
  ("a mixture of the types was used according to a uniform distribution",
  section 5);
* **runtime and deadline**: the model's runtime is the job's runtime on a
  compact partition of an empty machine ("the jobs are adapted to be able to
  run the program using a compact partition of an empty HPC system at the
  given runtime", section 5; the program model is calibrated to it,
  :mod:`fluxlite.sim.deadline.program`).  The static allocators reserve
  ``[t_start, t_start + t_runtime]`` (figures 6 and 8): the requested time
  is the runtime (``walltime_margin`` 0; 0.25 is an ablation).  The deadline
  is ``earliest_start + requested * (1 + slack)`` with ``slack = importance *
  (0.25 + 0.25 * log2(cores))``, ``importance`` uniform in [0.5, 1.5]: the
  journal says only that the slack "is often related to the importance and
  the size of the job" (section 5), so the form and constants are this
  code's choice; every job fits before its deadline on a compact partition
  of an empty machine.

SWF traces get the same extensions (:func:`from_swf`): the extension columns
``type earliest_start deadline`` when the file has them, generated ones
otherwise.  :func:`to_swf` writes a trace back with those columns.

Everything is a pure function of the seed (numpy ``default_rng``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import IO

import numpy as np

from fluxlite.errors import InputError
from fluxlite.sim.swf import SwfJob, SwfTrace, read_swf, write_swf

__all__ = [
    "LAG_MODELS",
    "LOADS",
    "TYPES",
    "DeadlineJob",
    "from_swf",
    "lublin_trace",
    "parse_type",
    "to_swf",
]

#: load name -> inter-arrival factor (mean seconds between submissions)
LOADS: dict[str, float] = {"normal": 1500.0, "heavy": 150.0, "very-heavy": 1.0}
#: how far after its submission a job may start (see the module docstring): name -> (share of jobs
#: with a lag, largest lag in seconds)
LAG_MODELS: dict[str, tuple[float, int]] = {
    "uniform-63d": (1.0, 63 * 86400),
    "half-1h": (0.5, 3600),
    "none": (0.0, 0),
}
DEFAULT_LAG = "uniform-63d"
#: requested runtime over runtime, minus one (figures 6 and 8 reserve t_runtime: 0)
DEFAULT_MARGIN = 0.0
#: workload mixes: one runtime-behaviour type, or the four mixed uniformly
TYPES: tuple[str, ...] = ("0", "1", "2", "3", "uniform")

# Lublin & Feitelson 2003, whole-sample ("typeless") parameters (lublin99).
SERIAL_PROB = 0.244
POW2_PROB = 0.576
ULOW = 0.8
UMED_BELOW_UHI = 2.5  # UMED = UHI - 2.5 (4.5 for a 128-processor machine)
UPROB = 0.86
A1, B1, A2, B2 = 4.2, 0.94, 312.0, 0.03
PA, PB = -0.0054, 0.78
AARR, BARR, ARAR = 10.2303, 0.4871, 1.0225
ANUM, BNUM = 8.1737, 3.9631
BUCKETS, SECONDS_IN_BUCKET, CYCLIC_DAY_START = 48, 1800.0, 11


@dataclass(frozen=True, slots=True)
class DeadlineJob:
    """A job of the deadline study (times in integer seconds)."""

    jobid: int
    submit: int
    #: peak number of processes (one process = one core)
    procs: int
    #: seconds on a compact partition of an empty machine
    runtime: int
    #: seconds requested (what a static allocator reserves), >= runtime
    requested: int
    #: runtime-behaviour type 0..3 (spec table)
    type: int
    earliest_start: int
    deadline: int
    #: seed of the job's program (communication partners, fork parents)
    seed: int

    def __post_init__(self) -> None:
        if self.procs < 1 or self.runtime < 1 or self.requested < self.runtime:
            raise InputError("job needs procs >= 1 and requested >= runtime >= 1", jobid=self.jobid)
        if self.type not in (0, 1, 2, 3):
            raise InputError(f"job type must be 0..3, got {self.type}", jobid=self.jobid)
        if not self.submit <= self.earliest_start < self.deadline:
            raise InputError("job needs submit <= earliest_start < deadline", jobid=self.jobid)


def parse_type(t: str | int) -> str:
    """Normalize a workload mix name (``0``..``3`` or ``uniform``)."""
    s = str(t).strip().lower()
    if s not in TYPES:
        raise InputError(f"unknown job type {t!r} (use 0, 1, 2, 3 or uniform)")
    return s


def _gamcdf(x: float, a: float, b: float) -> float:
    from scipy.special import gammainc

    return float(gammainc(a, x / b))


def _bucket_weights() -> list[float]:
    w = [0.0] * BUCKETS
    for i in range(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START):
        w[(i - 1) % BUCKETS] = _gamcdf(i + 0.5, ANUM, BNUM) - _gamcdf(i - 0.5, ANUM, BNUM)
    mean = sum(w) / BUCKETS
    return [x / mean for x in w]


_WEIGHTS: list[float] | None = None


def bucket_weights() -> list[float]:
    """The arrival process's relative weight of each time bucket of the day (computed once per
    process, read-only)."""
    global _WEIGHTS
    if _WEIGHTS is None:
        _WEIGHTS = _bucket_weights()
    return _WEIGHTS


def _arrivals(rng: np.random.Generator, n: int, max_log: float) -> list[float]:
    """Lublin's arrival process: n arrival times (seconds), daily cycle included."""
    weights = bucket_weights()
    t, bucket, points, reminder = 0.0, 0, 0.0, 0.0
    out = []
    for _ in range(n):
        out.append(t)
        gam = rng.gamma(AARR * ARAR, BARR)
        while gam > max_log:
            gam = rng.gamma(AARR * ARAR, BARR)
        points += math.exp(gam) / SECONDS_IN_BUCKET
        nxt = 0.0
        while points > weights[bucket]:
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            nxt += SECONDS_IN_BUCKET
        new_rem = points / weights[bucket]
        nxt += SECONDS_IN_BUCKET * (new_rem - reminder)
        reminder = new_rem
        t += nxt
    return out


def _size(rng: np.random.Generator, uhi: float) -> int:
    u = rng.random()
    if u <= SERIAL_PROB:
        return 1
    umed = uhi - UMED_BELOW_UHI
    lo, hi = (ULOW, umed) if rng.random() <= UPROB else (umed, uhi)
    par = rng.uniform(lo, hi)
    if u <= SERIAL_PROB + POW2_PROB:
        par = float(int(par + 0.5))
    return int(2.0**par + 0.5)


def _runtime(rng: np.random.Generator, size: int, max_runtime: float) -> int:
    p = min(1.0, max(0.0, PA * size + PB))
    while True:
        a, b = (A1, B1) if rng.random() <= p else (A2, B2)
        r = math.exp(rng.gamma(a, b))
        if r <= max_runtime:
            return max(1, int(r))


def extend(
    rng: np.random.Generator,
    jobid: int,
    submit: int,
    procs: int,
    runtime: int,
    jtype: int,
    *,
    cores_per_node: int = 4,
    walltime_margin: float = DEFAULT_MARGIN,
    lag_model: str = DEFAULT_LAG,
) -> DeadlineJob:
    """Add type, earliest start, requested runtime and deadline to a rigid job (see module docstring)."""
    share, max_lag = _lag(lag_model)
    lag = 0 if rng.random() < 1.0 - share else int(rng.uniform(0, max_lag))
    earliest = submit + lag
    requested = max(runtime, math.ceil(runtime * (1.0 + walltime_margin)))
    nodes = max(1, math.ceil(procs / cores_per_node))
    importance = rng.uniform(0.5, 1.5)
    slack = importance * (0.25 + 0.25 * math.log2(nodes * cores_per_node))
    deadline = earliest + math.ceil(requested * (1.0 + slack))
    return DeadlineJob(
        jobid=jobid,
        submit=submit,
        procs=procs,
        runtime=runtime,
        requested=requested,
        type=jtype,
        earliest_start=earliest,
        deadline=deadline,
        seed=int(rng.integers(0, 2**31 - 1)),
    )


def _lag(name: str) -> tuple[float, int]:
    try:
        return LAG_MODELS[name]
    except KeyError:
        raise InputError(f"unknown lag model {name!r} (use {', '.join(LAG_MODELS)})") from None


def _pick_type(rng: np.random.Generator, mix: str) -> int:
    return int(rng.integers(0, 4)) if mix == "uniform" else int(mix)


def lublin_trace(
    jobs: int = 1000,
    load: str | float = "normal",
    mix: str | int = "uniform",
    seed: int = 0,
    *,
    cores: int = 512,
    cores_per_node: int = 4,
    max_runtime: float = 36 * 3600.0,
    walltime_margin: float = DEFAULT_MARGIN,
    lag_model: str = DEFAULT_LAG,
) -> list[DeadlineJob]:
    """A seeded Lublin-Feitelson trace of ``jobs`` deadline jobs for a machine of ``cores`` cores."""
    if jobs < 1:
        raise InputError(f"a trace needs at least one job, got {jobs}")
    if cores < 1:
        raise InputError(f"machine needs at least one core, got {cores}")
    factor = LOADS[load] if isinstance(load, str) and load in LOADS else None
    if factor is None:
        try:
            factor = float(load)
        except ValueError:
            raise InputError(f"unknown load {load!r} (use normal, heavy, very-heavy or seconds)") from None
    if factor <= 0:
        raise InputError(f"inter-arrival factor must be > 0, got {factor}")
    mix = parse_type(mix)
    _lag(lag_model)
    if walltime_margin < 0:
        raise InputError(f"walltime margin must be >= 0, got {walltime_margin}")
    rng = np.random.default_rng(seed)
    uhi = math.log2(cores)
    arr = _arrivals(rng, jobs, max_log=math.log(2 * 86400.0))
    gaps = np.diff(np.asarray(arr)) if jobs > 1 else np.zeros(0)
    mean_gap = float(gaps.mean()) if len(gaps) and gaps.mean() > 0 else 1.0
    scale = factor / mean_gap
    out = []
    for i in range(jobs):
        submit = int(arr[i] * scale)
        procs = min(cores, _size(rng, uhi))
        runtime = _runtime(rng, procs, max_runtime)
        jtype = _pick_type(rng, mix)
        out.append(
            extend(
                rng,
                i + 1,
                submit,
                procs,
                runtime,
                jtype,
                cores_per_node=cores_per_node,
                walltime_margin=walltime_margin,
                lag_model=lag_model,
            )
        )
    return out


EXTENSIONS = "type earliest_start deadline"


def from_swf(
    src: str | os.PathLike[str] | IO[str],
    mix: str | int = "uniform",
    seed: int = 0,
    *,
    cores: int = 512,
    cores_per_node: int = 4,
    walltime_margin: float = DEFAULT_MARGIN,
    lag_model: str = DEFAULT_LAG,
    limit: int | None = None,
) -> list[DeadlineJob]:
    """Deadline jobs from an SWF file: its own extension columns when present, else generated ones.

    Size is the requested (else allocated) processors, capped at ``cores``;
    runtime is the run time (else the requested time).  Jobs without a size
    or runtime are skipped, as archive users do with cancelled entries.
    """
    trace = read_swf(src)
    mix = parse_type(mix)
    rng = np.random.default_rng(seed)
    has_ext = trace.extensions[:3] == tuple(EXTENSIONS.split())
    out: list[DeadlineJob] = []
    for j in trace.jobs:
        procs = j.procs
        runtime = j.run_time if j.run_time > 0 else j.requested_time
        if procs <= 0 or runtime <= 0:
            continue
        procs = min(procs, cores)
        if has_ext and len(j.extra) >= 3:
            requested = max(runtime, j.requested_time)
            dj = DeadlineJob(
                jobid=j.job_id,
                submit=j.submit_time,
                procs=procs,
                runtime=runtime,
                requested=requested,
                type=int(j.extra[0]),
                earliest_start=int(j.extra[1]),
                deadline=int(j.extra[2]),
                seed=int(rng.integers(0, 2**31 - 1)),
            )
        else:
            dj = extend(
                rng,
                j.job_id,
                j.submit_time,
                procs,
                runtime,
                _pick_type(rng, mix),
                cores_per_node=cores_per_node,
                walltime_margin=walltime_margin,
                lag_model=lag_model,
            )
        out.append(dj)
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise InputError("the SWF trace has no job with a size and a runtime")
    return out


def to_swf(jobs: list[DeadlineJob], dest: str | os.PathLike[str] | IO[str], cores: int = 512) -> None:
    """Write deadline jobs as SWF with the ``type earliest_start deadline`` extension columns."""
    trace = SwfTrace(
        jobs=[
            SwfJob(
                job_id=j.jobid,
                submit_time=j.submit,
                run_time=j.runtime,
                allocated_procs=j.procs,
                requested_procs=j.procs,
                requested_time=j.requested,
                status=1,
                extra=(j.type, j.earliest_start, j.deadline),
            )
            for j in jobs
        ],
        header={
            "Version": "2.2",
            "Note": "fluxlite sim deadline: Lublin-Feitelson model with deadline extensions",
            "MaxProcs": cores,
            "Extensions": EXTENSIONS,
        },
    )
    write_swf(trace, dest)
