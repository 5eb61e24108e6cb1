"""MatchAllocate and MatchGrow: new jobs, and growing a job locally or from above.

``match_allocate`` allocates a job here (a child's lease with
``lease=True``).  ``match_grow`` tries the local engine, then the parent,
then the provider; the answer from above is attached (see
:mod:`hierarchy.instance.origins`) and allocated to the job that asked, or,
with ``defer_attach`` for a child's lease, recorded as *received* and
attached right after the answer by ``_finish_received`` (still under the
lock); so is a grow of this level's own job from the parent that a remote
caller asked for (the caller has its answer one attach sooner).  A grow
going upwards is recorded as *pending* first, so a retry asks again with
the same upstream request id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from fluxlite.errors import (
    BusyError,
    FluxliteError,
    InputError,
    MatchError,
    UnknownJobError,
    UnsatisfiableError,
)
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy._errors import InstanceUnavailableError, LimitError
from hierarchy._jgfsub import jgf_counts
from hierarchy._wire import VERSION as WIRE_VERSION
from hierarchy._wire import WireError, as_jgf, decode, encode, is_columns, payload_version
from hierarchy.base import LevelTiming, MatchOutcome
from hierarchy.instance.core import InstanceCore, _now
from hierarchy.instance.records import JobRecord


class GrowMixin(InstanceCore):
    """See the module docstring."""

    def match_allocate(
        self,
        jobspec: bytes | str,
        *,
        request_id: str = "",
        lease: bool = False,
        child_name: str = "",
        child_address: str = "",
        lease_secret: str = "",
        deadline: float | None = None,
        caller: str | None = None,
    ) -> MatchOutcome:
        """Allocate a new job here (no recursion).  With ``lease`` the job belongs to a child instance.

        The job belongs to ``caller`` (the verified user; None for a trusted in-process call).
        Request ids are scoped to the caller: another user's retry with the same id is a new
        request.  A lease's token is ``lease_secret`` (chosen by the child, never sent back) or
        a new one returned by this call only: a replay of the request id gets no token.
        """
        t0 = _now()
        js = self._parse_jobspec(jobspec)
        if lease_secret and not (
            32 <= len(lease_secret) <= 128 and lease_secret.isascii() and lease_secret.isalnum()
        ):
            raise InputError(
                "lease_secret must be 32 to 128 letters and digits (a random token the child chose)"
            )
        key = f"alloc:{caller or ''}:{request_id}" if request_id else ""
        with self._locked(deadline):
            rec = self._lookup(key) if key else None
            if rec is not None and rec["state"] == "done":
                r = rec["result"]
                answer = self._answer(rec, key)
                self.counters["allocate_replayed"] += 1
                return MatchOutcome(
                    r["jobid"],
                    answer,
                    [LevelTiming(self.name, self.depth, server_s=_now() - t0, outcome="replay")],
                    "",  # a lease token is only ever sent on the call that created it
                    self.child_grace,
                    True,
                    r["vertices"],
                    r["edges"],
                )
            self._check_limits(caller, js, "allocate")
            if self._caps(caller) != (None, None):  # count what the match would take, commit nothing
                dry = self.engine.match(js, op="without_allocating", fmt="jgf")
                if dry.ok:
                    self._check_match(caller, dry.text, "allocation")
            tm = _now()
            res = self.engine.allocate(js, fmt="jgf")
            match_s = _now() - tm
            jgf = res.text.encode()
            at, duration = self._job_window(js)
            token = (lease_secret or secrets.token_hex(16)) if lease else ""
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
                        "result": {"jobid": res.jobid, "vertices": nv, "edges": ne},
                    },
                )
            self.counters["allocate"] += 1
            self._persist()
        who = f"child {child_name or '?'} at {child_address or '?'}" if lease else "a client"
        self.log.info("allocated job %d to %s: %d vertices", res.jobid, who, nv)
        timing = LevelTiming(self.name, self.depth, match_s=match_s, server_s=_now() - t0, outcome="local")
        sent = "" if lease_secret else token
        return MatchOutcome(res.jobid, jgf, [timing], sent, self.child_grace if lease else 0.0, False, nv, ne)

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
        accept_columns: bool | int = False,
    ) -> MatchOutcome:
        """Grow job ``jobid``: locally, else from the parent, else from the provider (see the module docstring).

        ``accept_columns``: the newest version of the columns wire form
        (:mod:`hierarchy._wire`) the caller reads (True: this instance's
        newest; False or 0: none): a grow matched here is answered in it (at
        most this instance's newest) when it can be encoded, and one from
        above is passed on as it came if the caller reads its version.
        Otherwise the answer is JGF.

        For a child's job the subgraph from above is attached after the
        answer (``defer_attach``): ``after_reply`` receives the function that
        starts that work and calls it once the answer is on its way (the
        server's calls it when the RPC ends); by default it starts at once.
        For the level's own job (a remote caller's, see ``_early_answer``)
        ``after_reply.handed`` is used instead where it has one: the server's
        starts the work as soon as the answer is handed to gRPC.  The instance
        stays locked until the work is done.
        """
        t0 = _now()
        # the newest columns version the caller reads (0: JGF only)
        accept = WIRE_VERSION if accept_columns is True else int(accept_columns)
        rid = request_id or secrets.token_hex(16)
        js = self._parse_jobspec(jobspec)
        raw = jobspec.encode() if isinstance(jobspec, str) else jobspec
        deferred = False
        with self._locked(deadline) as hold:
            job = self._job(jobid, lease_token, caller, "grow")
            key = f"grow:{jobid}:{caller or ''}:{rid}"
            rec = self._lookup(key)
            if rec is not None and rec["state"] == "done":
                answer = self._answer(rec, key)
                self.counters["grow_replayed"] += 1
                r = rec["result"]
                return MatchOutcome(
                    jobid,
                    answer if payload_version(answer) <= accept else as_jgf(answer),
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
            counted: tuple[int, int] | None = None
            nv = ne = 0
            local_err: MatchError | None = None
            if rec is None:
                capped = self._caps(caller) != (None, None)
                held = self._footprint(caller) if capped and caller is not None else None
                tm = _now()
                # a caller that reads columns gets them written straight from the match: the JGF text
                # is written only when the match cannot be encoded (a capped caller's check and its
                # undo read the text: written eagerly then)
                w = self.engine.writer("jgf")
                lazy = accept > 0 and not capped and isinstance(w, JgfColumnsWriter)
                try:
                    w.lazy = lazy
                    # with somewhere to ask, the local answer's kind is never reported (the
                    # source's is): no satisfiability walk after a failed local match
                    got = self.engine.grow(jobid, js, fmt="jgf", satisfiability=not self._sources())
                    jgf = b"" if lazy else got.text.encode()
                    counted = getattr(got, "counts", None)
                except (BusyError, UnsatisfiableError) as exc:
                    local_err = exc
                finally:
                    if lazy:
                        w.lazy = False
                match_s = _now() - tm
                if jgf is not None:
                    try:
                        self._check_match(caller, jgf, "grow", held)
                    except LimitError:
                        self.engine.shrink(jobid, jgf=jgf)  # the exact undo of a grow
                        raise
                    if accept:
                        jgf = self._columns_of(jgf, counted, min(accept, WIRE_VERSION))
                        self.counters["grow_answered_columns" if is_columns(jgf) else "grow_answered_jgf"] += 1
            if jgf is not None:
                nv, ne = counted or jgf_counts(jgf)
            else:
                sources = [rec["source"]] if rec is not None else self._sources()
                if not sources:
                    assert local_err is not None
                    raise local_err
                upstream_id = (
                    rec["upstream_id"]
                    if rec is not None
                    else self._upstream_id("grow", jobid, f"{caller or ''}:{rid}")
                )
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
                try:
                    self._check_match(caller, jgf, "grow")
                except LimitError:
                    self._forget(key)
                    self._persist()
                    self._hand_back_now(outcome, jgf, upstream_id)
                    raise
                if self.defer_attach and (
                    job.kind == "child" or self._early_answer(jgf, outcome, after_reply)
                ):
                    # answer now, attach here right after, still under the lock (nothing can see
                    # this level in between): a child attaches the subgraph itself, and a remote
                    # caller of this level's own job has its answer without waiting for the attach
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
                    # a child's grow goes on below while this level attaches: that attach yields
                    # to it (idle priority, once the answer is sent); the attach for this level's own
                    # job is what its caller's next call waits for: it starts as soon as the answer
                    # is handed over (``after_reply.handed``, where the caller offers it)
                    hold.idle = job.kind == "child"
                    hold.starter = after_reply if hold.idle else getattr(after_reply, "handed", after_reply)
                    # a remote child's grow goes on in its own process, beside this attach: it waits
                    # for quiet first (a caller in process, with no after_reply, has it at once)
                    hold.wait = self.idle_wait if hold.idle and after_reply is not None else 0.0
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
            if payload_version(jgf) > accept:
                # a caller that reads only JGF, or an older version (the columns came from above); a
                # deferred attach reads the columns decoded here
                jgf = self._jgf_of(jgf, keep=deferred)
        timing = LevelTiming(
            self.name, self.depth, match_s, attach_s, upstream_s, _now() - t0, outcome, deferred=deferred
        )
        return MatchOutcome(jobid, jgf, [timing, *up_timings], vertices=nv, edges=ne)

    def _early_answer(self, payload: bytes, source: str, after_reply: Callable[..., None] | None) -> bool:
        """Whether a grow of this level's own job may be answered before its attach: for a remote
        caller (``after_reply``), of a columns payload from the parent that decodes (its columns are
        kept for the JGF answer and the attach).  Otherwise the attach comes first, so that its
        failure is the caller's error and the subgraph goes back (a grow from the provider, a call
        in process, JGF from above, a malformed payload)."""
        if after_reply is None or source != "parent" or not is_columns(payload):
            return False
        try:
            self._decoded = (payload, decode(payload))
        except WireError:
            return False
        return True

    def _columns_of(self, jgf: bytes, counted: tuple[int, int] | None, version: int) -> bytes:
        """The columns payload (of ``version``) of the grow the engine just matched; its JGF when
        the match is off what the form describes: ``jgf``, or (``b""``, a lazy match) the text
        written now from what the writer recorded, before anything changes the graph.  O(match)."""
        w = self.engine.writer("jgf")
        g = self.engine.graph
        emitted = getattr(w, "emitted", None)
        if emitted is not None and counted is not None and (len(emitted[0]), len(emitted[3])) == counted:
            got = encode(g, emitted, version)
            if got is not None:
                return got
        return jgf or (w.render(g) + "\n").encode()  # as the engine's emit(): the line

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
            "done_at": time.time(),  # (the wall clock: a caller in another process compares it)
        }
        self._remember(key, {**rec, "state": "done"})
        self.counters[f"grow_{rec['source']}"] += 1
        self._persist()
