"""One scheduler instance of a tree: an engine, an optional parent, an optional provider.

:class:`Instance` holds the logic of the hierarchy and no gRPC: the server
(:mod:`hierarchy._service`) translates calls into its methods, and it talks
upwards through a :class:`hierarchy.base.Parent` and a
:class:`providers.base.ExternalAPI`.

**MatchGrow** (``match_grow``): try the local engine (``Engine.grow``); if
it cannot match, ask the parent with the job id this instance holds there
(then the provider, if any); the answer is a JGF subgraph that this level
attaches (``Engine.attach``) and allocates to the requesting job
(``Engine.update_allocate``) - at an intermediate level that is the job of
the child that asked.  Each attach is kept as an *origin record* (source,
upstream request id, the paths it created).

**Shrink** (``shrink``, ``release``): release locally (any granularity, see
:mod:`hierarchy._release`), then every vertex that came from above and is
now wholly free is detached and handed back upwards (the parent releases it
from this instance's job there and repeats).  A hand-back is written to the
state file before the upstream call; if the parent does not answer, the
vertices are marked down (never handed out again) and the hand-back is
retried by :meth:`Instance.tick` with the same request id.

**Idempotency.** Every grow, allocate and shrink carries a request id; the
request table maps ``kind:jobid:id`` to the answer, so a retry is answered
from the table and never allocates twice.  Before forwarding upwards, a
grow is recorded as *pending* with the upstream request id (derived from
this instance's name, the job and the request id), so a retry after a crash
asks the parent again with the same id and gets the same subgraph.

**Leases.** A child instance allocates with ``lease=True`` and gets a lease
token; every later call for that job must present it (a child can only
grow and shrink its own allocation).  Children heartbeat; :meth:`tick`
releases the job of a child that has been silent for longer than
``child_grace`` seconds and logs it.

**Deferred attach.** When the job that grows is a child's lease, the
child attaches the subgraph itself, so this level answers first and
attaches right after, in a background thread at idle CPU priority that
still holds the lock: nothing can observe or use this level before the
attach is done, but the leaf's MatchGrow no longer waits for every level
on the way down one after the other.  The subgraph is recorded
(``received``) before the answer, so a crash in between is repaired on
restore.  ``defer_attach=False`` (``--sync-attach``) attaches first.

**Locking.** One lock serialises every change, and it is held across the
upstream call of a grow (calls only go upwards, so this cannot deadlock);
heartbeats and health checks do not take it.  The cyclic garbage
collector is paused while the lock is held.

With ``state_path`` every change is written atomically (see
:mod:`hierarchy._state`) and :meth:`Instance.restore` rebuilds the instance.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import os
import secrets
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import (
    BusyError,
    FluxliteError,
    InputError,
    MatchError,
    StateError,
    UnknownJobError,
    UnsatisfiableError,
)
from fluxlite.gcpolicy import upkeep
from fluxlite.jobspec import Jobspec, parse_jobspec
from fluxlite.readers import load_graph, read_vertices
from hierarchy._errors import ForeignResourcesError, InstanceUnavailableError, LimitError, NotAuthorizedError
from hierarchy._jgfsub import jgf_counts, subgraph_jgf
from hierarchy._limits import Limits, request_counts
from hierarchy._release import release_exact, vertices_held
from hierarchy._state import STATE_FORMAT, STATE_VERSION, read_state, write_atomic
from hierarchy.base import LevelTiming, MatchOutcome, Parent, ReleaseOutcome, ShrinkOutcome
from providers.base import ExternalAPI

__all__ = ["Instance", "JobRecord", "Origin", "settle_memory"]

_log = logging.getLogger("fluxlite.instance")

#: Largest jobspec a call may carry (YAML parsing costs about 2 s per MB: a bigger one is refused unread).
MAX_JOBSPEC_BYTES = 1 << 20


def _now() -> float:
    return time.perf_counter()


def settle_memory() -> None:
    """Collect garbage once, then move every live object out of the collector's sight.

    Called when an instance has built its engine: the engine's many
    long-lived objects would otherwise be rescanned by every full
    collection, which costs tens of milliseconds per grow on a big graph.
    """
    gc.collect()
    gc.freeze()


def _lower_priority() -> None:
    """Run this thread only when a CPU is otherwise idle (Linux SCHED_IDLE, else nice 19).

    Deferred bookkeeping then yields to the critical path of the grow that
    continues in the instances below.  Linux applies both per thread.
    """
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, tid, 19)


class _Hold:
    """What a locked section may leave to run after it returned (still under the lock)."""

    __slots__ = ("after", "starter")

    def __init__(self) -> None:
        self.after: Callable[[], None] | None = None
        #: called with a function that starts ``after``; None starts it at once
        self.starter: Callable[[Callable[[], None]], None] | None = None


@dataclass
class JobRecord:
    """What this instance knows about one of its jobs beyond the engine."""

    jobid: int
    kind: str  # "client" | "child"
    name: str = ""
    address: str = ""
    token: str = ""
    at: int = 0
    duration: int | None = None
    #: the user who owns the job ("" when the instance runs without identities)
    owner: str = ""
    #: time.monotonic() of the last heartbeat (children); not persisted
    last_seen: float = field(default=0.0, compare=False)

    def public(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("last_seen")
        return d


@dataclass
class Origin:
    """One subgraph attached from above: where it came from and the paths it created here."""

    oid: int
    source: str  # "parent" | "provider"
    request_id: str
    jobid: int
    paths: set[str]

    def public(self) -> dict[str, Any]:
        return {
            "oid": self.oid,
            "source": self.source,
            "request_id": self.request_id,
            "jobid": self.jobid,
            "paths": sorted(self.paths),
        }


class Instance:
    """A scheduler instance (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        *,
        name: str = "instance",
        depth: int = 0,
        parent: Parent | None = None,
        parent_jobid: int = 0,
        parent_token: str = "",
        provider: ExternalAPI | None = None,
        state_path: str | Path | None = None,
        child_grace: float = 10.0,
        rpc_timeout: float = 10.0,
        request_table_size: int = 256,
        address: str = "",
        defer_attach: bool = True,
        log: logging.Logger | None = None,
        owner: str = "",
        limits: Limits | None = None,
    ) -> None:
        self.engine = engine
        self.name = name
        self.depth = depth
        self.parent = parent
        self.parent_jobid = parent_jobid
        self.parent_token = parent_token
        self.provider = provider
        self.state_path = Path(state_path) if state_path is not None else None
        self.child_grace = child_grace
        self.rpc_timeout = rpc_timeout
        self.request_table_size = max(1, request_table_size)
        self.address = address
        self.log = log or _log
        self.jobs: dict[int, JobRecord] = {}
        self.origins: dict[int, Origin] = {}
        self._origin_of: dict[str, int] = {}
        #: request key -> answer, for the requests of live jobs (dropped with the job)
        self.requests: dict[str, dict[str, Any]] = {}
        self._job_requests: dict[int, set[str]] = {}
        #: answers to requests of jobs that ended (the last ``request_table_size``)
        self.ended: OrderedDict[str, dict[str, Any]] = OrderedDict()
        #: the instance owner (admin): may act on every job; "" = nobody
        self.owner = owner
        self.limits = limits
        #: user -> wall-clock times of their recent grows (for ``grows_per_minute``)
        self.grow_times: dict[str, list[float]] = {}
        self.returning: list[dict[str, Any]] = []
        self._next_oid = 1
        self._lock = threading.Lock()
        self.counters: Counter[str] = Counter()
        self.started = time.monotonic()
        #: the parent no longer knows this instance's lease
        self.orphaned = False
        #: the parent's grace period for this instance's lease (from its last answer)
        self.parent_grace = 0.0
        self._parent_silent = False
        #: attach a subgraph for a child after answering it (off the child's critical path)
        self.defer_attach = defer_attach
        #: the most recent deferred attach: upstream request id and attach+update seconds
        self.last_deferred: dict[str, Any] = {}

    # ================================================================== construction
    @classmethod
    def from_parent(
        cls,
        parent: Parent,
        jobspec: bytes,
        *,
        name: str,
        depth: int = 1,
        address: str = "",
        policy: str = "first",
        prune_filters: str = "ALL:core,ALL:node",
        timeout: float = 10.0,
        **kwargs: Any,
    ) -> Instance:
        """A child: MatchAllocate ``jobspec`` at ``parent`` (as a lease) and build the graph from the answer.

        Retries an unreachable parent with the same request id until
        ``timeout`` passes (so it never allocates twice).
        """
        rid = f"{name}-init-{secrets.token_hex(8)}"
        deadline = time.monotonic() + timeout
        while True:
            try:
                out = parent.match_allocate(
                    jobspec,
                    request_id=rid,
                    lease=True,
                    child_name=name,
                    child_address=address,
                    timeout=max(0.1, deadline - time.monotonic()),
                )
                break
            except InstanceUnavailableError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)
        graph = load_graph(out.jgf, format="jgf")
        eng = Engine(graph, policy=policy, prune_filters=prune_filters)
        inst = cls(
            eng,
            name=name,
            depth=depth,
            parent=parent,
            parent_jobid=out.jobid,
            parent_token=out.lease_token,
            address=address,
            **kwargs,
        )
        inst.parent_grace = out.grace_s
        return inst

    # ================================================================== helpers
    @contextmanager
    def _locked(self, deadline: float | None) -> Iterator[_Hold]:
        """Hold the instance lock (InstanceUnavailableError if no turn before ``deadline``).

        The cyclic garbage collector is paused meanwhile: an attach creates
        thousands of objects, and collections triggered by them would scan
        the whole engine (see also :func:`settle_memory`).  A body that sets
        ``hold.after`` hands the lock to a background thread that runs it and
        only then releases the lock (a deferred attach, see ``match_grow``).
        """
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=wait):
            raise InstanceUnavailableError(f"instance {self.name} is busy: no turn before the deadline")
        was = gc.isenabled()
        gc.disable()
        hold = _Hold()
        try:
            yield hold
        finally:
            if hold.after is None:
                if was:
                    gc.enable()
                self._lock.release()
                upkeep().poke()  # fluxlite.gcpolicy: young generations collected and frozen, off this thread
            else:
                after, starter = hold.after, hold.starter

                def run() -> None:
                    try:
                        _lower_priority()
                        after()
                    except Exception:
                        self.log.exception("deferred work failed")
                    finally:
                        if was:
                            gc.enable()
                        self._lock.release()

                def start() -> None:
                    threading.Thread(target=run, name="deferred", daemon=True).start()

                if starter is None:
                    start()
                else:
                    starter(start)

    def _timeout(self, deadline: float | None) -> float:
        """Timeout for an upstream call: the configured one, capped by what is left of ours."""
        if deadline is None:
            return self.rpc_timeout
        return max(0.05, min(self.rpc_timeout, deadline - time.monotonic() - 0.05))

    @staticmethod
    def _parse_jobspec(jobspec: bytes | str) -> Jobspec:
        if len(jobspec) > MAX_JOBSPEC_BYTES:
            raise InputError(
                f"request jobspec is {len(jobspec)} bytes; the limit is {MAX_JOBSPEC_BYTES} "
                "(a jobspec describes a request, not the resources themselves)"
            )
        return parse_jobspec(jobspec, source="request jobspec")

    def _job_window(self, js: Jobspec) -> tuple[int, int]:
        tr = self.engine.traverser
        end = getattr(tr, "graph_end", None)
        start = getattr(tr, "graph_start", 0)
        if js.duration > 0:
            return 0, int(js.duration)
        return 0, (end - start) if end is not None else 0

    def _job(self, jobid: int, token: str, caller: str | None = None, op: str = "act on") -> JobRecord:
        """The job record, after checking the job runs here and the caller may act on it."""
        rec = self.jobs.get(jobid)
        if rec is None or jobid not in self.engine.jobs:
            raise UnknownJobError(f"instance {self.name} has no job {jobid}")
        if rec.token and not secrets.compare_digest(rec.token.encode(), token.encode()):
            raise NotAuthorizedError(f"job {jobid} at {self.name} is a lease: wrong or missing lease token")
        if not self.may_act(rec, caller):
            raise NotAuthorizedError(
                f"user {caller!r} may not {op} job {jobid} at {self.name}: it belongs to {rec.owner!r} "
                f"(only its owner and the instance owner {self.owner!r} may)"
            )
        return rec

    def may_act(self, rec: JobRecord, caller: str | None) -> bool:
        """True if ``caller`` may act on ``rec``: its owner, the instance owner, or a trusted in-process call (None)."""
        return caller is None or caller == rec.owner or (bool(self.owner) and caller == self.owner)

    # ------------------------------------------------------------------ limits
    def _held_by(self, user: str) -> Counter[str]:
        """Vertices by type that ``user``'s jobs use here (wholly or in part).  O(size of their jobs)."""
        g = self.engine.graph
        c: Counter[str] = Counter()
        for j, rec in self.jobs.items():
            if rec.owner == user and j in self.engine.jobs:
                c.update(g.v_type[v] for v in set(self.engine.traverser.job_vertices(j)))
        return c

    def _check_limits(self, caller: str | None, js: Jobspec, op: str) -> None:
        """LimitError (naming the limit) if ``op`` of ``js`` would take ``caller`` over a limit."""
        if self.limits is None or caller is None or (self.owner and caller == self.owner):
            return
        lim = self.limits.for_user(caller)
        if op == "grow" and lim.grows_per_minute is not None:
            now = time.time()
            recent = [t for t in self.grow_times.get(caller, ()) if now - t < 60.0]
            self.grow_times[caller] = recent
            if len(recent) >= lim.grows_per_minute:
                raise LimitError(
                    f"user {caller!r} is over the limit grows_per_minute={lim.grows_per_minute} "
                    f"at {self.name}: nothing was changed"
                )
        caps = {"node": lim.max_nodes, "core": lim.max_cores}
        if all(v is None for v in caps.values()):
            return
        want = request_counts(js)
        held = self._held_by(caller)
        for typ, cap in caps.items():
            if cap is not None and want.get(typ, 0) and held.get(typ, 0) + want[typ] > cap:
                raise LimitError(
                    f"user {caller!r} is over the limit max_{typ}s={cap} at {self.name}: holds "
                    f"{held.get(typ, 0)}, asks for {want[typ]} more; nothing was changed"
                )

    def _count_grow(self, caller: str | None) -> None:
        if self.limits is not None and caller is not None:
            self.grow_times.setdefault(caller, []).append(time.time())

    def _upstream_id(self, kind: str, jobid: int, rid: str) -> str:
        return hashlib.blake2b(f"{self.name}|{kind}|{jobid}|{rid}".encode(), digest_size=16).hexdigest()

    def _remember(self, key: str, rec: dict[str, Any]) -> None:
        """Keep the answer to request ``key`` for as long as its job lives (see :meth:`_job_ended`)."""
        self.requests[key] = rec
        self._job_requests.setdefault(rec["jobid"], set()).add(key)

    def _lookup(self, key: str) -> dict[str, Any] | None:
        rec = self.requests.get(key)
        return rec if rec is not None else self.ended.get(key)

    def _forget(self, key: str) -> None:
        rec = self.requests.pop(key, None)
        if rec is not None:
            keys = self._job_requests.get(rec["jobid"])
            if keys is not None:
                keys.discard(key)

    def _job_ended(self, jobid: int) -> None:
        """Forget job ``jobid``: its record, and its requests (their answers stay among the last few ended)."""
        self.jobs.pop(jobid, None)
        for key in self._job_requests.pop(jobid, ()):
            rec = self.requests.pop(key, None)
            if rec is not None and rec.get("state") == "done":
                self.ended[key] = rec
                self.ended.move_to_end(key)
        while len(self.ended) > self.request_table_size:
            self.ended.popitem(last=False)

    def _sources(self) -> list[str]:
        out = []
        if self.parent is not None and not self.orphaned:
            out.append("parent")
        if self.provider is not None:
            out.append("provider")
        return out

    def _paths(self, vids: Iterable[int]) -> list[str]:
        g = self.engine.graph
        dom = self.engine.dom
        return [g.path(v, dom) for v in vids]

    # ================================================================== MatchAllocate
    def match_allocate(
        self,
        jobspec: bytes | str,
        *,
        request_id: str = "",
        lease: bool = False,
        child_name: str = "",
        child_address: str = "",
        deadline: float | None = None,
        caller: str | None = None,
    ) -> MatchOutcome:
        """Allocate a new job here (no recursion).  With ``lease`` the job belongs to a child instance.

        The job belongs to ``caller`` (the verified user; None for a trusted in-process call).
        """
        t0 = _now()
        js = self._parse_jobspec(jobspec)
        key = f"alloc:{request_id}" if request_id else ""
        with self._locked(deadline):
            rec = self._lookup(key) if key else None
            if rec is not None and rec["state"] == "done":
                r = rec["result"]
                self.counters["allocate_replayed"] += 1
                return MatchOutcome(
                    r["jobid"],
                    rec["jgf"],
                    [LevelTiming(self.name, self.depth, server_s=_now() - t0, outcome="replay")],
                    r["lease_token"],
                    self.child_grace,
                    True,
                    r["vertices"],
                    r["edges"],
                )
            self._check_limits(caller, js, "allocate")
            tm = _now()
            res = self.engine.allocate(js, fmt="jgf")
            match_s = _now() - tm
            jgf = res.text.encode()
            at, duration = self._job_window(js)
            token = secrets.token_hex(16) if lease else ""
            self.jobs[res.jobid] = JobRecord(
                res.jobid,
                "child" if lease else "client",
                child_name,
                child_address,
                token,
                at,
                duration,
                owner=caller or "",
                last_seen=time.monotonic(),
            )
            nv, ne = jgf_counts(jgf)
            if key:
                self._remember(
                    key,
                    {
                        "state": "done",
                        "jobid": res.jobid,
                        "jgf": jgf,
                        "result": {"jobid": res.jobid, "lease_token": token, "vertices": nv, "edges": ne},
                    },
                )
            self.counters["allocate"] += 1
            self._persist()
        who = f"child {child_name or '?'} at {child_address or '?'}" if lease else "a client"
        self.log.info("allocated job %d to %s: %d vertices", res.jobid, who, nv)
        timing = LevelTiming(self.name, self.depth, match_s=match_s, server_s=_now() - t0, outcome="local")
        return MatchOutcome(
            res.jobid, jgf, [timing], token, self.child_grace if lease else 0.0, False, nv, ne
        )

    # ================================================================== MatchGrow
    def match_grow(
        self,
        jobid: int,
        jobspec: bytes | str,
        *,
        request_id: str = "",
        lease_token: str = "",
        deadline: float | None = None,
        after_reply: Callable[[Callable[[], None]], None] | None = None,
        caller: str | None = None,
    ) -> MatchOutcome:
        """Grow job ``jobid``: locally, else from the parent, else from the provider (see the module docstring).

        For a child's job the subgraph from above is attached after the
        answer (``defer_attach``): ``after_reply`` receives the function that
        starts that work and calls it once the answer is on its way (the
        server passes gRPC's RPC-termination callback); by default it starts
        at once.  The instance stays locked until it is done.
        """
        t0 = _now()
        rid = request_id or secrets.token_hex(16)
        js = self._parse_jobspec(jobspec)
        raw = jobspec.encode() if isinstance(jobspec, str) else jobspec
        deferred = False
        with self._locked(deadline) as hold:
            job = self._job(jobid, lease_token, caller, "grow")
            key = f"grow:{jobid}:{rid}"
            rec = self._lookup(key)
            if rec is not None and rec["state"] == "done":
                self.counters["grow_replayed"] += 1
                r = rec["result"]
                return MatchOutcome(
                    jobid,
                    rec["jgf"],
                    [LevelTiming(self.name, self.depth, server_s=_now() - t0, outcome="replay")],
                    replayed=True,
                    vertices=r["vertices"],
                    edges=r["edges"],
                )
            if rec is None:
                self._check_limits(caller, js, "grow")
            match_s = attach_s = upstream_s = 0.0
            up_timings: list[LevelTiming] = []
            outcome = "local"
            jgf: bytes | None = None
            nv = ne = 0
            local_err: MatchError | None = None
            if rec is None:
                tm = _now()
                try:
                    jgf = self.engine.grow(jobid, js, fmt="jgf").text.encode()
                except (BusyError, UnsatisfiableError) as exc:
                    local_err = exc
                match_s = _now() - tm
            if jgf is not None:
                nv, ne = jgf_counts(jgf)
            else:
                sources = [rec["source"]] if rec is not None else self._sources()
                if not sources:
                    assert local_err is not None
                    raise local_err
                upstream_id = rec["upstream_id"] if rec is not None else self._upstream_id("grow", jobid, rid)
                err: FluxliteError | None = local_err
                for source in sources:
                    self._remember(
                        key,
                        {"state": "pending", "jobid": jobid, "upstream_id": upstream_id, "source": source},
                    )
                    self._persist()
                    tu = _now()
                    try:
                        if source == "parent":
                            assert self.parent is not None
                            out = self.parent.match_grow(
                                self.parent_jobid,
                                raw,
                                request_id=upstream_id,
                                lease_token=self.parent_token,
                                timeout=self._timeout(deadline),
                            )
                            jgf, up_timings, nv, ne = out.jgf, out.timings, out.vertices, out.edges
                        else:
                            assert self.provider is not None
                            jgf = self.provider.grow(raw, upstream_id)
                            nv, ne = jgf_counts(jgf)
                    except MatchError as exc:
                        err = exc
                        self._forget(key)
                        jgf = None
                        continue
                    except InstanceUnavailableError as exc:
                        # the request stays pending: a retry asks again with the same upstream id
                        self.counters["grow_upstream_unavailable"] += 1
                        raise InstanceUnavailableError(
                            f"grow of job {jobid} at {self.name}: the parent did not answer ({exc})"
                        ) from exc
                    except FluxliteError:
                        self._forget(key)
                        self._persist()
                        raise
                    finally:
                        upstream_s += _now() - tu
                    outcome = source
                    break
                if jgf is None:
                    self._persist()
                    assert err is not None
                    raise err
                if job.kind == "child" and self.defer_attach:
                    # the child attaches the subgraph itself: answer now, attach here right after,
                    # still under the lock (nothing can see this level in between)
                    received = {
                        "state": "received",
                        "jobid": jobid,
                        "upstream_id": upstream_id,
                        "source": outcome,
                        "jgf": jgf,
                        "result": {"vertices": nv, "edges": ne},
                    }
                    self._remember(key, received)
                    self._persist()
                    hold.after = lambda: self._finish_received(key, received)
                    hold.starter = after_reply
                    deferred = True
                else:
                    ta = _now()
                    self._attach_for(job, jgf, outcome, upstream_id)
                    attach_s = _now() - ta
            self._count_grow(caller)
            if not deferred:
                self._remember(
                    key,
                    {"state": "done", "jobid": jobid, "jgf": jgf, "result": {"vertices": nv, "edges": ne}},
                )
                self.counters[f"grow_{outcome}"] += 1
                self._persist()
        timing = LevelTiming(
            self.name, self.depth, match_s, attach_s, upstream_s, _now() - t0, outcome, deferred=deferred
        )
        return MatchOutcome(jobid, jgf, [timing, *up_timings], vertices=nv, edges=ne)

    def _finish_received(self, key: str, rec: dict[str, Any]) -> None:
        """Attach a subgraph already passed on to the child (deferred attach), under the lock.

        The child holds the resources already, so a failure here is not
        handed back: it is logged as an inconsistency (it cannot happen in
        a consistent tree: the subgraph comes from this level's own lease).
        """
        job = self.jobs.get(rec["jobid"])
        ta = _now()
        tc = time.thread_time()
        try:
            if job is None:
                raise UnknownJobError(f"job {rec['jobid']} vanished before its deferred attach")
            self._attach_for(job, rec["jgf"], rec["source"], rec["upstream_id"], hand_back=False)
        except FluxliteError as exc:
            self.counters["deferred_attach_failed"] += 1
            self.log.error(
                "deferred attach for job %s (request %s) failed: %s; the child holds resources "
                "this instance does not account for",
                rec["jobid"],
                key,
                exc,
            )
        self.last_deferred = {
            "request": rec["upstream_id"],
            "attach_update_s": _now() - ta,
            "cpu_s": time.thread_time() - tc,
        }
        self._remember(key, {**rec, "state": "done"})
        self.counters[f"grow_{rec['source']}"] += 1
        self._persist()

    def _attach_for(
        self, job: JobRecord, jgf: bytes, source: str, upstream_id: str, *, hand_back: bool = True
    ) -> None:
        """Attach a subgraph from above and allocate it to ``job``; undo (and hand it back) on failure."""
        eng = self.engine
        try:
            # one parse; all or nothing (the engine detaches what it attached if the allocation fails)
            new = eng.attach(
                jgf,
                source=f"{source} grow {upstream_id}",
                allocate_to=job.jobid,
                at=job.at,
                duration=job.duration,
            )
        except FluxliteError as exc:
            if hand_back:
                self._hand_back_now(source, jgf, upstream_id)
            raise StateError(f"{self.name}: cannot attach the subgraph from the {source}: {exc}") from exc
        if new:
            paths = set(self._paths(new))
            oid = self._next_oid
            self._next_oid += 1
            self.origins[oid] = Origin(oid, source, upstream_id, job.jobid, paths)
            for p in paths:
                self._origin_of[p] = oid

    def _hand_back_now(self, source: str, jgf: bytes, upstream_id: str) -> None:
        """Best effort: give a subgraph we could not use back to where it came from."""
        try:
            if source == "parent" and self.parent is not None:
                self.parent.shrink(
                    self.parent_jobid,
                    jgf=jgf,
                    lease_token=self.parent_token,
                    request_id=f"undo-{upstream_id}",
                    timeout=self.rpc_timeout,
                )
            elif source == "provider" and self.provider is not None:
                self.provider.shrink(jgf)
        except FluxliteError as exc:
            self.log.error("could not give back an unusable subgraph to the %s: %s", source, exc)

    # ================================================================== Shrink / Release
    def _shrink_vertices(self, jobid: int, jgf: bytes, paths: Sequence[str]) -> list[int]:
        """Vertices named by a JGF document or by paths (subtrees), all held by ``jobid`` (else ForeignResourcesError)."""
        g = self.engine.graph
        dom = self.engine.dom
        vids: list[int] = []
        if jgf:
            for node in read_vertices(jgf, source="shrink request"):
                if node.rank < 0:
                    continue  # rank-less ancestors (the cluster) are shared
                p = node.paths.get(dom) or next(iter(node.paths.values()), "")
                v = g.vertex_by_path(p)
                if v is None or g.v_rank[v] != node.rank:
                    raise ForeignResourcesError(
                        f"job {jobid} does not hold {p}: not in the graph of {self.name}"
                    )
                vids.append(v)
        for p in paths:
            v = g.vertex_by_path(p)
            if v is None:
                raise ForeignResourcesError(f"job {jobid} does not hold {p}: not in the graph of {self.name}")
            sub = [u for u in g.subtree(v, dom) if g.v_rank[u] >= 0]
            held = vertices_held(self.engine, jobid, sub)
            if not held:
                raise ForeignResourcesError(f"job {jobid} holds nothing at {p} in {self.name}")
            vids.extend(u for u in sub if u in held)
        vids = list(dict.fromkeys(vids))
        if not vids:
            raise InputError("shrink names no resources (give a JGF document or paths)")
        held = vertices_held(self.engine, jobid, vids)
        foreign = [v for v in vids if v not in held]
        if foreign:
            shown = ", ".join(self._paths(foreign[:3]))
            more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            raise ForeignResourcesError(f"job {jobid} does not hold {shown}{more} at {self.name}")
        return vids

    def _preflight(self, vids: Iterable[int], deadline: float | None) -> None:
        """Before a release that would hand vertices back to the parent, make sure it answers."""
        if self.parent is None or self.orphaned:
            return
        g = self.engine.graph
        dom = self.engine.dom
        if any(g.path(v, dom) in self._origin_of for v in vids):
            try:
                self.parent.health(timeout=min(2.0, self._timeout(deadline)))
            except InstanceUnavailableError as exc:
                raise InstanceUnavailableError(
                    f"{self.name}: the parent holds part of these resources and does not answer; "
                    f"nothing was released ({exc})"
                ) from exc

    def shrink(
        self,
        jobid: int,
        *,
        jgf: bytes = b"",
        paths: Sequence[str] = (),
        lease_token: str = "",
        request_id: str = "",
        deadline: float | None = None,
        caller: str | None = None,
    ) -> ShrinkOutcome:
        """Release part of job ``jobid``; what came from above and is now free goes back up."""
        t0 = _now()
        rid = request_id or secrets.token_hex(16)
        with self._locked(deadline):
            job = self._job(jobid, lease_token, caller, "shrink")
            key = f"shrink:{jobid}:{rid}"
            rec = self._lookup(key)
            if rec is not None and rec["state"] == "done":
                r = rec["result"]
                self.counters["shrink_replayed"] += 1
                return ShrinkOutcome(
                    r["job_gone"],
                    r["released"],
                    r["returned"],
                    r["pending"],
                    True,
                    [LevelTiming(self.name, self.depth, server_s=_now() - t0, outcome="replay")],
                )
            vids = self._shrink_vertices(jobid, jgf, paths)
            self._preflight(vids, deadline)
            undo = self._items_of(jobid, vids) if self.parent is not None else []
            ta = _now()
            gone = release_exact(self.engine, jobid, vids)
            if gone:
                self.jobs.pop(jobid, None)  # (requests forgotten below, once the answer is recorded)
            release_s = _now() - ta
            tu = _now()
            try:
                returned, pending, up_timings, detach_s = self._hand_back(vids, deadline, strict=True)
            except InstanceUnavailableError:
                self._undo_release(job, undo)
                raise
            upstream_s = _now() - tu - detach_s
            result = {"job_gone": gone, "released": len(vids), "returned": returned, "pending": pending}
            self._remember(key, {"state": "done", "jobid": jobid, "result": result})
            if gone:
                self._job_ended(jobid)
            self.counters["shrink"] += 1
            self._persist()
        self.log.info(
            "job %d released %d vertices%s; %d handed back up, %d pending",
            jobid,
            len(vids),
            " (job gone)" if gone else "",
            returned,
            pending,
        )
        timing = LevelTiming(
            self.name, self.depth, 0.0, release_s + detach_s, upstream_s, _now() - t0, "local"
        )
        return ShrinkOutcome(gone, len(vids), returned, pending, False, [timing, *up_timings])

    def release(
        self,
        jobid: int,
        *,
        lease_token: str = "",
        deadline: float | None = None,
        caller: str | None = None,
    ) -> ReleaseOutcome:
        """Release the whole job ``jobid``; what came from above and is now free goes back up."""
        t0 = _now()
        with self._locked(deadline):
            self._job(jobid, lease_token, caller, "release")
            vids = self.engine.traverser.job_vertices(jobid)
            self._preflight(vids, deadline)
            returned, pending, up_timings = self._release_job(jobid, vids, deadline)
        timing = LevelTiming(self.name, self.depth, server_s=_now() - t0, outcome="local")
        return ReleaseOutcome(returned, pending, [timing, *up_timings])

    def _release_job(
        self, jobid: int, vids: list[int], deadline: float | None
    ) -> tuple[int, int, list[LevelTiming]]:
        self.engine.cancel(jobid)
        rec = self.jobs.get(jobid)
        self._job_ended(jobid)
        returned, pending, up_timings, _ = self._hand_back(vids, deadline)
        self.counters["release"] += 1
        self._persist()
        who = f" (child {rec.name})" if rec is not None and rec.kind == "child" else ""
        self.log.info(
            "job %d%s released; %d vertices handed back up, %d pending", jobid, who, returned, pending
        )
        return returned, pending, up_timings

    # ------------------------------------------------------------------ hand-back
    def _free_origin_roots(self, candidates: Iterable[int]) -> dict[str, list[int]]:
        """Roots of the subtrees that came from above and are now wholly free, by source.

        Candidates already on their way back (pending hand-backs) are skipped.
        O(candidates x depth + size of the chosen subtrees).
        """
        g = self.engine.graph
        dom = self.engine.dom
        origin_of = self._origin_of
        busy: set[int] = set()
        for item in self.returning:
            busy.update(v for v in (g.vertex_by_path(p) for p in item["roots"]) if v is not None)
        cand: set[int] = set()
        for v in candidates:
            if not g.is_live(v) or g.path(v, dom) not in origin_of:
                continue
            cand.add(v)
            for a in g.ancestors(v, dom):
                if g.path(a, dom) not in origin_of:
                    break
                cand.add(a)
        chosen: set[int] = set()
        out: dict[str, list[int]] = {}
        for v in sorted(cand, key=lambda u: len(g.path(u, dom))):
            if v in busy or any(a in chosen or a in busy for a in g.ancestors(v, dom)):
                continue
            if self.engine.holders(g.subtree(v, dom)):
                continue
            chosen.add(v)
            src = self.origins[origin_of[g.path(v, dom)]].source
            out.setdefault(src, []).append(v)
        return out

    def _hand_back(
        self, candidates: Iterable[int], deadline: float | None, *, strict: bool = False
    ) -> tuple[int, int, list[LevelTiming], float]:
        """Detach and hand back what came from above and is free now.  Returns (returned, pending, timings, detach_s).

        With ``strict``, a parent that does not answer raises
        InstanceUnavailableError before anything was handed back (the caller
        undoes its release); otherwise the vertices stay, marked down, as a
        pending hand-back.
        """
        groups = self._free_origin_roots(candidates)
        if "parent" in groups:  # the parent first: a strict failure then leaves nothing half done
            groups = {"parent": groups.pop("parent"), **groups}
        returned = pending = 0
        timings: list[LevelTiming] = []
        detach_s = 0.0
        g = self.engine.graph
        dom = self.engine.dom
        for source, roots in groups.items():
            vids = [u for r in roots for u in g.subtree(r, dom)]
            item = {
                "request_id": secrets.token_hex(16),
                "source": source,
                "roots": self._paths(roots),
                "jgf": subgraph_jgf(g, [u for u in vids if g.v_rank[u] >= 0]),
            }
            self.returning.append(item)
            self._persist()
            ok, up = self._send_back(item, deadline, strict=strict)
            timings.extend(up)
            if ok:
                td = _now()
                returned += self._finish_return(item)
                detach_s += _now() - td
            else:
                pending += len(vids)
        return returned, pending, timings, detach_s

    def _send_back(
        self, item: dict[str, Any], deadline: float | None, *, strict: bool = False
    ) -> tuple[bool, list[LevelTiming]]:
        """Ask the source to take ``item`` back.  False (and the roots marked down) if it did not answer.

        With ``strict``, an unanswered parent raises InstanceUnavailableError
        and ``item`` is dropped from the pending hand-backs instead.
        """
        try:
            if item["source"] == "parent":
                if self.parent is None:
                    return True, []
                out = self.parent.shrink(
                    self.parent_jobid,
                    jgf=item["jgf"],
                    lease_token=self.parent_token,
                    request_id=item["request_id"],
                    timeout=self._timeout(deadline),
                )
                return True, out.timings
            if self.provider is not None:
                self.provider.shrink(item["jgf"])
            return True, []
        except (ForeignResourcesError, UnknownJobError, NotAuthorizedError) as exc:
            # the source no longer counts these as ours (e.g. our lease was freed): just drop them
            self.log.warning("the %s refused the hand-back (%s); detaching anyway", item["source"], exc)
            return True, []
        except InstanceUnavailableError as exc:
            if not strict or item["source"] != "parent" or getattr(exc, "ambiguous", False):
                return self._pending(item)  # after a deadline the parent may have done it: retry, never undo
            self.returning = [r for r in self.returning if r is not item]
            self._persist()
            raise
        except FluxliteError as exc:
            self.log.warning(
                "the %s failed to take back %d subtrees: %s", item["source"], len(item["roots"]), exc
            )
            return self._pending(item)

    def _pending(self, item: dict[str, Any]) -> tuple[bool, list[LevelTiming]]:
        """Keep ``item`` as a pending hand-back: its roots are marked down so nobody gets them meanwhile."""
        for p in item["roots"]:
            if self.engine.graph.vertex_by_path(p) is not None:
                self.engine.set_status(p, "down")
        self.counters["handback_pending"] += 1
        self.log.warning(
            "could not hand %d subtrees back to the %s; marked down, will retry",
            len(item["roots"]),
            item["source"],
        )
        self._persist()
        return False, []

    def _items_of(self, jobid: int, vids: Iterable[int]) -> list[tuple[int, int, bool]]:
        """What ``jobid`` holds on ``vids`` as (vertex, units, exclusive), to undo a release.  O(V)."""
        g = self.engine.graph
        want = set(vids)
        out = []
        for path, units, excl in self.engine.job_items(jobid):
            v = g.vertex_by_path(path)
            if v in want:
                out.append((v, units, excl))
        return out

    def _undo_release(self, job: JobRecord, items: list[tuple[int, int, bool]]) -> None:
        """Give ``job`` back exactly what a release took (the parent did not answer)."""
        if not items:
            return
        g = self.engine.graph
        doc = subgraph_jgf(g, [v for v, _, _ in items], exclusive=[v for v, _, x in items if x])
        self.engine.update_allocate(job.jobid, doc, at=job.at, duration=job.duration)
        self.jobs[job.jobid] = job
        self._persist()

    def _finish_return(self, item: dict[str, Any]) -> int:
        """Detach the roots of a completed hand-back; returns the number of vertices removed."""
        g = self.engine.graph
        n = 0
        for p in item["roots"]:
            v = g.vertex_by_path(p)
            if v is None:
                continue
            removed = self.engine.remove_subgraph(path=p)
            n += len(removed) if removed is not None else 0
        self._drop_origin_paths(item["roots"])
        self.returning = [r for r in self.returning if r is not item]
        return n

    def _drop_origin_paths(self, roots: Iterable[str]) -> list[str]:
        """Forget origin paths at or below ``roots`` (after a detach).  O(origin paths)."""
        dropped = []
        prefixes = tuple(roots)
        subs = tuple(r + "/" for r in prefixes)
        for p in [p for p in self._origin_of if p in prefixes or p.startswith(subs)]:
            oid = self._origin_of.pop(p)
            o = self.origins.get(oid)
            if o is not None:
                o.paths.discard(p)
                if not o.paths:
                    del self.origins[oid]
            dropped.append(p)
        return dropped

    # ================================================================== liveness
    def heartbeat(self, jobid: int, lease_token: str) -> float:
        """A child's heartbeat for its lease; returns the grace period.  Takes no lock."""
        rec = self.jobs.get(jobid)
        if rec is None or rec.kind != "child":
            raise UnknownJobError(f"instance {self.name} holds no lease {jobid}")
        if not secrets.compare_digest(rec.token.encode(), lease_token.encode()):
            raise NotAuthorizedError(f"lease {jobid} at {self.name}: wrong lease token")
        rec.last_seen = time.monotonic()
        self.counters["heartbeat"] += 1
        return self.child_grace

    def tick(self, now: float | None = None) -> None:
        """Periodic work: free the jobs of silent children, retry pending hand-backs."""
        now = time.monotonic() if now is None else now
        silent = [
            r for r in list(self.jobs.values()) if r.kind == "child" and now - r.last_seen > self.child_grace
        ]
        for rec in silent:
            with self._lock:
                if rec.jobid not in self.jobs or time.monotonic() - rec.last_seen <= self.child_grace:
                    continue
                vids = self.engine.traverser.job_vertices(rec.jobid)
                n = sum(1 for v in vids if self.engine.graph.v_rank[v] >= 0)
                self.log.warning(
                    "child %s (job %d, %s) sent no heartbeat for %.1fs (grace %.1fs): "
                    "freeing the %d vertices it held",
                    rec.name or "?",
                    rec.jobid,
                    rec.address or "?",
                    now - rec.last_seen,
                    self.child_grace,
                    n,
                )
                self.counters["child_expired"] += 1
                self._release_job(rec.jobid, vids, None)
        if self.returning:
            self.retry_returns()

    def retry_returns(self) -> int:
        """Retry the pending hand-backs; returns how many completed."""
        done = 0
        with self._lock:
            for item in list(self.returning):
                ok, _ = self._send_back(item, time.monotonic() + self.rpc_timeout)
                if ok:
                    self._finish_return(item)
                    done += 1
            if done:
                self.log.info("completed %d pending hand-backs", done)
                self._persist()
        return done

    def heartbeat_parent(self) -> bool:
        """Send one heartbeat to the parent; False if it did not answer."""
        if self.parent is None:
            return True
        try:
            self.parent_grace = self.parent.heartbeat(
                self.parent_jobid, lease_token=self.parent_token, timeout=min(self.rpc_timeout, 5.0)
            )
        except (UnknownJobError, NotAuthorizedError) as exc:
            if not self.orphaned:
                self.log.error("the parent no longer holds this instance's lease: %s", exc)
            self.orphaned = True
            return True
        except FluxliteError as exc:
            if not self._parent_silent:  # once per outage
                self.log.warning("heartbeat to the parent failed (will keep trying): %s", exc)
            self._parent_silent = True
            return False
        if self._parent_silent:
            self.log.info("the parent answers heartbeats again")
            self._parent_silent = False
        return True

    # ================================================================== read-only views
    def _free_and_types(self) -> tuple[dict[str, int], dict[str, int]]:
        g = self.engine.graph
        vs = list(g.vertices())
        held: set[int] = set()
        for lst in self.engine.holders(vs).values():
            held.update(lst)
        by_type: Counter[str] = Counter()
        free: Counter[str] = Counter()
        for v in vs:
            t = g.v_type[v]
            by_type[t] += 1
            if v not in held:
                free[t] += 1
        return dict(by_type), dict(free)

    def _holds(self, jobid: int) -> dict[str, int]:
        g = self.engine.graph
        c: Counter[str] = Counter()
        for path, _units, excl in self.engine.job_items(jobid):
            v = g.vertex_by_path(path)
            if v is not None and excl:
                c[g.v_type[v]] += 1
        return dict(c)

    def _subtrees(self, jobid: int) -> list[str]:
        """Paths of the topmost vertices the job holds exclusively (what ``shrink --path`` takes)."""
        g = self.engine.graph
        dom = self.engine.dom
        held = [p for p, _units, excl in self.engine.job_items(jobid) if excl]
        hs = set(held)
        return sorted(
            p for p in held if not any(g.path(a, dom) in hs for a in g.ancestors(g.vertex_by_path(p), dom))
        )

    def info(self, jobid: int = 0, *, recount: bool = False, caller: str | None = None) -> dict[str, Any]:
        """The instance as a JSON-able dict (or one job with ``jobid``).

        A caller who is neither the job's owner nor the instance owner sees
        only what is public of a job: its id, state, kind and owner.
        """
        with self._lock:
            if jobid:
                rec = self.jobs.get(jobid)
                if rec is None or jobid not in self.engine.jobs:
                    raise UnknownJobError(f"instance {self.name} has no job {jobid}")
                if not self.may_act(rec, caller):
                    return {
                        "jobid": jobid,
                        "state": self.engine.jobs[jobid],
                        "kind": rec.kind,
                        "owner": rec.owner,
                    }
                d = rec.public()
                d.pop("token", None)
                d["state"] = self.engine.jobs[jobid]
                d["holds"] = self._holds(jobid)
                d["subtrees"] = self._subtrees(jobid)
                return d
            by_type, free = self._free_and_types()
            now = time.monotonic()
            out: dict[str, Any] = {
                "instance": self.name,
                "depth": self.depth,
                "pid": os.getpid(),
                "address": self.address,
                "parent": (
                    {"address": getattr(self.parent, "address", ""), "jobid": self.parent_jobid}
                    if self.parent is not None
                    else None
                ),
                "provider": getattr(self.provider, "name", None),
                "orphaned": self.orphaned,
                "vertices": len(self.engine.graph),
                "edges": self.engine.graph.rx.num_edges(),
                "by_type": by_type,
                "free": free,
                "owner": self.owner,
                "jobs": [self._job_summary(j, s, caller) for j, s in sorted(self.engine.jobs.items())],
                "children": [
                    {
                        "jobid": r.jobid,
                        "name": r.name,
                        "address": r.address,
                        "silent_s": round(now - r.last_seen, 3),
                    }
                    for r in self.jobs.values()
                    if r.kind == "child"
                ],
                "origins": [
                    {"oid": o.oid, "source": o.source, "jobid": o.jobid, "vertices": len(o.paths)}
                    for o in self.origins.values()
                ],
                "returning": len(self.returning),
                "requests": len(self.requests),
                "ended_requests": len(self.ended),
                "last_deferred": self.last_deferred,
                "counters": dict(self.counters),
            }
            if recount:
                out["recount_errors"] = recount_errors(self.engine, [0])
            return out

    def _job_summary(self, jobid: int, state: str, caller: str | None) -> dict[str, Any]:
        rec = self.jobs.get(jobid)
        d: dict[str, Any] = {
            "jobid": jobid,
            "state": state,
            "kind": rec.kind if rec is not None else "?",
            "owner": rec.owner if rec is not None else "",
        }
        if rec is None or self.may_act(rec, caller):
            d["name"] = rec.name if rec is not None else ""
            d["holds"] = self._holds(jobid)
        return d

    def stat(self) -> dict[str, Any]:
        with self._lock:
            by_type, free = self._free_and_types()
            return {
                "vertices": len(self.engine.graph),
                "edges": self.engine.graph.rx.num_edges(),
                "jobs": len(self.engine.jobs),
                "children": sum(1 for r in self.jobs.values() if r.kind == "child"),
                "by_type": by_type,
                "free": free,
                "counters": dict(self.counters),
                "uptime_s": time.monotonic() - self.started,
            }

    def graph_jgf(self) -> bytes:
        from fluxlite.readers import graph_to_jgf

        with self._lock:
            return graph_to_jgf(self.engine.graph)

    # ================================================================== persistence
    def state_bytes(self) -> bytes:
        """The whole state as JSON bytes (see :mod:`hierarchy._state`)."""
        doc = {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "name": self.name,
            "depth": self.depth,
            "saved_at": time.time(),
            "engine": orjson.Fragment(self.engine.save_state()),
            "parent": (
                {
                    "address": getattr(self.parent, "address", ""),
                    "jobid": self.parent_jobid,
                    "lease_token": self.parent_token,
                }
                if self.parent is not None
                else None
            ),
            "jobs": [r.public() for r in self.jobs.values()],
            "origins": [o.public() for o in self.origins.values()],
            "requests": [
                {"key": k, **{kk: (vv.decode() if isinstance(vv, bytes) else vv) for kk, vv in r.items()}}
                for k, r in self.requests.items()
            ],
            "ended_requests": [
                {"key": k, **{kk: (vv.decode() if isinstance(vv, bytes) else vv) for kk, vv in r.items()}}
                for k, r in self.ended.items()
            ],
            "owner": self.owner,
            "grow_times": self.grow_times,
            "returning": [
                {**r, "jgf": r["jgf"].decode() if isinstance(r["jgf"], bytes) else r["jgf"]}
                for r in self.returning
            ],
            "next_oid": self._next_oid,
        }
        return orjson.dumps(doc)

    def _persist(self) -> None:
        if self.state_path is None:
            return
        write_atomic(self.state_path, self.state_bytes())

    def save(self) -> None:
        """Write the state file now (no-op without ``state_path``)."""
        with self._lock:
            self._persist()

    @classmethod
    def restore(
        cls,
        state_path: str | Path,
        *,
        parent: Parent | None = None,
        provider: ExternalAPI | None = None,
        **kwargs: Any,
    ) -> Instance:
        """Rebuild an instance from its state file; children get a full grace period to heartbeat again."""
        doc = read_state(state_path)
        try:
            eng = Engine.restore_state(orjson.dumps(doc["engine"]))
        except FluxliteError as exc:
            raise InputError(f"state file {state_path}: engine: {exc}") from exc
        p = doc.get("parent")
        kwargs.setdefault("name", doc.get("name", "instance"))
        kwargs.setdefault("depth", doc.get("depth", 0))
        inst = cls(
            eng,
            parent=parent if p is not None else None,
            parent_jobid=p["jobid"] if p else 0,
            parent_token=p["lease_token"] if p else "",
            provider=provider,
            state_path=state_path,
            **kwargs,
        )
        now = time.monotonic()
        for r in doc["jobs"]:
            inst.jobs[r["jobid"]] = JobRecord(**r, last_seen=now)
        for o in doc["origins"]:
            origin = Origin(o["oid"], o["source"], o["request_id"], o["jobid"], set(o["paths"]))
            inst.origins[origin.oid] = origin
            for path in origin.paths:
                inst._origin_of[path] = origin.oid
        for name, table in (("requests", None), ("ended_requests", inst.ended)):
            for r in doc.get(name, ()):
                r = dict(r)
                key = r.pop("key")
                if isinstance(r.get("jgf"), str):
                    r["jgf"] = r["jgf"].encode()
                if table is None:
                    inst._remember(key, r)
                else:
                    table[key] = r
        if not inst.owner:
            inst.owner = doc.get("owner", "")
        inst.grow_times = {u: list(ts) for u, ts in doc.get("grow_times", {}).items()}
        inst.returning = [{**r, "jgf": r["jgf"].encode()} for r in doc.get("returning", [])]
        inst._next_oid = doc.get("next_oid", len(inst.origins) + 1)
        for key, rec in list(inst.requests.items()):
            if rec.get("state") == "received":  # answered to the child, not attached here before the crash
                inst.log.info("finishing the deferred attach of %s", key)
                inst._finish_received(key, rec)
        inst.log.info(
            "restored from %s: %d vertices, %d jobs, %d origins, %d requests, %d pending hand-backs",
            state_path,
            len(eng.graph),
            len(eng.jobs),
            len(inst.origins),
            len(inst.requests),
            len(inst.returning),
        )
        return inst
