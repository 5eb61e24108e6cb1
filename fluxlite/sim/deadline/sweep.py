"""Sweeps: strategies x loads x types x communication styles x traces, one CSV row per run.

A run is identified by its key ``(strategy, load, type, comm, trace)``; the
trace itself is a pure function of ``(seed, load, type, trace)`` (so every
strategy and style sees the same jobs: paired comparisons).  The CSV is
appended to as runs finish; a sweep started again with the same file skips
every key already in it (**resumable**), and a row is only written once
its run is complete, so an interrupted sweep loses at most the runs in
flight.

Runs fan out over local processes (:class:`concurrent.futures.ProcessPoolExecutor`)
or, with ``scheduler="tcp://host:port"``, over a Dask distributed cluster
(``distributed.Client(scheduler)``); each run is one task calling
:func:`run_one`, which is deterministic, so both give the same rows
(except the wall-clock columns).
"""

from __future__ import annotations

import csv
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fluxlite.errors import InputError

__all__ = ["COLUMNS", "KEY", "RunSpec", "done_keys", "plan", "run_one", "sweep", "trace_seed"]

KEY: tuple[str, ...] = ("strategy", "load", "type", "comm", "trace")
COLUMNS: tuple[str, ...] = (
    *KEY,
    "jobs",
    "accepted",
    "rejected",
    "cancelled",
    "completed",
    "walltime_kills",
    "utilization",
    "compactness",
    "oversubscribed",
    "makespan",
    "events",
    "wall_seconds",
    "machine",
    "seed",
    "backend",
)
#: columns that depend on the machine the run happened on, not on the simulation
WALL_COLUMNS = frozenset({"wall_seconds"})


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs (picklable: it travels to worker processes and Dask workers)."""

    strategy: str
    load: str
    type: str
    comm: str
    trace: int
    jobs: int = 1000
    seed: int = 0
    width: int = 16
    height: int = 8
    cores: int = 4
    torus: bool = False
    swf: str | None = None
    #: who chooses nodes: grid (the engine's grid allocators), interim, or auto
    backend: str = "auto"

    @property
    def key(self) -> tuple[str, ...]:
        return (self.strategy, self.load, self.type, self.comm, str(self.trace))

    @property
    def machine(self) -> str:
        return f"{self.width}x{self.height}x{self.cores}" + ("-torus" if self.torus else "")


def trace_seed(seed: int, load: str, jtype: str, trace: int) -> int:
    """The seed of a trace: the same for every strategy and communication style."""
    return zlib.crc32(f"{seed}:{load}:{jtype}:{trace}".encode())


def make_jobs(spec: RunSpec) -> list[Any]:
    from fluxlite.sim.deadline.workload import from_swf, lublin_trace

    s = trace_seed(spec.seed, spec.load, spec.type, spec.trace)
    cores = spec.width * spec.height * spec.cores
    if spec.swf:
        jobs = from_swf(spec.swf, spec.type, s, cores=cores, cores_per_node=spec.cores, limit=spec.jobs)
        return _rescale_load(jobs, spec.load)
    return lublin_trace(spec.jobs, spec.load, spec.type, s, cores=cores, cores_per_node=spec.cores)


def _rescale_load(jobs: list[Any], load: str) -> list[Any]:
    """An SWF trace at the sweep's load: inter-arrival times rescaled to the load's mean."""
    import dataclasses

    from fluxlite.sim.deadline.workload import LOADS

    if len(jobs) < 2:
        return jobs
    span = jobs[-1].submit - jobs[0].submit
    if span <= 0:
        return jobs
    scale = LOADS[load] * (len(jobs) - 1) / span
    t0 = jobs[0].submit
    out = []
    for j in jobs:
        sub = int(t0 + (j.submit - t0) * scale)
        shift = sub - j.submit
        out.append(
            dataclasses.replace(
                j, submit=sub, earliest_start=j.earliest_start + shift, deadline=j.deadline + shift
            )
        )
    return out


def run_one(spec: RunSpec) -> dict[str, Any]:
    """Simulate one configuration and return its CSV row."""
    from fluxlite.sim.deadline.sim import simulate

    jobs = make_jobs(spec)
    from fluxlite.sim.deadline.placement import Machine

    m = Machine(spec.width, spec.height, spec.cores, spec.torus, strategy=spec.strategy, backend=spec.backend)
    res = simulate(jobs, spec.strategy, spec.comm, machine=m)
    d = res.summary()
    row = {k: d[k] for k in COLUMNS if k in d}
    row.update(
        strategy=spec.strategy,
        load=spec.load,
        type=spec.type,
        comm=spec.comm,
        trace=spec.trace,
        machine=spec.machine,
        seed=trace_seed(spec.seed, spec.load, spec.type, spec.trace),
        backend=m.backend,
    )
    row["utilization"] = round(float(row["utilization"]), 6)
    row["compactness"] = round(float(row["compactness"]), 3)
    row["wall_seconds"] = round(float(row["wall_seconds"]), 3)
    return row


def plan(
    strategies: Iterable[str],
    loads: Iterable[str],
    types: Iterable[str],
    comms: Iterable[str],
    traces: int,
    **common: Any,
) -> list[RunSpec]:
    """Every run of the sweep, trace-major (so partial sweeps cover every configuration evenly)."""
    out = []
    for t in range(traces):
        for load in loads:
            for jtype in types:
                for comm in comms:
                    for s in strategies:
                        out.append(RunSpec(s, load, jtype, comm, t, **common))
    return out


def done_keys(path: Path) -> set[tuple[str, ...]]:
    """Keys of the runs already in a sweep CSV (empty if the file does not exist)."""
    if not path.exists() or path.stat().st_size == 0:
        return set()
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [k for k in KEY if k not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}: not a sweep CSV (no column {missing[0]!r})", path=str(path))
        return {tuple(row[k] for k in KEY) for row in reader}


def _local(specs: list[RunSpec], workers: int) -> Iterator[dict[str, Any]]:
    if workers <= 1:
        for s in specs:
            yield run_one(s)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futs = [pool.submit(run_one, s) for s in specs]
        for f in as_completed(futs):
            yield f.result()


def _dask(specs: list[RunSpec], scheduler: str) -> Iterator[dict[str, Any]]:
    from distributed import Client
    from distributed import as_completed as dask_completed

    try:
        client = Client(scheduler, timeout=30)
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
    try:
        futs = client.map(run_one, specs, pure=False)
        for f in dask_completed(futs):
            yield f.result()
    finally:
        client.close()


def sweep(
    specs: list[RunSpec],
    out: Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, int]:
    """Run every spec whose key is not yet in ``out``, appending one row per finished run.

    ``progress(done, total)`` is called after each run.  Returns counts
    (``planned``, ``skipped``, ``ran``).
    """
    done = done_keys(out)
    todo = [s for s in specs if s.key not in done]
    skipped = len(specs) - len(todo)
    new_file = not out.exists() or out.stat().st_size == 0
    out.parent.mkdir(parents=True, exist_ok=True)
    ran = 0
    if progress:
        progress(0, len(todo))
    if not todo:
        return {"planned": len(specs), "skipped": skipped, "ran": 0}
    gen = _dask(todo, scheduler) if scheduler else _local(todo, workers or os.cpu_count() or 1)
    fields = list(COLUMNS)
    if not new_file:  # append in the file's own column order (an older file may lack new columns)
        with out.open(newline="") as fh:
            fields = next(csv.reader(fh))
    with out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        if new_file:
            w.writeheader()
            fh.flush()
        for row in gen:
            w.writerow(row)
            fh.flush()
            ran += 1
            if progress:
                progress(ran, len(todo))
    return {"planned": len(specs), "skipped": skipped, "ran": ran}
