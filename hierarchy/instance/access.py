"""Identity checks and per-user limits: who may act on a job, and how much a user may hold.

``_job`` finds a job and checks the lease token and the caller (its owner,
the instance owner, or a trusted in-process call, see ``may_act``);
``_check_limits`` refuses, before anything changes, a request that would
take a user over ``max_nodes``, ``max_cores`` or ``grows_per_minute``
(:mod:`hierarchy._limits`) by what the jobspec asks at least, and
``_check_match`` by what the match actually allocates: the distinct nodes
its resources lie on (a jobspec without a node level still occupies nodes)
and the cores, with count ranges at the size the match chose.  A user's
holdings are their instance jobs plus what other services on this instance
(the batch queue) report through ``holders``.  ``_count_grow`` records a
grow for the rate limit.  Limits hold per instance (see the README).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from itertools import compress

from fluxlite.errors import UnknownJobError
from fluxlite.jobspec import Jobspec
from hierarchy._errors import LimitError, NotAuthorizedError
from hierarchy._jgfsub import document_nodes
from hierarchy._limits import request_counts
from hierarchy._wire import as_jgf
from hierarchy.instance.core import InstanceCore
from hierarchy.instance.records import JobRecord


def _footprint_of(jgf: bytes | str, dom: str, what: str) -> tuple[set[str], int]:
    """The node paths (``dom``'s, else the node's first) and the number of cores a match's JGF lists.

    Read by :func:`hierarchy._jgfsub.document_nodes`: column-wise for a match writer's document
    (a fraction of the per-node reader's time, which the attach that follows pays again).
    O(document).
    """
    paths, _ranks, types = document_nodes(jgf, dom, what)
    return {paths[k] for k in compress(range(len(types)), map("node".__eq__, types))}, types.count("core")


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

    def check_job(self, jobid: int, token: str, caller: str | None, op: str) -> None:
        """The checks of ``_job`` without the lock (a stream's head is checked before its body is read)."""
        self._job(jobid, token, caller, op)

    def may_act(self, rec: JobRecord, caller: str | None) -> bool:
        """True if ``caller`` may act on ``rec``: its owner, the instance owner, or a trusted in-process call (None)."""
        return caller is None or caller == rec.owner or (bool(self.owner) and caller == self.owner)

    def _caps(self, caller: str | None) -> tuple[int | None, int | None]:
        """(max_nodes, max_cores) that apply to ``caller`` ((None, None): none)."""
        if self.limits is None or caller is None or (self.owner and caller == self.owner):
            return None, None
        lim = self.limits.for_user(caller)
        return lim.max_nodes, lim.max_cores

    def _user_jobs(self, user: str) -> Iterable[int]:
        for j, rec in self.jobs.items():
            if rec.owner == user and j in self.engine.jobs:
                yield j
        for holder in self.holders:
            yield from holder(user)

    def _footprint(self, user: str) -> tuple[set[int], int]:
        """(node vertices, cores) that ``user``'s jobs occupy here.  O(size of their jobs x depth)."""
        g = self.engine.graph
        dom = self.engine.dom
        nodes: set[int] = set()
        cores = 0
        seen: set[int] = set()
        for j in self._user_jobs(user):
            for v in self.engine.traverser.job_vertices(j):
                if v in seen:
                    continue
                seen.add(v)
                t = g.v_type[v]
                if t == "core":
                    cores += 1
                if t == "node":
                    nodes.add(v)
                else:
                    nodes.update(a for a in g.ancestors(v, dom) if g.v_type[a] == "node")
        return nodes, cores

    def _check_match(
        self, caller: str | None, jgf: bytes | str, what: str, held: tuple[set[int], int] | None = None
    ) -> None:
        """LimitError if the resources in ``jgf`` (a match's answer) take ``caller`` over max_nodes/max_cores.

        ``held`` is the caller's footprint before the match (default: now,
        for a match not committed yet).  The caller undoes the match;
        nothing else changed.
        """
        max_nodes, max_cores = self._caps(caller)
        if max_nodes is None and max_cores is None:
            return
        assert caller is not None
        g = self.engine.graph
        dom = self.engine.dom
        held_nodes, held_cores = held if held is not None else self._footprint(caller)
        new_nodes, new_cores = _footprint_of(as_jgf(jgf) if isinstance(jgf, bytes) else jgf, dom, what)
        held_paths = {g.path(v, dom) for v in held_nodes}
        more = len(new_nodes - held_paths)
        # only an increase is refused: a user the instance owner put over a limit may still use what they hold
        if max_nodes is not None and more and len(held_paths) + more > max_nodes:
            raise LimitError(
                f"user {caller!r} is over the limit max_nodes={max_nodes} at {self.name}: holds "
                f"{len(held_paths)}, the {what} would occupy {more} more; nothing was changed"
            )
        if max_cores is not None and new_cores and held_cores + new_cores > max_cores:
            raise LimitError(
                f"user {caller!r} is over the limit max_cores={max_cores} at {self.name}: holds "
                f"{held_cores}, the {what} would hold {new_cores} more; nothing was changed"
            )

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
        want = request_counts(js)  # the least the match can take: a quick refusal before matching
        nodes, cores = self._footprint(caller)
        held = {"node": len(nodes), "core": cores}
        for typ, cap in caps.items():
            if cap is not None and want.get(typ, 0) and held.get(typ, 0) + want[typ] > cap:
                raise LimitError(
                    f"user {caller!r} is over the limit max_{typ}s={cap} at {self.name}: holds "
                    f"{held.get(typ, 0)}, asks for {want[typ]} more; nothing was changed"
                )

    def _count_grow(self, caller: str | None) -> None:
        if self.limits is not None and caller is not None:
            self.grow_times.setdefault(caller, []).append(time.time())
