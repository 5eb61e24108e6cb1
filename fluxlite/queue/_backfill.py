"""Backfilling with a reservation depth: the one pass behind fcfs, easy, conservative and hybrid.

Settings (a frozen dataclass; the named policies are presets):

``reservation_depth``  how many pending jobs, in priority order, hold a
                       reservation (0: none, 1: EASY, None: every job)
``backfill``           whether a job may start ahead of one that cannot
                       (False: FCFS stops at the first job that must wait)

Reservations live in the engine (``allocate_orelse_reserve``) and persist
between passes; a held reservation is re-planned only when resources came
back earlier than planned (an early end, a shrink, a cancel) or when its
time has come.  Re-planning cancels it and asks again at ``now``; its old
slot is still free then, so the new start is never later: backfilled jobs
can never delay a reserved job (the property the tests check).  While a
pending job with ``hold_backfill`` waits (ESP's Z jobs) nothing backfills.

Cost per pass: one engine query of the root aggregate per pending job
(O(log spans)), a real match only for jobs that pass it and for the
reservations, and none for a shape (size, walltime) that already failed
since resources were last released (see :meth:`Queue.try_start`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fluxlite.queue._job import Job
    from fluxlite.queue._queue import Queue

__all__ = ["BackfillPolicy"]


@dataclass(frozen=True)
class BackfillPolicy:
    """Priority-ordered pass with ``reservation_depth`` reservations and optional backfilling."""

    name: str
    reservation_depth: int | None = 1
    backfill: bool = True

    def schedule(self, q: Queue, now: int) -> list[Job]:
        started: list[Job] = []
        order = q.ordered_pending()
        depth = self.reservation_depth
        hold = any(j.hold_backfill for j in order)
        backfill = self.backfill and not hold
        if hold:  # a top-priority job waits: it alone plans, nobody else starts before it
            for job in order:
                if not job.hold_backfill:
                    q.drop_reservation(job)
        used = 0
        replan = q.dirty
        for job in order:
            may_reserve = depth is None or used < depth
            if job.resv_at is not None:
                if not may_reserve:
                    q.drop_reservation(job)
                elif (replan or job.resv_at <= now) and q.could_improve(job, now):
                    if q.replan(job, now):
                        started.append(job)
                        continue
                    used += 1
                    if not backfill:
                        break
                    continue
                else:
                    used += 1
                    if not backfill:
                        break
                    continue
            if may_reserve and depth != 0:
                ok = q.start_or_reserve(job, now)
                if not ok:
                    used += 1
            else:
                ok = q.try_start(job, now)
            if ok:
                started.append(job)
                continue
            if not backfill:
                break
        q.dirty = False
        return started
