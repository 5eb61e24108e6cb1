"""Identity checks and per-user limits: who may act on a job, and how much a user may hold.

``_job`` finds a job and checks the lease token and the caller (its owner,
the instance owner, or a trusted in-process call, see ``may_act``);
``_check_limits`` refuses, before anything changes, a request that would
take a user over ``max_nodes``, ``max_cores`` or ``grows_per_minute``
(:mod:`hierarchy._limits`), and ``_count_grow`` records a grow for the rate
limit.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter

from fluxlite.errors import UnknownJobError
from fluxlite.jobspec import Jobspec
from hierarchy._errors import LimitError, NotAuthorizedError
from hierarchy._limits import request_counts
from hierarchy.instance.core import InstanceCore
from hierarchy.instance.records import JobRecord


class AccessMixin(InstanceCore):
    """See the module docstring."""

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
