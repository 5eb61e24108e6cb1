"""A job as the queue sees it: its request, credentials, priority and life cycle.

The job never records *which* resources it holds: that is the engine's
state (``Engine.jobs`` and the traverser's spans).  It records the size it
runs at (``size``, in its ``unit``: ``node`` or ``core``) and the history of
that size, because a malleable or evolving job's size is a scheduling fact,
not allocation state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ADAPTING", "CANCELLED", "DONE", "DYNQUEUED", "PENDING", "RUNNING", "Job"]

PENDING = "pending"
RUNNING = "running"
#: a malleable job being expanded or shrunk (no new decisions until it is done)
ADAPTING = "adapting"
#: an evolving job with a pending dynamic request (still running)
DYNQUEUED = "dynqueued"
DONE = "done"
CANCELLED = "cancelled"


@dataclass(eq=False)
class Job:
    """One batch job.  Times are the engine's integer seconds (virtual or wall clock)."""

    jobid: int
    size: int
    walltime: int
    submit: int = 0
    unit: str = "node"
    priority: int = 0
    user: str = ""
    group: str = ""
    account: str = ""
    cls: str = ""
    qos: str = ""
    #: while this job waits no other job may backfill (ESP's Z jobs)
    hold_backfill: bool = False
    kind: str = ""
    # malleable settings (scheduler-initiated resizing)
    malleable: bool = False
    min_size: int = 0
    max_size: int = 0
    constraint: str = "none"
    #: per-node power estimates in watts (power-aware strategy)
    pmin: float = 0.0
    pmax: float = 0.0
    #: MPI-time to compute-time ratio reported by the job (performance-aware strategy)
    mtct: float = 0.0
    evolving: bool = False
    # life cycle
    state: str = PENDING
    start: int | None = None
    end: int | None = None
    #: earliest start the planner promised (a reservation), while it holds one
    resv_at: int | None = None
    #: the first reservation this job was given (checked by the property tests)
    first_resv: int | None = None
    seq: int = 0
    #: (time, size) each time the size changed, starting with the start
    history: list[tuple[int, int]] = field(default_factory=list)
    grants: int = 0
    refusals: int = 0
    dyn_requests: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.min_size <= 0:
            self.min_size = self.size
        if self.max_size <= 0:
            self.max_size = self.size

    @property
    def running(self) -> bool:
        return self.state in (RUNNING, ADAPTING, DYNQUEUED)

    @property
    def planned_end(self) -> int:
        """End of the job's walltime window (what the planner holds)."""
        assert self.start is not None
        return self.start + self.walltime

    def record(self, t: int, size: int) -> None:
        self.size = size
        self.history.append((t, size))
