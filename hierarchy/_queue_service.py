"""The batch queue of a running instance: ``fluxlite.queue.v1.Queue`` on the instance's server.

``fluxlite instance serve --queue easy`` adds this service to the server
that already serves ``fluxlite.hierarchy.v1.Instance`` (same socket, same
tree-secret check).  It runs the very queue code of the simulator
(:class:`fluxlite.queue.Queue` with a policy, and
:class:`fluxlite.queue.dynamic.DynamicScheduler` for evolving jobs'
``Dynget``/``Dynfree``, with the DFS fairness configuration of
``--queue-fairness``) on the wall clock: whole seconds since the queue
started.  Every engine access holds the instance lock, so queue jobs and
the hierarchy's grows/leases see one consistent engine.

**Identity** is the instance service's: with ``--site-key`` every call
carries a user token (verified before the lock is taken); a job belongs to
the token's user (``SubmitRequest.user`` may only repeat it); Cancel,
Complete, Dynget and Dynfree are for the job's owner and the instance
owner; Jobs shows other users' jobs without their resources.  Submit and
Dynget are refused (nothing changes) when they would take the user over
``max_nodes``/``max_cores`` of ``--limits``: a user's queued and running
jobs count together with their instance jobs (a node job counts its nodes
and their cores, a core job its cores and the nodes they need at least).
Every state-changing call writes one audit record.  Without a site key the
instance is single-user: every holder of the tree secret acts as its owner,
and ``user`` is a label (checked like a user name).

**Persistence.** With ``--state`` the queue (its jobs, clock, id counter
and fairness accounts) is part of the instance's state file, written with
the engine in one atomic write after every change, so a kill -9 and a
restart lose nothing: running jobs keep their resources, pending jobs their
order, and the clock goes on from where it was plus the time the instance
was down.

A scheduling pass runs after each Submit, Cancel, Complete and Dynget and
on a timer (``tick_s``, default 0.25 s), which also ends jobs whose
walltime is over.  No processes are launched: a job is an allocation, and
its owner reports its end with ``Complete`` (or it ends at its walltime).

The protobuf modules ``hierarchy/_pb/fluxlite_queue_pb2*.py`` are generated
from ``hierarchy/proto/fluxlite_queue.proto`` (grpcio-tools 1.85.1, a
development tool) and checked in; regenerate from the repository root with::

    python -m grpc_tools.protoc -Ihierarchy/_pb=hierarchy/proto --python_out=. --grpc_python_out=. \\
        --pyi_out=. hierarchy/proto/fluxlite_queue.proto
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import grpc

from fluxlite.errors import FluxliteError, InputError, UnknownJobError
from fluxlite.queue import Job, Queue
from fluxlite.queue.dynamic import DynamicScheduler
from fluxlite.queue.fairness import DfsConfig
from hierarchy._client import ERROR_KEY
from hierarchy._errors import LimitError, NotAuthorizedError
from hierarchy._identity import AuditLog, Verifier, check_user
from hierarchy._pb import fluxlite_queue_pb2 as qpb
from hierarchy._pb import fluxlite_queue_pb2_grpc as qpb_grpc
from hierarchy._service import _status, verified_user, write_audit
from hierarchy.instance import Instance

__all__ = ["QueueService", "attach_queue"]

#: queue job ids start here, apart from the ids the Instance service hands out
_FIRST_JOBID = 1_000_000

#: calls that change the queue: audited and persisted
_CHANGES = frozenset({"Submit", "Cancel", "Complete", "Dynget", "Dynfree"})

#: key of the queue's part of the instance's state file
_STATE_KEY = "queue"

_JOB_FIELDS = [f.name for f in dataclasses.fields(Job) if f.name != "extra"]


class QueueService(qpb_grpc.QueueServicer):
    """Queue RPCs over one :class:`Instance` (see the module docstring)."""

    def __init__(
        self,
        instance: Instance,
        policy: str = "easy",
        reservation_depth: int | None = None,
        dfs: DfsConfig | None = None,
        tick_s: float = 0.25,
        *,
        verifier: Verifier | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.instance = instance
        self.queue = Queue(instance.engine, policy, reservation_depth)
        self.dyn = DynamicScheduler(self.queue, dfs)
        self.tick_s = tick_s
        self.verifier = verifier
        self.audit = audit
        self._t0 = time.monotonic()
        self._next = _FIRST_JOBID
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="queue", daemon=True)
        self._signature: tuple[Any, ...] = ()
        instance.holders.append(self._running_of)
        instance.extra_state[_STATE_KEY] = self.state
        saved = instance.restored_extra.get(_STATE_KEY)
        if saved is not None:
            with instance._locked(None):
                self._restore(saved)

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

    def _changed(self) -> bool:
        sig = tuple((j.jobid, j.state, j.size, j.resv_at) for j in self.queue.jobs.values())
        if sig == self._signature:
            return False
        self._signature = sig
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                with self.instance._locked(None):
                    self._pass()
                    if self._changed():
                        self.instance._persist()
            except Exception:  # keep scheduling, say what happened
                self.instance.log.exception("queue pass failed")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    # ------------------------------------------------------------------ state
    def state(self) -> dict[str, Any]:
        """The queue as JSON-able data (part of the instance's state file; called under the lock)."""
        jobs = []
        for j in self.queue.jobs.values():
            d = {k: getattr(j, k) for k in _JOB_FIELDS}
            d["history"] = [list(h) for h in j.history]
            jobs.append(d)
        fair = self.dyn.fairness
        return {
            "now": self.now(),
            "saved_wall": time.time(),
            "next": self._next,
            "jobs": sorted(jobs, key=lambda d: d["seq"]),
            "user_delay": fair.user_delay,
            "job_delay": {str(k): v for k, v in fair.job_delay.items()},
        }

    def _restore(self, doc: dict[str, Any]) -> None:
        """Rebuild the queue from :meth:`state` (the engine already holds the running jobs' resources)."""
        down = max(0.0, time.time() - float(doc.get("saved_wall", time.time())))
        self._t0 = time.monotonic() - (int(doc.get("now", 0)) + down)
        self._next = int(doc.get("next", _FIRST_JOBID))
        eng = self.instance.engine
        for d in doc.get("jobs", ()):
            job = Job(**{k: v for k, v in d.items() if k in _JOB_FIELDS and k != "history"})
            job.history = [(int(t), int(s)) for t, s in d.get("history", ())]
            if job.state == "pending":
                if job.jobid in eng.jobs:  # its reservation: planned again by the next pass
                    eng.cancel(job.jobid)
                job.resv_at = None
                self.queue.submit(job, job.submit)
            else:
                if job.state == "dynqueued":  # a Dynget is answered within its call: none was waiting
                    job.state = "running"
                self.queue.jobs[job.jobid] = job
        fair = self.dyn.fairness
        fair.user_delay = {str(k): float(v) for k, v in doc.get("user_delay", {}).items()}
        fair.job_delay = {int(k): float(v) for k, v in doc.get("job_delay", {}).items()}
        self._changed()
        self.instance.log.info(
            "restored the queue: %d jobs (%d pending, %d running)",
            len(self.queue.jobs),
            len(self.queue.pending),
            len(self.queue.running()),
        )

    # ------------------------------------------------------------------ identity and limits
    def _running_of(self, user: str) -> Iterable[int]:
        """Engine jobs of ``user``'s running queue jobs (the instance counts them against limits)."""
        eng = self.instance.engine
        return [
            j.jobid for j in self.queue.jobs.values() if j.user == user and j.running and j.jobid in eng.jobs
        ]

    def _own(self, job: Job, user: str | None, op: str) -> Job:
        inst = self.instance
        if user is None or user == job.user or (inst.owner and user == inst.owner):
            return job
        raise NotAuthorizedError(
            f"user {user!r} may not {op} queue job {job.jobid}: it belongs to {job.user!r} "
            f"(only its owner and the instance owner {inst.owner!r} may)"
        )

    def _units(self, unit: str, size: int) -> tuple[int, int]:
        """(nodes, cores) a request of ``size`` ``unit``s occupies at least."""
        q = self.queue
        nodes = q.capacity("node")
        per_node = q.capacity("core") // nodes if nodes else 0
        if unit == "node":
            return size, size * per_node
        return (math.ceil(size / per_node) if per_node else 0), size

    def _check_limits(self, user: str | None, unit: str, size: int, what: str) -> None:
        """LimitError if ``size`` more ``unit``s would take ``user`` over max_nodes/max_cores (nothing changed)."""
        max_nodes, max_cores = self.instance._caps(user)
        if max_nodes is None and max_cores is None:
            return
        assert user is not None
        held_nodes, held_cores = self.instance._footprint(user)  # instance jobs and running queue jobs
        nodes, cores = len(held_nodes), held_cores
        for j in self.queue.pending:
            if j.user == user:
                n, c = self._units(j.unit, j.size)
                nodes, cores = nodes + n, cores + c
        add_n, add_c = self._units(unit, size)
        for name, cap, have, add in (
            ("max_nodes", max_nodes, nodes, add_n),
            ("max_cores", max_cores, cores, add_c),
        ):
            if cap is not None and have + add > cap:
                raise LimitError(
                    f"user {user!r} is over the limit {name}={cap} at {self.instance.name}: queued and "
                    f"running jobs hold {have}, the {what} asks for {add} more; nothing was changed"
                )

    # ------------------------------------------------------------------ replies
    def _info(self, job: Job, user: str | None = None) -> Any:
        mine = user is None or user == job.user or user == self.instance.owner
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
            paths=self.queue.held(job) if job.running and mine else [],
        )

    def _run(
        self,
        context: grpc.ServicerContext,
        method: str,
        fn: Callable[[str | None], Any],
        jobid: int = 0,
    ) -> Any:
        user: str | None = None
        try:
            user = verified_user(self.verifier, context, method)  # before the lock
            with self.instance._locked(None):
                out = fn(user)
                if method in _CHANGES:
                    self._changed()
                    self.instance._persist()
            if self.audit is not None and method in _CHANGES:
                write_audit(self.audit, self.instance.name, method, user, jobid or out_jobid(out), "", "ok")
            return out
        except FluxliteError as exc:
            if self.audit is not None and (method in _CHANGES or isinstance(exc, NotAuthorizedError)):
                write_audit(
                    self.audit, self.instance.name, method, user, jobid, "", type(exc).__name__, str(exc)
                )
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
        def call(user: str | None) -> Any:
            unit = request.unit or "node"
            if unit not in ("node", "core"):
                raise InputError(f"unit must be node or core, got {unit[:20]!r}")
            owner = request.user
            if user is not None:
                if owner and owner != user:
                    raise NotAuthorizedError(f"user {user!r} may not submit a job as {owner[:70]!r}")
                owner = user
            elif owner:
                check_user(owner)
            self._check_limits(user, unit, request.size, "job")
            jobid = self._next
            job = Job(
                jobid,
                request.size,
                request.walltime,
                submit=self.now(),
                unit=unit,
                priority=request.priority,
                user=owner,
                hold_backfill=request.hold_backfill,
            )
            self.queue.submit(job, self.now())
            self._next += 1
            self._pass()
            return self._info(job, user)

        return self._run(context, "Submit", call)

    def Cancel(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(user: str | None) -> Any:
            job = self.queue.cancel(self._own(self._job(request.jobid), user, "cancel").jobid, self.now())
            self._pass()
            return self._info(job, user)

        return self._run(context, "Cancel", call, request.jobid)

    def Complete(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(user: str | None) -> Any:
            job = self.queue.complete(self._own(self._job(request.jobid), user, "complete").jobid, self.now())
            self._pass()
            return self._info(job, user)

        return self._run(context, "Complete", call, request.jobid)

    def Jobs(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(user: str | None) -> Any:
            ids = list(request.jobids) or sorted(self.queue.jobs)
            return qpb.JobsReply(
                jobs=[self._info(self._job(i), user) for i in ids],
                now=self.now(),
                policy=self.queue.policy.name,
            )

        return self._run(context, "Jobs", call)

    def Dynget(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(user: str | None) -> Any:
            job = self._own(self._job(request.jobid), user, "grow")
            self._check_limits(user, job.unit, request.count, "dynamic request")
            req = self.dyn.dynget(job, request.count, self.now(), request.per_node_cores)
            self._pass()
            return qpb.DyngetReply(granted=bool(req.granted), job=self._info(job, user))

        return self._run(context, "Dynget", call, request.jobid)

    def Dynfree(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(user: str | None) -> Any:
            job = self._own(self._job(request.jobid), user, "shrink")
            self.dyn.dynfree(job, list(request.paths), self.now())
            self._pass()
            return self._info(job, user)

        return self._run(context, "Dynfree", call, request.jobid)


def out_jobid(out: Any) -> int:
    """The job id of a queue reply (JobInfo or DyngetReply), 0 if none."""
    if hasattr(out, "job") and hasattr(out.job, "jobid"):
        return int(out.job.jobid)
    return int(getattr(out, "jobid", 0))


def attach_queue(
    server: grpc.Server,
    instance: Instance,
    policy: str,
    reservation_depth: int | None = None,
    *,
    dfs: DfsConfig | None = None,
    verifier: Verifier | None = None,
    audit: AuditLog | None = None,
) -> QueueService:
    """Add the queue service to an instance's server (before ``server.start()``)."""
    svc = QueueService(instance, policy, reservation_depth, dfs, verifier=verifier, audit=audit)
    qpb_grpc.add_QueueServicer_to_server(svc, server)
    return svc
