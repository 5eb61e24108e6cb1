"""Leases and liveness: a child's allocation at its parent, kept alive by heartbeats.

``from_parent`` builds a child from a MatchAllocate at its parent (as a
lease, retried with the same request id while the parent is unreachable);
``heartbeat`` renews a child's lease here (no lock); ``tick`` frees the
jobs of children silent for longer than ``child_grace`` and retries pending
hand-backs; ``heartbeat_parent`` renews this instance's own lease, notices
when it is orphaned, and hears of the lease's nodes whose cloud instance
died (then handled as :meth:`CloudMixin.nodes_down` does here).
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Self

from fluxlite.api import Engine
from fluxlite.errors import (
    FluxliteError,
    UnknownJobError,
)
from fluxlite.readers import load_graph
from hierarchy._errors import InstanceUnavailableError, NotAuthorizedError
from hierarchy._release import node_vertices
from hierarchy.base import Parent
from hierarchy.instance.core import InstanceCore


class LeasesMixin(InstanceCore):
    """See the module docstring."""

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
    ) -> Self:
        """A child: MatchAllocate ``jobspec`` at ``parent`` (as a lease) and build the graph from the answer.

        Retries an unreachable parent with the same request id until
        ``timeout`` passes (so it never allocates twice).
        """
        rid = f"{name}-init-{secrets.token_hex(8)}"
        lease_secret = secrets.token_hex(16)  # the lease token: chosen here, never sent back
        deadline = time.monotonic() + timeout
        while True:
            try:
                out = parent.match_allocate(
                    jobspec,
                    request_id=rid,
                    lease=True,
                    child_name=name,
                    child_address=address,
                    lease_secret=lease_secret,
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
            parent_token=lease_secret,
            address=address,
            **kwargs,
        )
        inst.parent_grace = out.grace_s
        return inst

    def heartbeat(self, jobid: int, lease_token: str, caller: str | None = None) -> float:
        """A child's heartbeat for its lease (its owner's or the instance owner's); returns the grace period.

        Takes no lock.
        """
        rec = self.jobs.get(jobid)
        if rec is None or rec.kind != "child":
            raise UnknownJobError(f"instance {self.name} holds no lease {jobid}")
        if not secrets.compare_digest(rec.token.encode(), lease_token.encode()):
            raise NotAuthorizedError(f"lease {jobid} at {self.name}: wrong lease token")
        if not self.may_act(rec, caller):
            raise NotAuthorizedError(
                f"user {caller!r} may not heartbeat lease {jobid} at {self.name}: it belongs to {rec.owner!r}"
            )
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
                n = len(node_vertices(self.engine.graph, self.engine.dom, vids))
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

    def heartbeat_parent(self) -> bool:
        """Send one heartbeat to the parent; False if it did not answer."""
        if self.parent is None:
            return True
        down: list[tuple[str, str, str]] = []
        try:
            status = getattr(self.parent, "lease_status", None)
            if status is not None:  # a parent that names the lease's dead nodes (a gRPC client)
                self.parent_grace, down = status(
                    self.parent_jobid, lease_token=self.parent_token, timeout=min(self.rpc_timeout, 5.0)
                )
            else:
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
        if down:
            self.parent_says_down(down)  # type: ignore[attr-defined]
        return True
