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

Stopping (Ctrl-C, ``SIGTERM``, or the parent killed outright) stops every
process the sweep started within a few seconds:

* local workers ignore ``SIGINT`` (a terminal sends it to the whole
  foreground group; the parent decides), die with their parent
  (``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread that sees the parent
  change elsewhere), and are terminated by the parent when it stops: pending
  runs are cancelled, running ones are abandoned;
* on a Dask cluster the pending futures are cancelled and the running tasks
  see a ``distributed.Event`` set by the client and stop at their next check
  (every half second of wall time), so the cluster's workers are free again;
* ``SIGTERM`` is turned into :class:`SweepInterrupted` (a ``KeyboardInterrupt``)
  while a sweep runs, so both signals take the same clean-up path.

A row torn by a hard kill (no final newline) is dropped when the sweep is
started again; its run is redone.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import os
import signal
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fluxlite.errors import InputError

__all__ = [
    "COLUMNS",
    "KEY",
    "RunSpec",
    "SweepInterrupted",
    "done_keys",
    "groups",
    "plan",
    "run_one",
    "sweep",
    "trace_seed",
]

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
    #: modelling choices the paper leaves open (defaults cited in workload.py / sim.py; others = ablations)
    lag: str = "uniform-63d"
    margin: float = 0.0
    comm_model: str = ""
    leak_start: str = "core"
    type2_forks: str = "leak"
    static_shift: str = "later"
    manhattan_growth: str = "free"

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
    """The jobs of ``spec``'s trace (a new list; the jobs are frozen).

    The trace depends only on the fields of :func:`_trace_key`, so the runs
    of one trace (every strategy and communication style: ten runs in a
    trace-major sweep) share one generation per process, from a small cache.
    """
    return list(_cached_trace(_trace_key(spec)))


def _trace_key(spec: RunSpec) -> RunSpec:
    """``spec`` with the fields that do not change the trace set to their defaults."""
    return dataclasses.replace(
        spec,
        strategy="",
        comm="",
        backend="auto",
        comm_model="",
        leak_start="core",
        type2_forks="leak",
        static_shift="later",
        manhattan_growth="free",
        torus=False,
    )


@functools.lru_cache(maxsize=8)
def _cached_trace(spec: RunSpec) -> tuple[Any, ...]:
    return tuple(_generate(spec))


def _generate(spec: RunSpec) -> list[Any]:
    from fluxlite.sim.deadline.workload import from_swf, lublin_trace

    s = trace_seed(spec.seed, spec.load, spec.type, spec.trace)
    cores = spec.width * spec.height * spec.cores
    opts = {"cores_per_node": spec.cores, "walltime_margin": spec.margin, "lag_model": spec.lag}
    if spec.swf:
        jobs = from_swf(spec.swf, spec.type, s, cores=cores, limit=spec.jobs, **opts)  # type: ignore[arg-type]
        return _rescale_load(jobs, spec.load)
    return lublin_trace(spec.jobs, spec.load, spec.type, s, cores=cores, **opts)  # type: ignore[arg-type]


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


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by a signal (``SIGINT`` or ``SIGTERM``); ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = int(signum)


def run_one(spec: RunSpec, should_stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Simulate one configuration and return its CSV row.

    ``should_stop()`` is polled about twice a second of wall time; when it
    says yes the run ends with :class:`fluxlite.sim.deadline.sim.Stopped`.
    """
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.program import parse_comm_model
    from fluxlite.sim.deadline.sim import simulate

    jobs = make_jobs(spec)
    m = Machine(spec.width, spec.height, spec.cores, spec.torus, strategy=spec.strategy, backend=spec.backend)
    res = simulate(
        jobs,
        spec.strategy,
        spec.comm,
        machine=m,
        model=parse_comm_model(spec.comm_model),
        should_stop=should_stop,
        leak_start=spec.leak_start,
        type2_forks=spec.type2_forks,
        static_shift=spec.static_shift,
        manhattan_growth=spec.manhattan_growth,
    )
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


def _die_with_parent(parent: int) -> None:
    """Make this worker process end when ``parent`` does (Linux: at once; elsewhere within a second)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="fluxlite-parent-watch", daemon=True).start()


def _worker_init(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent)


def _stop_pool(pool: ProcessPoolExecutor, grace: float = 2.0) -> None:
    """Cancel what has not started, terminate the workers, wait for them (kill after ``grace``)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1.0)


def _share_key(spec: RunSpec) -> tuple[Any, ...]:
    """What the runs that share a worker's caches have in common: the trace (:func:`_trace_key`)
    and what the jobs' programs depend on besides it (communication style and model, torus)."""
    return (_trace_key(spec), spec.comm, spec.comm_model, spec.torus)


def groups(specs: list[RunSpec]) -> list[list[RunSpec]]:
    """``specs`` in groups of the runs that share one trace and its programs (:func:`_share_key`),
    the groups in the order of their first run, each in the order given.

    A local sweep gives each worker one group at a time: the worker then generates the trace and
    builds its jobs' programs once for the whole group (the five strategies of a trace and
    style), where handing out runs one by one would have both workers build most of them.
    """
    out: dict[tuple[Any, ...], list[RunSpec]] = {}
    for s in specs:
        out.setdefault(_share_key(s), []).append(s)
    return list(out.values())


def _warm_parent() -> None:
    """Import what a run needs (and the workload's weight table) before the workers fork: each
    worker then starts with them instead of importing them again (about 0.5 CPU s a worker)."""
    from fluxlite.sim.deadline import placement, program, sim, workload  # noqa: F401

    workload.bucket_weights()


#: runs handed to a local worker ahead of the one it is running (it starts the next at once)
_AHEAD = 2


def _local(specs: list[RunSpec], workers: int) -> Iterator[dict[str, Any]]:
    """Run ``specs`` on ``workers`` local processes, yielding each row as its run finishes.

    Each worker is a one-process pool and takes a whole group (:func:`groups`) at a time, its runs
    in order; when no group is left, an idle worker takes the last runs still waiting in another
    worker's group, so the sweep's tail is about one run long.
    """
    if workers <= 1:
        for s in specs:
            yield run_one(s)
        return
    _warm_parent()
    todo = deque(groups(specs))
    pending: list[deque[RunSpec]] = [deque() for _ in range(workers)]
    pools = [
        ProcessPoolExecutor(max_workers=1, initializer=_worker_init, initargs=(os.getpid(),))
        for _ in range(workers)
    ]
    running: dict[Future[dict[str, Any]], int] = {}
    finished = False

    def feed(w: int) -> None:
        while sum(1 for x in running.values() if x == w) < _AHEAD:
            if not pending[w]:
                if todo:
                    pending[w].extend(todo.popleft())
                else:  # take over the last waiting run of the worker with the most left
                    other = max(range(workers), key=lambda k: len(pending[k]))
                    if not pending[other]:
                        return
                    pending[w].append(pending[other].pop())
            running[pools[w].submit(run_one, pending[w].popleft())] = w

    try:
        for w in range(workers):
            feed(w)
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for f in done:
                w = running.pop(f)
                row = f.result()
                feed(w)  # before the row goes out: the worker has its next run queued meanwhile
                yield row
        finished = True
    finally:
        for pool in pools:
            if finished:
                pool.shutdown(wait=True)
            else:
                _stop_pool(pool)


def _dask_run(spec: RunSpec, stop_name: str) -> dict[str, Any]:
    """One run on a Dask worker; stops early when the client sets the event ``stop_name``."""
    from distributed import Event

    ev = Event(stop_name)
    return run_one(spec, should_stop=ev.is_set)


def _dask(specs: list[RunSpec], scheduler: str) -> Iterator[dict[str, Any]]:
    from distributed import Client, Event
    from distributed import as_completed as dask_completed

    try:
        client = Client(scheduler, timeout=30)
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
    stop_name = f"fluxlite-sweep-stop-{uuid.uuid4().hex}"
    futs: list[Any] = []
    finished = False
    try:
        futs = client.map(_dask_run, specs, stop_name=stop_name, pure=False)
        for f in dask_completed(futs):
            yield f.result()
        finished = True
    finally:
        if not finished:
            try:
                Event(stop_name, client=client).set()  # running tasks stop at their next check
                client.cancel(futs, force=True)
            except Exception:
                pass
        client.close()


def _repair_tail(path: Path) -> None:
    """Drop a last row torn by a hard kill (a file that does not end with a newline)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        data = fh.read()
        fh.seek(0)
        fh.truncate(data.rfind(b"\n") + 1)


class _TermAsInterrupt:
    """While active (main thread only), ``SIGTERM`` raises :class:`SweepInterrupted` like Ctrl-C."""

    def __enter__(self) -> _TermAsInterrupt:
        self.old: Any = None
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum: int, frame: Any) -> None:
        raise SweepInterrupted(signum)

    def __exit__(self, *exc: object) -> None:
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)


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
    _repair_tail(out)
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
    fields = list(COLUMNS)
    if not new_file:  # append in the file's own column order (an older file may lack new columns)
        with out.open(newline="") as fh:
            fields = next(csv.reader(fh))
    with _TermAsInterrupt(), out.open("a", newline="") as fh:
        gen = _dask(todo, scheduler) if scheduler else _local(todo, workers or os.cpu_count() or 1)
        try:
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
        finally:
            gen.close()  # stops the workers at once when the loop was interrupted
    return {"planned": len(specs), "skipped": skipped, "ran": ran}
