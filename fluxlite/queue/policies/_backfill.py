"""Backfilling with a reservation depth: the one pass behind fcfs, easy, conservative and hybrid.

Settings (a frozen dataclass; the named policies are presets):

``reservation_depth``  how many pending jobs, in priority order, hold a
                       reservation (0: none, 1: EASY, None: every job)
``backfill``           whether a job may start ahead of one that cannot
                       (False: FCFS stops at the first job that must wait)

Each pass rebuilds the plan from what runs now, in priority order, as
Slurm's backfill pass and Maui's iteration do, by compression (Mu'alem &
Feitelson): each job in turn gives back its own reservation and starts if
it fits now, else (while fewer than ``reservation_depth`` jobs hold one) is
reserved at its earliest start on the nodes that free up first
(:meth:`Queue.start_or_reserve`) while the lower-ranked jobs still hold
theirs, so its old slot is free and no reservation moves later; a job
beyond the depth starts only if it fits around the reservations.  So the
head job starts as soon as it fits, and reservations follow resources that
come back early.  A job backfilled in an earlier pass was placed around
every reservation then held, so that placement is still free when the
plan is rebuilt: a reservation never moves later because of backfilling
(only a job of higher priority arriving, or a resource going down, can
push it; the property tests check this).  While a pending job with
``hold_backfill`` waits (ESP's Z jobs) nothing else starts or reserves.

With a finite depth (EASY, hybrid) the plan is kept instead of rebuilt when nothing but lower-ranked arrivals
happened since the pass that made it (no start, end, cancel or resize, no
reservation due, and that pass started nothing after its first
reservation): a rebuild would then give the same plan
(:meth:`Queue.new_since_plan` says why; a test compares both on random
traces), so only the new jobs are placed.

Cost per rebuilt pass: one cancel and one earliest-fit placement per
reservation (``reservation_depth`` of them, all pending jobs for
conservative), one root-aggregate query per other pending job (O(log
spans)) and a real match only for jobs that pass it, none for a shape
(size, walltime) that already failed in the pass (see
:meth:`Queue.try_start`).  A whole-node reservation's time comes from the
root aggregate's earliest-time search (``PlannerMulti`` skips the
candidates the node count cannot serve, ``Planner.fit_time``) and its nodes
from the pass's span index (:mod:`fluxlite.queue._spanindex`, O(log spans)
per node); only a job whose count fits but whose nodes do not (the free
nodes change within its window) goes through the engine's earliest-fit
walk, which still reads every node's spans per candidate time.  ``fluxlite
sim batch bench-pass`` measures it at queue depths 100, 1,000 and 10,000.
"""

from __future__ import annotations

from dataclasses import dataclass

from fluxlite.queue._job import Job
from fluxlite.queue.base import PolicyQueue

__all__ = ["BackfillPolicy"]


@dataclass(frozen=True)
class BackfillPolicy:
    """Priority-ordered pass with ``reservation_depth`` reservations and optional backfilling."""

    name: str
    reservation_depth: int | None = 1
    backfill: bool = True

    #: keep the last plan when nothing but lower-ranked arrivals changed (:meth:`Queue.new_since_plan`)
    incremental: bool = True

    def schedule(self, q: PolicyQueue, now: int) -> list[Job]:
        depth = self.reservation_depth
        # conservative compresses every pass: re-placing a job among reservations made after it
        # may pick other nodes than it had, so its kept plan is not the rebuilt one
        new = q.new_since_plan(now) if self.incremental and depth is not None else None
        if new is not None:  # the plan holds: only the new jobs, after the old ones, remain
            old = q.ordered_pending()[: -len(new) or None] if new else q.ordered_pending()
            if not new or (old and (not self.backfill or any(j.hold_backfill for j in old))):
                q.plan_done()
                return []
            order, reserved = new, sum(1 for j in old if j.resv_at is not None)
            backfill = self.backfill
        else:
            order = q.ordered_pending()
            hold = any(j.hold_backfill for j in order)
            backfill = self.backfill and not hold
            # the plan is rebuilt in priority order; reservations beyond the depth (or all but the
            # held job's while one holds backfilling) are given back first
            for k, job in enumerate(order):
                if (hold and not job.hold_backfill) or (depth is not None and k >= depth):
                    q.drop_reservation(job)
            reserved = 0
        started: list[Job] = []
        # a start after a reservation changes what the reservation saw as idle: then the plan is
        # not a fixed point and the next pass rebuilds it (see Queue.new_since_plan)
        settled = True
        for job in order:
            if depth != 0 and (depth is None or reserved < depth):
                # compression (Mu'alem & Feitelson): the job gives back only its own reservation
                # and is placed again while the lower-ranked ones still hold theirs, so its old
                # slot is free and no reservation ever moves later
                q.drop_reservation(job)
                ok = q.start_or_reserve(job, now)
                if not ok:
                    reserved += 1
            else:
                ok = q.try_start(job, now)
            if ok:
                started.append(job)
                settled = settled and reserved == 0
            elif not backfill:
                break
        q.dirty = False
        if settled:
            q.plan_done()
        return started
