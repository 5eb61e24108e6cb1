"""The gRPC client of an instance: typed calls, the tree secret and a user token on each, errors as fluxlite types.

:class:`InstanceClient` implements :class:`hierarchy.base.Parent` (what a
child needs from its parent) plus the read-only calls (``info``, ``stat``).
Every call has a timeout; gRPC errors are translated here, at the boundary,
into fluxlite errors chained ``from`` the gRPC error (see
:func:`translate_error`).  Round trips are measured around the stub call,
so they include protobuf and JGF-bytes (de)serialisation.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import grpc
import orjson

from fluxlite.errors import (
    BusyError,
    CommandError,
    FluxliteError,
    GraphFormatError,
    InputError,
    JobspecError,
    MatchError,
    RpcError,
    StateError,
    UnknownJobError,
    UnsatisfiableError,
)
from hierarchy._address import SECRET_KEY, Address, TlsConfig, check_socket_owner, parse_address
from hierarchy._errors import ForeignResourcesError, InstanceUnavailableError, LimitError, NotAuthorizedError
from hierarchy._identity import USER_KEY, Credential
from hierarchy._pb import fluxlite_instance_pb2 as pb
from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
from hierarchy._wire import MAGICS, WireError, as_jgf, counts
from hierarchy._wire import VERSION as WIRE_VERSION
from hierarchy.base import LevelTiming, MatchOutcome, ReleaseOutcome, ShrinkOutcome

__all__ = ["CHANNEL_OPTIONS", "ERROR_KEY", "InstanceClient", "new_request_id", "open_channel", "translate_error"]

#: Trailing-metadata key naming the fluxlite error class of a failed call.
ERROR_KEY = "x-fluxlite-error"

#: A Shrink JGF above this many bytes goes in chunks of this size (servers accept a few MiB per message).
STREAM_ABOVE = 1024 * 1024

#: Channel and server options: big JGF payloads, fast reconnects, no HTTP proxy for local peers.
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 512 * 1024 * 1024),
    ("grpc.max_receive_message_length", 512 * 1024 * 1024),
    ("grpc.enable_http_proxy", 0),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]

_ERROR_TYPES: dict[str, type[FluxliteError]] = {
    c.__name__: c
    for c in (
        BusyError,
        UnsatisfiableError,
        MatchError,
        UnknownJobError,
        ForeignResourcesError,
        StateError,
        JobspecError,
        GraphFormatError,
        CommandError,
        InputError,
        LimitError,
        NotAuthorizedError,
        InstanceUnavailableError,
        RpcError,
    )
}


def new_request_id() -> str:
    """A fresh request id (random, 128 bits)."""
    return uuid.uuid4().hex


def translate_error(exc: grpc.RpcError, address: str, method: str) -> FluxliteError:
    """The fluxlite error for a failed call (the caller raises it ``from exc``)."""
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else "") or ""
    name = ""
    try:
        for k, v in exc.trailing_metadata() or ():
            if k == ERROR_KEY:
                name = v
    except Exception:  # pragma: no cover - an error without metadata
        name = ""
    cls = _ERROR_TYPES.get(name)
    if cls is not None and code not in (grpc.StatusCode.UNAUTHENTICATED,):
        if issubclass(cls, RpcError):
            return cls(f"{method} at {address}: {details}")
        return cls(details)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
        return InputError(f"{method} at {address}: the request is larger than the instance accepts ({details})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        err = InstanceUnavailableError(f"{method} at {address}: no answer before the deadline")
        err.ambiguous = True  # the peer may have done it: retry with the same request id, never undo
        return err
    if code == grpc.StatusCode.UNAVAILABLE:
        return InstanceUnavailableError(f"{method} at {address}: instance unreachable ({details})")
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return NotAuthorizedError(f"{method} at {address} refused: {details}")
    cname = code.name if code is not None else "UNKNOWN"
    return RpcError(f"{method} at {address} failed ({cname}): {details}")


def open_channel(addr: Address, tls: TlsConfig | None) -> grpc.Channel:
    """A channel to an instance: TLS when ``tls`` is enabled; plaintext only to loopback or a Unix socket.

    Raises InputError before connecting when plaintext TCP would carry the
    tree secret to another host.
    """
    secure = tls is not None and tls.enabled
    if addr.kind == "tcp" and not addr.loopback and not secure:
        raise InputError(
            f"refusing to send the tree secret in plaintext to {addr.target}: another host needs TLS "
            "(--tls-ca, --tls-cert, --tls-key)"
        )
    if secure:
        assert tls is not None
        return grpc.secure_channel(addr.target, tls.channel_credentials(), options=CHANNEL_OPTIONS)
    return grpc.insecure_channel(addr.target, options=CHANNEL_OPTIONS)


def timings_from_pb(items: Any) -> list[LevelTiming]:
    return [
        LevelTiming(
            t.instance, t.depth, t.match_s, t.attach_update_s, t.upstream_s, t.server_s, t.outcome, t.deferred
        )
        for t in items
    ]


class InstanceClient:
    """A connection to one instance (see the module docstring)."""

    def __init__(
        self,
        address: str | Address,
        secret: bytes | str,
        *,
        timeout: float = 10.0,
        tls: TlsConfig | None = None,
        wait_for_ready: bool = False,
        credential: Credential | None = None,
        trusted_uids: frozenset[int] = frozenset(),
        instance_name: str | None = None,
        stream_above: int = STREAM_ABOVE,
        accept_columns: bool | int = False,
        wire_columns: bool = True,
    ) -> None:
        self.addr = address if isinstance(address, Address) else parse_address(address)
        #: uids besides this user's and root's that may own the instance's Unix socket
        self.trusted_uids = trusted_uids
        self._socket_checked = self.addr.kind != "unix"
        self.address = self.addr.target
        self.timeout = timeout
        #: wait (up to the timeout) for an unreachable peer to come back instead of failing at once
        self.wait_for_ready = wait_for_ready
        sec = secret.decode() if isinstance(secret, bytes) else secret
        self._md = ((SECRET_KEY, sec),)
        #: the user this client acts for: every call carries a fresh token signed by it
        self.credential = credential
        #: the name of the instance behind the address (tokens name it); asked with Health if not given
        self.instance_name = instance_name
        #: a Shrink whose JGF is bigger goes through ShrinkStream in chunks of this size
        self.stream_above = stream_above
        #: ask MatchGrow for the columns wire form (hierarchy._wire); a reply in it is handed back as
        #: payload bytes that :func:`hierarchy.as_jgf` turns into JGF.  Instances set it towards
        #: their parent; an older parent ignores it and answers JGF.  True asks for the newest
        #: version this client reads, a number for at most that version (1: as before version 2)
        self.accept_columns = bool(accept_columns)
        self.columns_version = (WIRE_VERSION if accept_columns is True else int(accept_columns)) if accept_columns else 0
        #: without ``accept_columns``: still ask MatchGrow for the columns wire form and write its JGF
        #: here, in the caller's process, so that the instance answers without writing it (a 64-node
        #: grow's JGF is about 1.4 ms of the instance's time before it answers and takes up its next
        #: call, and twice the bytes); the caller gets the same JGF document either way (a grow the instance
        #: matched itself laid out as ``as_jgf`` writes it).  False asks for JGF
        self.wire_columns = bool(wire_columns) and not self.accept_columns
        self._channel = open_channel(self.addr, tls)
        self._stub = pb_grpc.InstanceStub(self._channel)

    # ------------------------------------------------------------------ plumbing
    def _call(self, method: str, request: Any, timeout: float | None) -> tuple[Any, float]:
        if not self._socket_checked:  # before the secret leaves: is it our instance's socket?
            self._socket_checked = check_socket_owner(self.addr.path, self.trusted_uids)
        fn = getattr(self._stub, method)
        md = self._md
        if self.credential is not None:
            if self.instance_name is None:
                self.instance_name = self._name(timeout)
            md = (*md, (USER_KEY, self.credential.token(self.instance_name)))
        t0 = time.perf_counter()
        try:
            reply = fn(
                request,
                timeout=self.timeout if timeout is None else timeout,
                metadata=md,
                wait_for_ready=self.wait_for_ready,
            )
        except grpc.RpcError as exc:
            raise translate_error(exc, self.address, method) from exc
        return reply, time.perf_counter() - t0

    def _name(self, timeout: float | None) -> str:
        """The instance's name (Health needs no user token); tokens are minted for it alone."""
        try:
            r = self._stub.Health(
                pb.HealthRequest(),
                timeout=self.timeout if timeout is None else timeout,
                metadata=self._md,
                wait_for_ready=self.wait_for_ready,
            )
        except grpc.RpcError as exc:
            raise translate_error(exc, self.address, "Health") from exc
        return r.instance

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> InstanceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ calls
    def match_allocate(
        self,
        jobspec: bytes | str,
        *,
        request_id: str = "",
        lease: bool = False,
        child_name: str = "",
        child_address: str = "",
        lease_secret: str = "",
        timeout: float | None = None,
    ) -> MatchOutcome:
        """Allocate a new job (see :class:`hierarchy.base.Parent`)."""
        js = jobspec.encode() if isinstance(jobspec, str) else jobspec
        req = pb.MatchAllocateRequest(
            jobspec=js,
            request_id=request_id or new_request_id(),
            lease=lease,
            child_name=child_name,
            child_address=child_address,
            lease_secret=lease_secret,
        )
        r, rtt = self._call("MatchAllocate", req, timeout)
        return MatchOutcome(
            r.jobid,
            r.jgf,
            timings_from_pb(r.timings),
            r.lease_token,
            r.grace_s,
            r.replayed,
            r.vertices,
            r.edges,
            rtt,
        )

    def _payload(self, r: Any) -> bytes:
        """A MatchReply's resources: JGF, or (asked for) the columns payload; unasked columns become JGF."""
        if not r.columns:
            return r.jgf
        magic = MAGICS.get(r.columns_version or 1)  # (unset: version 1, from a parent before version 2)
        if magic is None:
            raise WireError(f"MatchGrow reply: columns of version {r.columns_version}, unknown here")
        payload = magic + r.columns
        counts(payload)  # the header and its bounds (WireError); the columns are checked where read
        return payload if self.accept_columns else as_jgf(payload)

    def match_grow(
        self,
        jobid: int,
        jobspec: bytes | str,
        *,
        request_id: str = "",
        lease_token: str = "",
        timeout: float | None = None,
    ) -> MatchOutcome:
        """Grow job ``jobid`` (see :class:`hierarchy.base.Parent`)."""
        js = jobspec.encode() if isinstance(jobspec, str) else jobspec
        req = pb.MatchGrowRequest(
            jobid=jobid,
            jobspec=js,
            request_id=request_id or new_request_id(),
            lease_token=lease_token,
            accept_columns=self.accept_columns or self.wire_columns,
            columns_version=WIRE_VERSION if self.wire_columns else self.columns_version,
        )
        r, rtt = self._call("MatchGrow", req, timeout)
        return MatchOutcome(
            r.jobid,
            self._payload(r),
            timings_from_pb(r.timings),
            r.lease_token,
            r.grace_s,
            r.replayed,
            r.vertices,
            r.edges,
            rtt,
        )

    def shrink(
        self,
        jobid: int,
        *,
        jgf: bytes | str = b"",
        paths: Sequence[str] = (),
        lease_token: str = "",
        request_id: str = "",
        timeout: float | None = None,
    ) -> ShrinkOutcome:
        """Release part of job ``jobid`` (see :class:`hierarchy.base.Parent`)."""
        doc = jgf.encode() if isinstance(jgf, str) else jgf
        req = pb.ShrinkRequest(
            jobid=jobid,
            jgf=doc,
            paths=list(paths),
            lease_token=lease_token,
            request_id=request_id or new_request_id(),
        )
        if len(doc) > self.stream_above:
            r, rtt = self._call("ShrinkStream", self._chunks(req), timeout)
        else:
            r, rtt = self._call("Shrink", req, timeout)
        return ShrinkOutcome(
            r.job_gone, r.released, r.returned, r.pending, r.replayed, timings_from_pb(r.timings), rtt
        )

    def _chunks(self, req: Any) -> Any:
        """``req`` as ShrinkStream chunks: the head (without its JGF) first, then the JGF in pieces."""
        doc = req.jgf
        head = pb.ShrinkRequest()
        head.CopyFrom(req)
        head.jgf = b""
        n = self.stream_above

        def gen() -> Any:
            yield pb.ShrinkChunk(head=head, jgf_size=len(doc))
            for i in range(0, len(doc), n):
                yield pb.ShrinkChunk(jgf=doc[i : i + n])

        return gen()

    def release(self, jobid: int, *, lease_token: str = "", timeout: float | None = None) -> ReleaseOutcome:
        """Release the whole job ``jobid``."""
        r, rtt = self._call("Release", pb.ReleaseRequest(jobid=jobid, lease_token=lease_token), timeout)
        return ReleaseOutcome(r.returned, r.pending, timings_from_pb(r.timings), rtt)

    def heartbeat(self, jobid: int, *, lease_token: str = "", timeout: float | None = None) -> float:
        """Keep the lease of job ``jobid`` alive; returns the grace period."""
        return self.lease_status(jobid, lease_token=lease_token, timeout=timeout)[0]

    def lease_status(
        self, jobid: int, *, lease_token: str = "", timeout: float | None = None
    ) -> tuple[float, list[tuple[str, str, str]]]:
        """A heartbeat that also returns the lease's dead nodes: (grace period, [(path, state, policy)]).

        The parent names a node here when the cloud instance behind it died
        while this lease held it, and keeps naming it until it is given back.
        """
        r, _ = self._call("Heartbeat", pb.HeartbeatRequest(jobid=jobid, lease_token=lease_token), timeout)
        return r.grace_s, [(d.path[:4096], d.state[:64], d.policy[:16]) for d in r.down[:4096]]

    def info(
        self, jobid: int = 0, *, recount: bool = False, graph: bool = False, timeout: float | None = None
    ) -> dict[str, Any]:
        """The instance's (or one job's) description; ``graph`` adds the whole graph as ``"jgf"`` bytes."""
        r, _ = self._call("Info", pb.InfoRequest(jobid=jobid, recount=recount, graph=graph), timeout)
        out: dict[str, Any] = orjson.loads(r.json)
        if graph:
            out["jgf"] = r.jgf
        return out

    def stat(self, *, timeout: float | None = None) -> dict[str, Any]:
        """Graph sizes, free resources and operation counters."""
        r, _ = self._call("Stat", pb.StatRequest(), timeout)
        return {
            "vertices": r.vertices,
            "edges": r.edges,
            "jobs": r.jobs,
            "children": r.children,
            "by_type": dict(r.by_type),
            "free": dict(r.free),
            "counters": dict(r.counters),
            "uptime_s": r.uptime_s,
        }

    def health(self, *, timeout: float | None = None) -> dict[str, Any]:
        """Liveness of the instance."""
        r, rtt = self._call("Health", pb.HealthRequest(), timeout)
        return {
            "status": r.status,
            "instance": r.instance,
            "depth": r.depth,
            "pid": r.pid,
            "parent": r.parent,
            "rtt_s": rtt,
        }
