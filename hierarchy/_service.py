"""The gRPC side of an instance: authentication, the servicer, and the server.

* :class:`SecretInterceptor` refuses (UNAUTHENTICATED) every call whose
  metadata does not carry the tree secret, compared in constant time.
* :class:`InstanceServicer` checks the caller's user token (metadata
  ``x-fluxlite-user``, see :mod:`hierarchy._identity`) when the instance
  has a :class:`~hierarchy._identity.Verifier`, turns each RPC into a call
  of :class:`hierarchy.Instance` on behalf of that user, writes one audit
  line per state-changing call, and maps a fluxlite error to a gRPC status (see
  :data:`STATUS_OF`) with the error class in the trailing metadata, so the
  client re-raises the same type.  Deadlines propagate: an upstream call
  never outlives the caller's deadline.
* :func:`build_server` binds one address (Unix socket or loopback TCP;
  other TCP only with TLS) and returns the server and the bound address.
  Every request message is limited to :data:`MAX_RECEIVE` bytes (gRPC
  refuses a bigger one with RESOURCE_EXHAUSTED while reading it, before any
  handler - or the secret check - sees it); a bigger JGF for Shrink travels
  through ``ShrinkStream`` in chunks, and the first chunk (job, lease token)
  is checked before the next one is read.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent import futures
from queue import SimpleQueue
from typing import Any

import grpc

from fluxlite.errors import (
    BusyError,
    FluxliteError,
    InputError,
    RpcError,
    StateError,
    UnknownJobError,
    UnsatisfiableError,
)
from hierarchy._address import SECRET_KEY, Address, TlsConfig, check_listen, prepare_unix_listen
from hierarchy._client import _ERROR_TYPES, CHANNEL_OPTIONS, ERROR_KEY
from hierarchy._errors import ForeignResourcesError, InstanceUnavailableError, LimitError, NotAuthorizedError
from hierarchy._identity import USER_KEY, AuditLog, Verifier
from hierarchy._pb import fluxlite_instance_pb2 as pb
from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
from hierarchy._wire import MAGIC, payload_version
from hierarchy.base import LevelTiming
from hierarchy.instance import Instance

__all__ = [
    "MAX_RECEIVE",
    "MAX_STREAM_JGF",
    "STATUS_OF",
    "InstanceServicer",
    "SecretInterceptor",
    "build_server",
]

#: largest request message a server accepts (a jobspec is at most 1 MiB; a JGF goes in chunks above this)
MAX_RECEIVE = 4 * 1024 * 1024
#: largest JGF a ShrinkStream may carry in all
MAX_STREAM_JGF = 512 * 1024 * 1024
#: methods whose requests are streams (the secret check denies them with a handler of that kind)
_STREAMING = frozenset({"/fluxlite.hierarchy.v1.Instance/ShrinkStream"})

_log = logging.getLogger("fluxlite.instance")

#: fluxlite error type -> gRPC status (the most specific type wins).
STATUS_OF: list[tuple[type[FluxliteError], grpc.StatusCode]] = [
    (BusyError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (UnsatisfiableError, grpc.StatusCode.FAILED_PRECONDITION),
    (UnknownJobError, grpc.StatusCode.NOT_FOUND),
    (ForeignResourcesError, grpc.StatusCode.PERMISSION_DENIED),
    (LimitError, grpc.StatusCode.PERMISSION_DENIED),
    (NotAuthorizedError, grpc.StatusCode.PERMISSION_DENIED),
    (InstanceUnavailableError, grpc.StatusCode.UNAVAILABLE),
    (InputError, grpc.StatusCode.INVALID_ARGUMENT),
    (StateError, grpc.StatusCode.FAILED_PRECONDITION),
    (RpcError, grpc.StatusCode.UNAVAILABLE),
    (FluxliteError, grpc.StatusCode.FAILED_PRECONDITION),
]


def _status(exc: FluxliteError) -> grpc.StatusCode:
    for cls, code in STATUS_OF:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.UNKNOWN  # pragma: no cover


class SecretInterceptor(grpc.ServerInterceptor):
    """Refuse calls without the tree secret (constant-time comparison)."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

        def deny(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong tree secret")

        def deny_stream(requests: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong tree secret")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)
        self._deny_stream = grpc.stream_unary_rpc_method_handler(deny_stream)

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        got = b""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == SECRET_KEY:
                got = value.encode() if isinstance(value, str) else value
        if not hmac.compare_digest(got, self._secret):
            _log.warning("refused %s: missing or wrong tree secret", handler_call_details.method)
            return self._deny_stream if handler_call_details.method in _STREAMING else self._deny
        return continuation(handler_call_details)


def _timings(items: list[LevelTiming]) -> list[pb.LevelTiming]:
    return [
        pb.LevelTiming(
            instance=t.instance,
            depth=t.depth,
            match_s=t.match_s,
            attach_update_s=t.attach_update_s,
            upstream_s=t.upstream_s,
            server_s=t.server_s,
            outcome=t.outcome,
            deferred=t.deferred,
        )
        for t in items
    ]


#: longest a deferred start waits for its RPC's answer to be handed to gRPC (a safety net: the
#: servicer always says so, in a ``finally``)
_HANDED_WAIT_S = 5.0


class _Starter:
    """A thread that starts deferred work once its RPC's answer has been handed to gRPC.

    One per process, started with the first servicer, so that a handler only puts an entry
    on a queue: a thread started by the handler would make it wait for that
    thread to run (``Thread.start`` does), and one started after the
    handler's last Python step would take the interpreter lock from it for
    the switch interval (5 ms) before the answer reached gRPC.  Entries are
    started in turn, each once its signal is set (or after ``_HANDED_WAIT_S``);
    the instance's lock serialises the work they start anyway.  Work that
    offers itself to run on the caller's thread (``start.run``, see
    ``hierarchy.instance.core.DeferredStart``) runs on this one: no thread
    to start (and wait for) between the answer and the work.
    """

    def __init__(self) -> None:
        self._queue: SimpleQueue[tuple[threading.Event, Callable[[], None]]] = SimpleQueue()
        threading.Thread(target=self._run, name="after-answer", daemon=True).start()

    def submit(self, answered: threading.Event, start: Callable[[], None]) -> None:
        self._queue.put((answered, start))

    def _run(self) -> None:
        while True:
            answered, start = self._queue.get()
            answered.wait(_HANDED_WAIT_S)
            try:
                run = getattr(start, "run", None)
                if run is not None:
                    run()
                else:
                    start()
            except Exception:  # (keep serving the next one)
                _log.exception("starting deferred work failed")


_STARTER: _Starter | None = None
_STARTER_LOCK = threading.Lock()


def _forget_starter() -> None:
    """In a forked child: its parent's starter thread did not come along."""
    global _STARTER, _STARTER_LOCK
    _STARTER, _STARTER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_starter)


def _shared_starter() -> _Starter:
    """The process's one :class:`_Starter` (made by the first servicer)."""
    global _STARTER
    with _STARTER_LOCK:
        if _STARTER is None:
            _STARTER = _Starter()
        return _STARTER


class _AfterReply:
    """When an RPC's deferred work starts; the instance calls it with the function that starts it.

    Called (``__call__``), the work starts once the RPC has ended, its answer
    sent, so that it does not compete with sending it: a level's attach of a
    child's lease, whose grow goes on below.  ``handed`` starts it once the
    servicer has returned the answer to gRPC (:meth:`answered`), by the
    process's :class:`_Starter`: gRPC's transport then sends the answer,
    outside the interpreter lock, while the work runs.  That is for the attach
    the caller's next call waits for (a level's own job): it need not wait
    for the whole answer to cross the socket.
    """

    __slots__ = ("_answered", "context", "starter")

    def __init__(self, context: grpc.ServicerContext, starter: _Starter) -> None:
        self.context = context
        self.starter = starter
        self._answered = threading.Event()

    def __call__(self, start: Callable[[], None]) -> None:
        if not self.context.add_callback(start):  # the RPC already ended
            start()

    def handed(self, start: Callable[[], None]) -> None:
        answered = self._answered
        if not self.context.add_callback(answered.set):  # (an RPC that ends first also lets it start)
            answered.set()
        self.starter.submit(answered, start)

    def answered(self) -> None:
        """The servicer is returning the answer (or an error) to gRPC."""
        self._answered.set()


#: RPCs that change state: each gets one audit line
AUDITED = frozenset({"MatchAllocate", "MatchGrow", "Shrink", "ShrinkStream", "Release"})


def verified_user(verifier: Verifier | None, context: grpc.ServicerContext, method: str) -> str | None:
    """The verified user of this call (None when the instance runs without identities)."""
    if verifier is None:
        return None
    token = ""
    for key, value in context.invocation_metadata() or ():
        if key == USER_KEY:
            token = value if isinstance(value, str) else value.decode(errors="replace")
    return verifier.verify(token, method=method)


def write_audit(
    audit: AuditLog,
    instance: str,
    method: str,
    user: str | None,
    jobid: int,
    request_id: str,
    outcome: str,
    detail: str = "",
) -> None:
    """One audit record (JSON: every string escaped); a failed write is logged, the call stays served."""
    rec: dict[str, Any] = {"user": user, "instance": instance, "op": method, "job": jobid, "outcome": outcome}
    if request_id:
        rec["request_id"] = request_id[:200]
    if detail:
        rec["detail"] = detail[:500]
    try:
        audit.write(**rec)
    except OSError as exc:  # the call was served; say the audit line is missing
        _log.error("audit log %s: cannot write (%s)", audit.path, exc)


class InstanceServicer(pb_grpc.InstanceServicer):
    """RPCs -> :class:`Instance` methods (see the module docstring)."""

    def __init__(
        self, instance: Instance, *, verifier: Verifier | None = None, audit: AuditLog | None = None
    ) -> None:
        self.instance = instance
        self.verifier = verifier
        self.audit = audit
        self._starter = _shared_starter()

    def _user(self, context: grpc.ServicerContext, method: str) -> str | None:
        return verified_user(self.verifier, context, method)

    def _run(
        self,
        context: grpc.ServicerContext,
        method: str,
        fn: Callable[[float | None, str | None], Any],
        jobid: int = 0,
        request_id: str = "",
    ) -> Any:
        remaining = context.time_remaining()
        deadline = time.monotonic() + remaining if remaining is not None else None
        user: str | None = None
        try:
            user = self._user(context, method)
            out = fn(deadline, user)
            if self.audit is not None and method in AUDITED:
                self._audit(method, user, jobid or getattr(out, "jobid", 0), request_id, "ok")
            return out
        except FluxliteError as exc:
            code = _status(exc)
            if self.audit is not None and (method in AUDITED or isinstance(exc, NotAuthorizedError)):
                self._audit(method, user, jobid, request_id, type(exc).__name__, str(exc))
            # the nearest type a client knows (a provider's CloudBusyError arrives as BusyError)
            wire = next((c.__name__ for c in type(exc).__mro__ if c.__name__ in _ERROR_TYPES), "")
            context.set_trailing_metadata(((ERROR_KEY, wire or type(exc).__name__),))
            if code not in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.FAILED_PRECONDITION):
                _log.info("%s refused: %s", method, exc)
            context.abort(code, str(exc))
        except Exception as exc:  # a bug: keep serving, say what happened
            _log.exception("%s failed", method)
            context.abort(grpc.StatusCode.INTERNAL, f"{method}: internal error: {type(exc).__name__}: {exc}")

    def _audit(
        self, method: str, user: str | None, jobid: int, request_id: str, outcome: str, detail: str = ""
    ) -> None:
        assert self.audit is not None
        write_audit(self.audit, self.instance.name, method, user, jobid, request_id, outcome, detail)

    def MatchAllocate(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(deadline: float | None, user: str | None) -> Any:
            out = self.instance.match_allocate(
                request.jobspec,
                request_id=request.request_id,
                lease=request.lease,
                child_name=request.child_name,
                child_address=request.child_address,
                lease_secret=request.lease_secret,
                deadline=deadline,
                caller=user,
            )
            return pb.MatchReply(
                jobid=out.jobid,
                jgf=out.jgf,
                lease_token=out.lease_token,
                grace_s=out.grace_s,
                replayed=out.replayed,
                vertices=out.vertices,
                edges=out.edges,
                timings=_timings(out.timings),
            )

        return self._run(context, "MatchAllocate", call, request_id=request.request_id)

    def MatchGrow(self, request: Any, context: grpc.ServicerContext) -> Any:
        after = _AfterReply(context, self._starter)

        def call(deadline: float | None, user: str | None) -> Any:
            out = self.instance.match_grow(
                request.jobid,
                request.jobspec,
                request_id=request.request_id,
                lease_token=request.lease_token,
                deadline=deadline,
                after_reply=after,
                caller=user,
                # (a caller that set accept_columns before version 2 reads version 1)
                accept_columns=(request.columns_version or 1) if request.accept_columns else 0,
            )
            version = payload_version(out.jgf)
            return pb.MatchReply(
                jobid=out.jobid,
                jgf=b"" if version else out.jgf,
                columns=out.jgf[len(MAGIC) :] if version else b"",
                columns_version=version,
                replayed=out.replayed,
                vertices=out.vertices,
                edges=out.edges,
                timings=_timings(out.timings),
            )

        try:
            return self._run(context, "MatchGrow", call, request.jobid, request.request_id)
        finally:
            after.answered()

    def _shrink(self, request: Any, jgf: bytes, deadline: float | None, user: str | None) -> Any:
        out = self.instance.shrink(
            request.jobid,
            jgf=jgf,
            paths=list(request.paths),
            lease_token=request.lease_token,
            request_id=request.request_id,
            deadline=deadline,
            caller=user,
        )
        return pb.ShrinkReply(
            job_gone=out.job_gone,
            released=out.released,
            returned=out.returned,
            pending=out.pending,
            replayed=out.replayed,
            timings=_timings(out.timings),
        )

    def Shrink(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(deadline: float | None, user: str | None) -> Any:
            return self._shrink(request, request.jgf, deadline, user)

        return self._run(context, "Shrink", call, request.jobid, request.request_id)

    def ShrinkStream(self, request_iterator: Any, context: grpc.ServicerContext) -> Any:
        """Shrink with a JGF in chunks: the head is checked (caller, job, lease token) before more is read."""

        def call(deadline: float | None, user: str | None) -> Any:
            first = next(request_iterator, None)
            if first is None or not first.HasField("head"):
                raise InputError("ShrinkStream: the first chunk must carry the request (head)")
            head = first.head
            if first.jgf_size > MAX_STREAM_JGF:
                raise InputError(
                    f"ShrinkStream: {first.jgf_size} bytes of JGF; the limit is {MAX_STREAM_JGF}"
                )
            self.instance.check_job(head.jobid, head.lease_token, user, "shrink")  # before reading on
            parts = [head.jgf, first.jgf]
            got = sum(len(p) for p in parts)
            for chunk in request_iterator:
                got += len(chunk.jgf)
                if got > first.jgf_size:
                    raise InputError(f"ShrinkStream: more JGF than the {first.jgf_size} bytes announced")
                parts.append(chunk.jgf)
            if got != first.jgf_size:
                raise InputError(f"ShrinkStream: {got} bytes of JGF, {first.jgf_size} announced")
            return self._shrink(head, b"".join(parts), deadline, user)

        return self._run(context, "ShrinkStream", call)

    def Release(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(deadline: float | None, user: str | None) -> Any:
            out = self.instance.release(
                request.jobid, lease_token=request.lease_token, deadline=deadline, caller=user
            )
            return pb.ReleaseReply(returned=out.returned, pending=out.pending, timings=_timings(out.timings))

        return self._run(context, "Release", call, request.jobid)

    def Heartbeat(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(deadline: float | None, user: str | None) -> Any:
            grace = self.instance.heartbeat(request.jobid, request.lease_token, user)
            down = [
                pb.NodeDown(path=path, state=state, policy=policy)
                for path, state, policy in self.instance.lease_down_for(request.jobid)
            ]
            return pb.HeartbeatReply(grace_s=grace, down=down)

        return self._run(context, "Heartbeat", call)

    def Info(self, request: Any, context: grpc.ServicerContext) -> Any:
        import orjson

        def call(deadline: float | None, user: str | None) -> Any:
            doc = self.instance.info(request.jobid, recount=request.recount, caller=user)
            jgf = self.instance.graph_jgf() if request.graph else b""
            return pb.InfoReply(json=orjson.dumps(doc), jgf=jgf)

        return self._run(context, "Info", call)

    def Stat(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call(deadline: float | None, user: str | None) -> Any:
            s = self.instance.stat()
            return pb.StatReply(
                vertices=s["vertices"],
                edges=s["edges"],
                jobs=s["jobs"],
                children=s["children"],
                by_type=s["by_type"],
                free=s["free"],
                counters=s["counters"],
                uptime_s=s["uptime_s"],
            )

        return self._run(context, "Stat", call)

    def Health(self, request: Any, context: grpc.ServicerContext) -> Any:
        inst = self.instance
        return pb.HealthReply(
            status="SERVING",
            instance=inst.name,
            depth=inst.depth,
            pid=os.getpid(),
            parent=getattr(inst.parent, "address", "") if inst.parent is not None else "",
        )


def build_server(
    servicer: pb_grpc.InstanceServicer,
    address: Address,
    secret: bytes,
    *,
    tls: TlsConfig | None = None,
    max_workers: int = 16,
    max_receive: int = MAX_RECEIVE,
) -> tuple[grpc.Server, Address]:
    """A started-to-be server bound to ``address`` (port 0 picks one); returns it and the bound address.

    Raises :class:`InputError` for a non-loopback TCP address without TLS,
    and :class:`RpcError` when the address cannot be bound.
    """
    check_listen(address, tls)
    if address.kind == "unix":
        prepare_unix_listen(address.path)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"),
        interceptors=[SecretInterceptor(secret)],
        options=[
            *[(k, v) for k, v in CHANNEL_OPTIONS if k != "grpc.max_receive_message_length"],
            ("grpc.max_receive_message_length", max_receive),
        ],
    )
    pb_grpc.add_InstanceServicer_to_server(servicer, server)
    try:
        if tls is not None and tls.enabled:
            port = server.add_secure_port(address.target, tls.server_credentials())
        else:
            port = server.add_insecure_port(address.target)
    except RuntimeError as exc:
        raise RpcError(f"cannot listen on {address.target}: {exc}") from exc
    if address.kind == "tcp":
        if port == 0:
            raise RpcError(f"cannot listen on {address.target}")
        address = address.with_port(port)
    return server, address
