"""The interface of a queue policy: one scheduling pass over the pending jobs.

A policy decides, at time ``now`` (integer seconds of whatever clock drives
the queue: virtual in the simulator, wall clock in an instance), which
pending jobs start and which get a reservation.  It never touches the
resource graph itself: it asks the queue (:class:`PolicyQueue`, the few
operations a pass needs), which asks the engine (``allocate`` /
``allocate_orelse_reserve`` / ``cancel`` through the planner).

Data flows one way: ``_job`` <- ``base`` <- ``policies`` <- ``_queue``.  This
module names what a policy may call on the queue as a protocol, so neither
it nor any policy imports the queue; a new policy is added in one place,
the registry (:mod:`fluxlite.queue.policies`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from fluxlite.queue._job import Job

__all__ = ["PolicyQueue", "QueuePolicy"]


class PolicyQueue(Protocol):
    """What a policy's pass may ask of the queue (:class:`fluxlite.queue.Queue` implements it)."""

    #: resources came back earlier than planned since the last pass (end, cancel, shrink)
    dirty: bool

    def ordered_pending(self) -> list[Job]:
        """Pending jobs, highest priority first, then by arrival."""
        ...

    def try_start(self, job: Job, now: int) -> bool:
        """Start ``job`` at ``now`` if the engine finds room; never reserves."""
        ...

    def start_or_reserve(self, job: Job, now: int) -> bool:
        """Start ``job`` now, else reserve it at the earliest time (True if it started)."""
        ...

    def drop_reservation(self, job: Job) -> None:
        """Give back ``job``'s reservation (a no-op without one)."""
        ...

    def new_since_plan(self, now: int) -> list[Job] | None:
        """Jobs submitted since the last plan if that plan still holds, else None (rebuild)."""
        ...

    def plan_done(self) -> None:
        """Record that a pass finished its plan."""
        ...


@runtime_checkable
class QueuePolicy(Protocol):
    """One queue discipline (``fcfs``, ``easy``, ``conservative``, ``hybrid``)."""

    #: the registry name
    name: str
    #: how many pending jobs (in priority order) hold a reservation; None = all
    reservation_depth: int | None

    def schedule(self, q: PolicyQueue, now: int) -> list[Job]:
        """Start what may start at ``now``; return the jobs started, in start order.

        Contract: the head job starts as soon as it fits; a job that held a
        reservation at time ``R`` before the pass holds one at a time ``<= R``
        after it (or has started), as long as no job of higher priority
        arrived and no resource went down; a failed start changes nothing.
        """
        ...
