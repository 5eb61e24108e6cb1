"""Shrink, Release and hand-backs: giving resources up, locally and upwards.

``shrink`` releases part of a job (named by JGF or by paths, all held by
the job), ``release`` the whole job; whatever came from above and is now
wholly free is detached and handed back (``_hand_back``: parent first, each
hand-back written to the state file before the upstream call).  A parent
that does not answer a shrink gets the release undone (``_undo_release``);
otherwise the vertices are marked down as a pending hand-back
(``_pending``) and ``retry_returns`` sends it again with the same request
id.  ``_hand_back_now`` returns a subgraph that could not be attached.
A hand-back to a parent that asked for the columns wire form is written in
it (``_hand_back_document``), and a shrink reads a document in that form
as it reads JGF (``_paths_and_ranks``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any

from fluxlite.api import ATTACH_COLUMNS_MIN_BYTES
from fluxlite.errors import (
    FluxliteError,
    InputError,
    UnknownJobError,
)
from hierarchy._errors import ForeignResourcesError, InstanceUnavailableError, NotAuthorizedError
from hierarchy._jgfsub import document_nodes, subgraph_jgf
from hierarchy._release import node_vertices, release_set, release_vertices, vertices_held
from hierarchy._wire import as_jgf, decode, encode_subgraph, is_columns
from hierarchy.base import LevelTiming, ReleaseOutcome, ShrinkOutcome
from hierarchy.instance import cloud
from hierarchy.instance.core import InstanceCore, _now
from hierarchy.instance.records import JobRecord
from providers.base import NotGrantedError

#: a shrink document this long is read column-wise first (as the engine's attach does)
_COLUMNS_MIN_BYTES = ATTACH_COLUMNS_MIN_BYTES


def _paths_and_ranks(jgf: bytes, dom: str) -> Iterable[tuple[str, int]]:
    """Each node of a shrink document as (its path in ``dom``, else its first path; its rank), read by
    :func:`hierarchy._jgfsub.document_nodes` (column-wise for a match's JGF: a 64-node shrink's
    document is read at every level it climbs).  A child's hand-back in the columns wire form is
    decoded, every value checked (:class:`hierarchy._wire.WireError` otherwise): the same pairs as
    its JGF.  O(document)."""
    if is_columns(jgf):
        cols = decode(jgf)
        (paths,) = cols.paths.values()  # (the form has one subsystem, and a path per node)
        return zip(paths, cols.rank)
    paths, ranks, _types = document_nodes(jgf, dom, "shrink request", columns_from=_COLUMNS_MIN_BYTES)
    return zip(paths, ranks)


class HandBackMixin(InstanceCore):
    """See the module docstring."""

    #: hand back to the parent in the columns wire form where it asks for that form (False once
    #: the parent turned a columns document away)
    _columns_up: bool = True

    def _shrink_vertices(self, jobid: int, jgf: bytes, paths: Sequence[str]) -> list[int]:
        """Vertices named by a JGF document or by paths (subtrees), all held by ``jobid`` (else ForeignResourcesError)."""
        g = self.engine.graph
        dom = self.engine.dom
        vids: list[int] = []
        if jgf:
            docv: list[int] = []
            for p, rank in _paths_and_ranks(jgf, dom):
                v = g.vertex_by_path(p)
                if rank < 0:
                    # Rank -1: a rank-less ancestor (the cluster, shared, left out below) or, in a
                    # match writer's JGF (a child's hand-back), a socket or core below its node.
                    if v is not None:
                        docv.append(v)
                    continue
                if v is None or g.v_rank[v] != rank:
                    raise ForeignResourcesError(
                        f"job {jobid} does not hold {p}: not in the graph of {self.name}"
                    )
                docv.append(v)
            vids.extend(node_vertices(g, dom, docv))
        for p in paths:
            v = g.vertex_by_path(p)
            if v is None:
                raise ForeignResourcesError(f"job {jobid} does not hold {p}: not in the graph of {self.name}")
            sub = node_vertices(g, dom, g.subtree(v, dom))
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
            key = f"shrink:{jobid}:{caller or ''}:{rid}"
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
            # what will go: a named vertex that keeps a held child which is not named stays
            vids = release_set(self.engine, jobid, self._shrink_vertices(jobid, jgf, paths), in_nodes=True)
            cloud.refuse_partial(self.engine, jobid, vids)
            self._preflight(vids, deadline)
            undo = self._items_of(jobid, vids) if self.parent is not None else []
            ta = _now()
            gone = release_vertices(self.engine, jobid, vids)  # vids is release_set's answer
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
            subs = [g.subtree(r, dom) for r in roots]
            vids = [u for sub in subs for u in sub]
            # node_vertices(g, dom, vids): a root in a node's subtree has all of its subtree there
            in_nodes = set(node_vertices(g, dom, roots))
            docv = [u for r, sub in zip(roots, subs) for u in (sub if r in in_nodes else node_vertices(g, dom, sub))]
            item = {
                "request_id": secrets.token_hex(16),
                "source": source,
                "roots": self._paths(roots),
                "jgf": self._hand_back_document(source, docv),
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

    def _hand_back_document(self, source: str, vids: list[int]) -> bytes:
        """The document naming ``vids`` for their source: to a parent we ask for the columns wire form
        (``accept_columns``), in that form (a third of the JGF's writing and reading), else JGF."""
        g = self.engine.graph
        if source == "parent" and self._columns_up and getattr(self.parent, "accept_columns", False):
            payload = encode_subgraph(g, vids, self.engine.dom)
            if payload is not None:
                return payload
        return subgraph_jgf(g, vids)

    def _parent_shrink(self, item: dict[str, Any], deadline: float | None) -> Any:
        """The parent's Shrink of ``item``.  A parent that turns a columns document away as input (an
        instance from before shrinks read the form) is asked again with its JGF, which ``item`` then
        keeps, and this level writes JGF to the parent from then on."""
        assert self.parent is not None
        for attempt in (0, 1):
            try:
                return self.parent.shrink(
                    self.parent_jobid,
                    jgf=item["jgf"],
                    lease_token=self.parent_token,
                    request_id=item["request_id"],
                    timeout=self._timeout(deadline),
                )
            except InputError:
                if attempt or not is_columns(item["jgf"]):
                    raise
                self.log.info("the parent did not take a columns shrink document; sending JGF from now on")
                item["jgf"] = as_jgf(item["jgf"])
                self._columns_up = False
        raise AssertionError("unreachable")  # pragma: no cover

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
                out = self._parent_shrink(item, deadline)
                return True, out.timings
            if self.provider is not None:
                self.provider.shrink(as_jgf(item["jgf"]))  # (always JGF: see _hand_back_document)
            return True, []
        except (ForeignResourcesError, UnknownJobError, NotAuthorizedError, NotGrantedError) as exc:
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
            if item["source"] == "provider":  # draining: held here, down, retried with backoff
                cloud.note_failure(item, exc)
                item["roots"] = cloud.narrow_to_whole(self.engine, item["roots"])
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
        """What ``jobid`` holds on ``vids`` as (vertex, units, exclusive), to undo a release.  O(job).

        Each item's vertex is the one its path names (``Engine.job_items`` gives paths).  On a graph of
        one subsystem where no ranks share a path, that is the item's own vertex, so only the items
        on ``vids`` are built; otherwise every item's path is looked up.
        """
        g = self.engine.graph
        want = set(vids)
        if len(g.paths) == 1 and not g.shared:
            return self.engine._job_item_vertices(jobid, within=want)
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
        present = [p for p in item["roots"] if g.vertex_by_path(p) is not None]
        # all the roots in one removal: the ancestors' aggregates are updated once, not once a root
        n = len(self.engine.remove_subgraph(paths=present)) if present else 0
        self._drop_origin_paths(item["roots"])
        self.returning = [r for r in self.returning if r is not item]
        return n

    def retry_returns(self, *, force: bool = False) -> int:
        """Retry the pending hand-backs (draining ones once their backoff is over, or ``force``); returns how many completed."""
        done = 0
        with self._lock:
            for item in list(self.returning):
                if not force and not cloud.due(item):
                    continue
                ok, _ = self._send_back(item, time.monotonic() + self.rpc_timeout)
                if ok:
                    self._finish_return(item)
                    done += 1
            if done:
                self.log.info("completed %d pending hand-backs", done)
                self._persist()
        return done

    def _hand_back_now(self, source: str, jgf: bytes, upstream_id: str) -> None:
        """Best effort: give a subgraph we could not use back to where it came from."""
        try:
            jgf = as_jgf(jgf)  # a columns payload goes back as its JGF (WireError: unreadable, logged)
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
