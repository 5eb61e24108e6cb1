"""The interface of a queue policy: one scheduling pass over the pending jobs.

A policy decides, at time ``now`` (integer seconds of whatever clock drives
the queue: virtual in the simulator, wall clock in an instance), which
pending jobs start and which get a reservation.  It never touches the
resource graph itself: it asks the :class:`~fluxlite.queue.Queue`, which
asks the engine (``allocate`` / ``allocate_orelse_reserve`` / ``cancel``
through the planner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from fluxlite.queue._job import Job
    from fluxlite.queue._queue import Queue

__all__ = ["QueuePolicy"]


@runtime_checkable
class QueuePolicy(Protocol):
    """One queue discipline (``fcfs``, ``easy``, ``conservative``, ``hybrid``)."""

    #: the registry name
    name: str
    #: how many pending jobs (in priority order) hold a reservation; None = all
    reservation_depth: int | None

    def schedule(self, q: Queue, now: int) -> list[Job]:
        """Start what may start at ``now``; return the jobs started, in start order.

        Contract: a job that held a reservation at time ``R`` before the pass
        holds one at a time ``<= R`` after it (or has started), as long as no
        job of higher priority arrived; a failed start changes nothing.
        """
        ...
