"""The request table: what makes grows, allocations and shrinks safe to retry.

A request key (``kind:jobid:id``) maps to its answer for as long as the job
lives (``_remember``, ``_lookup``, ``_forget``); when a job ends its answers
move to a bounded table of the last ones (``_job_ended``).  A live job keeps
the resources of its last ``request_table_size`` answered requests; an older
one keeps a record without them (a replay of it is refused, never served
again: ``_answer``), and the oldest of those go once the job has
``RECORDS_PER_ANSWER`` times as many, so a job that grows and shrinks for
weeks holds a bounded table (each answer of a 64-node grow is 90-410 KB,
and every save of the state file writes every record).  A grow that goes
upwards uses an upstream id derived from this instance's name, the job and
the request id (``_upstream_id``), so a retry after a crash asks the parent
again with the same id.
"""

from __future__ import annotations

import hashlib
from typing import Any

from fluxlite.errors import StateError
from hierarchy.instance.core import InstanceCore

#: a live job keeps at most this many records per answer it keeps (see the module docstring)
RECORDS_PER_ANSWER = 4


class RequestsMixin(InstanceCore):
    """See the module docstring."""

    def _upstream_id(self, kind: str, jobid: int, rid: str) -> str:
        return hashlib.blake2b(f"{self.name}|{kind}|{jobid}|{rid}".encode(), digest_size=16).hexdigest()

    def _remember(self, key: str, rec: dict[str, Any]) -> None:
        """Keep the answer to request ``key`` while its job lives (the last ones: see the module
        docstring and :meth:`_job_ended`)."""
        self.requests[key] = rec
        keys = self._job_requests.setdefault(rec["jobid"], {})
        keys[key] = None  # (in the order the requests came, as the table's: a state file's order)
        if len(keys) > self.request_table_size:
            self._trim_job_requests(keys)

    def _trim_job_requests(self, keys: dict[str, None]) -> None:
        """Drop the resources of a job's answered requests but the last ``request_table_size``, and the
        oldest of those records past ``RECORDS_PER_ANSWER`` times that.  Pending and received records
        (a grow on its way, an attach to finish after a crash) are kept whole.  O(job's records)."""
        reqs = self.requests
        keep = self.request_table_size
        answered = [
            k for k in keys if (r := reqs.get(k)) is not None and r.get("state") == "done" and "jgf" in r
        ]
        for k in answered[: max(0, len(answered) - keep)]:
            reqs[k] = {f: v for f, v in reqs[k].items() if f != "jgf"}
        extra = len(keys) - RECORDS_PER_ANSWER * keep
        if extra > 0:
            # done and without resources: an answer dropped above, or a request that had none (a shrink)
            old = [
                k for k in keys if (r := reqs.get(k)) is None or (r.get("state") == "done" and "jgf" not in r)
            ]
            for k in old[:extra]:
                reqs.pop(k, None)
                del keys[k]

    def _answer(self, rec: dict[str, Any], key: str) -> bytes:
        """The resources a done request was answered with, for its replay; StateError when they are no
        longer kept (only a job's last ``request_table_size`` answers are)."""
        got = rec.get("jgf")
        if got is None:
            raise StateError(
                f"request {key.rsplit(':', 1)[-1][:64]!r} was served already; its answer is no longer kept "
                f"(only the last {self.request_table_size} of a job are): not served again"
            )
        return got  # type: ignore[no-any-return]

    def _lookup(self, key: str) -> dict[str, Any] | None:
        rec = self.requests.get(key)
        return rec if rec is not None else self.ended.get(key)

    def _forget(self, key: str) -> None:
        rec = self.requests.pop(key, None)
        if rec is not None:
            keys = self._job_requests.get(rec["jobid"])
            if keys is not None:
                keys.pop(key, None)

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
