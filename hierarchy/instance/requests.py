"""The request table: what makes grows, allocations and shrinks safe to retry.

A request key (``kind:jobid:id``) maps to its answer for as long as the job
lives (``_remember``, ``_lookup``, ``_forget``); when a job ends its answers
move to a bounded table of the last ones (``_job_ended``).  A grow that
goes upwards uses an upstream id derived from this instance's name, the job
and the request id (``_upstream_id``), so a retry after a crash asks the
parent again with the same id.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hierarchy.instance.core import InstanceCore


class RequestsMixin(InstanceCore):
    """See the module docstring."""

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
