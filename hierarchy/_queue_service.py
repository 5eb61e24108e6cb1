"""The batch queue of a running instance: ``fluxlite.queue.v1.Queue`` on the instance's server.

``fluxlite instance serve --queue easy`` adds this service to the server
that already serves ``fluxlite.hierarchy.v1.Instance`` (same socket, same
tree-secret check).  It runs the very queue code of the simulator
(:class:`fluxlite.queue.Queue` with a policy, and
:class:`fluxlite.queue.dynamic.DynamicScheduler` for evolving jobs'
``Dynget``/``Dynfree``) on the wall clock: whole seconds since the queue
started.  Every engine access holds the instance lock, so queue jobs and
the hierarchy's grows/leases see one consistent engine.

A scheduling pass runs after each Submit, Cancel, Complete and Dynget and
on a timer (``tick_s``, default 0.25 s), which also ends jobs whose
walltime is over.  No processes are launched: a job is an allocation, and
its owner reports its end with ``Complete`` (or it ends at its walltime).

The protobuf modules ``hierarchy/_pb/fluxlite_queue_pb2*.py`` are generated
from ``hierarchy/proto/fluxlite_queue.proto`` (grpcio-tools 1.85.1, a
development tool) and checked in; regenerate from the repository root with::

    python -m grpc_tools.protoc -Ihierarchy/_pb=hierarchy/proto --python_out=. --grpc_python_out=. \
        --pyi_out=. hierarchy/proto/fluxlite_queue.proto
"""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc

from fluxlite.errors import FluxliteError, InputError, UnknownJobError
from fluxlite.queue import Job, Queue
from fluxlite.queue.dynamic import DynamicScheduler
from fluxlite.queue.fairness import DfsConfig
from hierarchy._client import ERROR_KEY
from hierarchy._pb import fluxlite_queue_pb2 as qpb
from hierarchy._pb import fluxlite_queue_pb2_grpc as qpb_grpc
from hierarchy._service import _status
from hierarchy.instance import Instance

__all__ = ["QueueService", "attach_queue"]

#: queue job ids start here, apart from the ids the Instance service hands out
_FIRST_JOBID = 1_000_000


class QueueService(qpb_grpc.QueueServicer):
    """Queue RPCs over one :class:`Instance` (see the module docstring)."""

    def __init__(
        self,
        instance: Instance,
        policy: str = "easy",
        reservation_depth: int | None = None,
        dfs: DfsConfig | None = None,
        tick_s: float = 0.25,
    ) -> None:
        self.instance = instance
        self.queue = Queue(instance.engine, policy, reservation_depth)
        self.dyn = DynamicScheduler(self.queue, dfs)
        self.tick_s = tick_s
        self._t0 = time.monotonic()
        self._next = _FIRST_JOBID
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="queue", daemon=True)

    # ------------------------------------------------------------------ clock and passes
    def now(self) -> int:
        return int(time.monotonic() - self._t0)

    def _pass(self) -> None:
        """End expired jobs and run one scheduler iteration (the caller holds the lock)."""
        now = self.now()
        for job in self.queue.running():
            if job.planned_end <= now:
                self.queue.complete(job.jobid, now)
        self.dyn.iterate(now)

    def _loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                with self.instance._locked(None):
                    self._pass()
            except Exception:  # keep scheduling, say what happened
                self.instance.log.exception("queue pass failed")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    # ------------------------------------------------------------------ replies
    def _info(self, job: Job) -> Any:
        return qpb.JobInfo(
            jobid=job.jobid,
            state=job.state,
            size=job.size,
            unit=job.unit,
            walltime=job.walltime,
            submit=job.submit,
            start=-1 if job.start is None else job.start,
            end=-1 if job.end is None else job.end,
            reserved_at=-1 if job.resv_at is None else job.resv_at,
            user=job.user,
            grants=job.grants,
            refusals=job.refusals,
            paths=self.queue.held(job) if job.running else [],
        )

    def _run(self, context: grpc.ServicerContext, method: str, fn: Any) -> Any:
        try:
            with self.instance._locked(None):
                return fn()
        except FluxliteError as exc:
            context.set_trailing_metadata(((ERROR_KEY, type(exc).__name__),))
            context.abort(_status(exc), str(exc))
        except Exception as exc:  # a bug: keep serving, say what happened
            self.instance.log.exception("%s failed", method)
            context.abort(grpc.StatusCode.INTERNAL, f"{method}: internal error: {type(exc).__name__}: {exc}")

    def _job(self, jobid: int) -> Job:
        job = self.queue.jobs.get(jobid)
        if job is None:
            raise UnknownJobError(f"no queue job {jobid}", jobid=jobid)
        return job

    # ------------------------------------------------------------------ RPCs
    def Submit(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            unit = request.unit or "node"
            if unit not in ("node", "core"):
                raise InputError(f"unit must be node or core, got {unit!r}")
            jobid = self._next
            job = Job(
                jobid,
                request.size,
                request.walltime,
                submit=self.now(),
                unit=unit,
                priority=request.priority,
                user=request.user,
                hold_backfill=request.hold_backfill,
            )
            self.queue.submit(job, self.now())
            self._next += 1
            self._pass()
            return self._info(job)

        return self._run(context, "Submit", call)

    def Cancel(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            job = self.queue.cancel(self._job(request.jobid).jobid, self.now())
            self._pass()
            return self._info(job)

        return self._run(context, "Cancel", call)

    def Complete(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            job = self.queue.complete(self._job(request.jobid).jobid, self.now())
            self._pass()
            return self._info(job)

        return self._run(context, "Complete", call)

    def Jobs(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            ids = list(request.jobids) or sorted(self.queue.jobs)
            return qpb.JobsReply(
                jobs=[self._info(self._job(i)) for i in ids], now=self.now(), policy=self.queue.policy.name
            )

        return self._run(context, "Jobs", call)

    def Dynget(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            job = self._job(request.jobid)
            req = self.dyn.dynget(job, request.count, self.now(), request.per_node_cores)
            self._pass()
            return qpb.DyngetReply(granted=bool(req.granted), job=self._info(job))

        return self._run(context, "Dynget", call)

    def Dynfree(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            job = self._job(request.jobid)
            self.dyn.dynfree(job, list(request.paths), self.now())
            self._pass()
            return self._info(job)

        return self._run(context, "Dynfree", call)


def attach_queue(
    server: grpc.Server, instance: Instance, policy: str, reservation_depth: int | None = None
) -> QueueService:
    """Add the queue service to an instance's server (before ``server.start()``)."""
    svc = QueueService(instance, policy, reservation_depth)
    qpb_grpc.add_QueueServicer_to_server(svc, server)
    return svc
