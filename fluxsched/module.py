"""The ``sched-fluxlite`` broker module: fluxlite as the scheduler of a Flux instance (RFC 27).

Runs inside the broker's embedded Python (flux-core >= 0.88, whose Python
bindings provide :class:`flux.brokermod.BrokerModule`).  Load it with the
loader file that ``fluxlite-flux loader`` writes (it puts this package and
its dependencies on the broker's ``sys.path``)::

    flux module remove sched-simple
    flux module load $(fluxlite-flux loader) queue-policy=easy policy=lonode

The protocol (RFC 27): register the ``sched`` and ``feasibility`` services;
``resource.acquire`` (R, then up / down / shrink / expiration updates);
``job-manager.sched-hello`` (running jobs, whose R is read from the KVS at
``job.<id>.R``; ranks already freed are dropped); ``job-manager.sched-ready``
(unlimited or limited mode); then ``sched.alloc`` (answered success after R
is committed to the KVS, annotate, deny or cancel), ``sched.free`` (partial,
then final), ``sched.cancel``, ``sched.prioritize``, ``sched.expiration``,
``sched.resource-status`` and ``feasibility.check``.  Decisions are
:class:`fluxsched.core.SchedulerCore`'s; this file only speaks Flux.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from _flux._core import ffi, lib
from flux.brokermod import BrokerModule, request_handler
from flux.constants import FLUX_RPC_STREAMING
from flux.job import JobID, job_raise_async
from flux.kvs import KVSTxn
from flux.kvs import commit_async as kvs_commit_async
from flux.kvs import get_key_direct as kvs_get

from fluxlite.errors import FluxliteError
from fluxlite.idset import decode as decode_idset
from fluxsched.config import parse_settings
from fluxsched.core import Alloc, SchedulerCore, _bounded

_SUCCESS, _ANNOTATE, _DENY, _CANCEL = 0, 1, 2, 3


def _kvs_key(jobid: int, name: bytes = b"R") -> str:
    buf = ffi.new("char[128]")
    if lib.flux_job_kvs_key(buf, 128, jobid, name) < 0:
        raise OSError("flux_job_kvs_key failed")
    return ffi.string(buf).decode()


class FluxliteScheduler(BrokerModule):
    """RFC 27 scheduler whose decisions come from fluxlite's engine and queue."""

    def __init__(self, h: Any, *args: str) -> None:
        super().__init__(h, *args)
        try:
            table = h.conf_get(self.name, default={}) or {}
        except (OSError, TypeError):
            table = {}
        # a bad setting fails the load here (EINVAL), with one line in the log and on stderr
        try:
            self.settings = parse_settings(args, table)
        except FluxliteError as exc:
            self.log.error(_bounded(str(exc)))
            raise ValueError(_bounded(str(exc))) from None
        self.log.level = self.settings.log_level
        self.core: SchedulerCore | None = None
        #: flux job id -> the open alloc request message
        self.requests: dict[int, Any] = {}
        self._acquire = None
        self._pass_armed = False
        self._pass = h.timer_watcher_create(0.0, self._on_pass)
        self._wakeup = h.timer_watcher_create(0.0, self._on_pass)

    # ------------------------------------------------------------------ start
    def run(self) -> None:
        for service in ("sched", "feasibility"):
            self.handle.service_register(service).get()
        # running first, as flux-core's own schedulers: during rc1 resource.acquire answers only
        # once every rank has reported, which waits for rc1 (a load that waited for it would hang)
        self.set_running()
        try:
            self._acquire_resources()
            self._hello()
            self._ready()
        except (OSError, FluxliteError) as exc:
            self.log.error(f"initialization failed: {_bounded(str(exc))}")
            code = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
            raise OSError(code or errno.EINVAL, _bounded(str(exc))) from None
        super().run()

    def _acquire_resources(self) -> None:
        f = self.handle.rpc("resource.acquire", flags=FLUX_RPC_STREAMING)
        data = f.get()
        R = data.get("resources")
        if R is None:
            raise OSError("resource.acquire: no resources in the first response")
        up = decode_idset(data["up"]) if data.get("up") else []
        self.core = SchedulerCore(R, self.settings, up=up)
        self._apply_update(data, first=True)
        f.reset()
        self._acquire = f
        f.then(self._on_acquire)

    def _on_acquire(self, future: Any) -> None:
        try:
            data = future.get()
        except OSError as exc:
            # the resource module going away first (a shutdown where fluxlite was loaded by hand)
            # ends the stream with ECANCELED: nothing is wrong, there is just nothing left to schedule
            if exc.errno in (errno.ECANCELED, errno.ENOSYS):
                self.log.info(f"exiting: {exc.strerror or exc}")
            else:
                self.log.error(f"exiting: resource update failed: {exc}")
            self.stop()
            return
        try:
            self._apply_update(data)
        except FluxliteError as exc:
            self.log.error(f"resource update: {_bounded(str(exc))}")
        future.reset()
        self._request_pass()

    def _apply_update(self, data: dict[str, Any], first: bool = False) -> None:
        core = self.core
        assert core is not None
        if data.get("up") and not first:
            core.set_up(decode_idset(data["up"]))
        if data.get("down"):
            core.set_down(decode_idset(data["down"]))
        if data.get("shrink"):
            core.shrink(decode_idset(data["shrink"]))
        exp = data.get("expiration")
        if isinstance(exp, (int, float)) and exp >= 0:
            core.expiration = float(exp)

    def _hello(self) -> None:
        core = self.core
        assert core is not None
        f = self.handle.rpc("job-manager.sched-hello", {"partial-ok": True}, flags=FLUX_RPC_STREAMING)
        n = 0
        while True:
            try:
                data = f.get()
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    break
                raise OSError(f"sched-hello failed: {exc}") from exc
            jobid = data["id"]
            try:
                R = kvs_get(self.handle, _kvs_key(jobid))
                if isinstance(R, str):
                    R = json.loads(R)
                free = decode_idset(data["free"]) if data.get("free") else []
                core.hello(jobid, R, free)
                n += 1
            except (OSError, FluxliteError, ValueError, KeyError) as exc:
                self.log.error(f"hello: cannot re-allocate job {JobID(jobid).f58}: {_bounded(str(exc))}")
                job_raise_async(
                    self.handle, jobid, "scheduler-restart", 0, "failed to reallocate R for running job"
                )
            f.reset()
        if n:
            self.log.info(f"hello: re-allocated {n} running job(s)")

    def _ready(self) -> None:
        depth = self.settings.queue_depth
        payload = {"mode": "unlimited"} if depth is None else {"mode": "limited", "limit": depth}
        self.handle.rpc("job-manager.sched-ready", payload).get()
        self.log.info(
            f"ready: queue-policy={self.settings.queue_policy} policy={self.settings.policy} "
            f"queue-depth={depth or 'unlimited'}"
        )

    # ------------------------------------------------------------------ passes
    def _request_pass(self) -> None:
        if not self._pass_armed:
            self._pass_armed = True
            self._pass.reset(after=0.0)

    def _on_pass(self, *_: Any) -> None:
        self._pass_armed = False
        self._pass.stop()
        core = self.core
        if core is None:
            return
        try:
            decisions = core.schedule()
        except FluxliteError as exc:
            self.log.error(f"scheduling pass failed: {_bounded(str(exc))}")
            decisions = []
        except Exception as exc:  # a bug: say so and stop (the job manager then waits for a scheduler)
            self.log.error(f"scheduling pass crashed: {type(exc).__name__}: {_bounded(str(exc))}")
            self.stop_error()
            return
        for d in decisions:
            self._answer(d)
        wake = core.next_wakeup()
        if wake is not None:
            self._wakeup.reset(after=wake + 0.05)
        else:
            self._wakeup.stop()

    def _answer(self, d: Alloc) -> None:
        if d.kind == "annotate":
            msg = self.requests.get(d.flux_id)
            if msg is not None:
                self.handle.respond(
                    msg, {"id": d.flux_id, "type": _ANNOTATE, "annotations": d.annotations}
                )
            return
        msg = self.requests.pop(d.flux_id, None)
        if msg is None:
            return
        if d.kind == "deny":
            self.handle.respond(msg, {"id": d.flux_id, "type": _DENY, "note": d.note})
            return
        txn = KVSTxn(self.handle)
        txn.put(_kvs_key(d.flux_id), d.R)
        f = kvs_commit_async(self.handle, _kvstxn=txn)
        f.then(self._on_commit, (msg, d))

    def _on_commit(self, future: Any, args: tuple[Any, Alloc]) -> None:
        msg, d = args
        try:
            future.get()
        except OSError as exc:
            self.log.error(f"alloc: KVS commit of R failed: {exc}")
            self.stop_error()
            return
        resp: dict[str, Any] = {"id": d.flux_id, "type": _SUCCESS, "R": d.R}
        if d.annotations:
            resp["annotations"] = d.annotations
        self.handle.respond(msg, resp)

    def _error(self, msg: Any, code: int, text: str) -> None:
        lib.flux_respond_error(self.handle.handle, msg.handle, code, _bounded(text).encode())

    # ------------------------------------------------------------------ RFC 27 requests
    @request_handler("sched.alloc", prefix=False)
    def _alloc(self, msg: Any) -> None:
        core = self.core
        try:
            p = msg.payload
            jobid = int(p["id"])
            note = core.submit(jobid, int(p.get("priority", 16)), p["jobspec"])
        except (FluxliteError, KeyError, TypeError, ValueError, AttributeError) as exc:
            note = f"cannot queue the request: {_bounded(str(exc))}"
            try:
                jobid = int(msg.payload["id"])
            except (KeyError, TypeError, ValueError):
                self.log.error(f"sched.alloc without a job id: {note}")
                self._error(msg, errno.EPROTO, note)
                return
            if core is not None and jobid in core.pending:
                core.cancel(jobid)
        if note is not None:
            self.handle.respond(msg, {"id": jobid, "type": _DENY, "note": note})
            return
        self.requests[jobid] = msg
        self._request_pass()

    @request_handler("sched.free", prefix=False)
    def _free(self, msg: Any) -> None:
        p = msg.payload
        try:
            self.core.free(int(p["id"]), p.get("R"), bool(p.get("final", False)))
        except (FluxliteError, KeyError, TypeError, ValueError) as exc:
            self.log.error(f"free {p.get('id')}: {_bounded(str(exc))}")
        self._request_pass()

    @request_handler("sched.cancel", prefix=False)
    def _cancel(self, msg: Any) -> None:
        jobid = int(msg.payload["id"])
        if self.core.cancel(jobid):
            req = self.requests.pop(jobid, None)
            if req is not None:
                self.handle.respond(req, {"id": jobid, "type": _CANCEL})
            self._request_pass()

    @request_handler("sched.prioritize", prefix=False)
    def _prioritize(self, msg: Any) -> None:
        try:
            self.core.prioritize(msg.payload.get("jobs", []))
        except (FluxliteError, TypeError, ValueError) as exc:
            self.log.error(f"prioritize: {_bounded(str(exc))}")
        self._request_pass()

    @request_handler("sched.expiration", prefix=False)
    def _expiration(self, msg: Any) -> None:
        p = msg.payload
        try:
            self.core.set_expiration(int(p["id"]), float(p["expiration"]))
        except (FluxliteError, KeyError, TypeError, ValueError) as exc:
            self._error(msg, errno.EINVAL, str(exc))
            return
        self.handle.respond(msg, None)
        self._request_pass()

    @request_handler("sched.resource-status", prefix=False)
    def _resource_status(self, msg: Any) -> None:
        try:
            self.handle.respond(msg, self.core.status())
        except (FluxliteError, ValueError) as exc:
            self._error(msg, errno.EINVAL, str(exc))

    @request_handler("feasibility.check", prefix=False)
    def _feasibility(self, msg: Any) -> None:
        try:
            why = self.core.infeasible(msg.payload["jobspec"])
        except (KeyError, TypeError) as exc:
            self._error(msg, errno.EPROTO, f"malformed request: {exc}")
            return
        if why is None:
            self.handle.respond(msg, {})
        else:
            self._error(msg, errno.EINVAL, why)

    @request_handler("stats-get")
    def _stats(self, msg: Any) -> None:
        self.handle.respond(msg, self.core.stats() if self.core else {})


def mod_main(h: Any, *args: str) -> None:
    FluxliteScheduler(h, *args).run()
