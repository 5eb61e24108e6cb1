"""The narrow interface an instance uses to talk to its parent, and the results it gets back.

An :class:`~hierarchy.Instance` never touches gRPC: it calls a
:class:`Parent`.  :class:`~hierarchy.InstanceClient` is the gRPC
implementation; tests or other transports can supply another one.

Contracts shared by every implementation:

* all calls take ``timeout`` (seconds) and raise
  :class:`~hierarchy.InstanceUnavailableError` when it passes or the peer is
  down; nothing else is retried implicitly;
* ``match_grow`` and ``match_allocate`` are idempotent per ``request_id``: a
  retried request returns the same JGF and never allocates twice;
* errors the peer reports keep their fluxlite type (``BusyError``,
  ``UnsatisfiableError``, ``UnknownJobError``, ``ForeignResourcesError``,
  ``NotAuthorizedError``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["LevelTiming", "MatchOutcome", "Parent", "ReleaseOutcome", "ShrinkOutcome"]


#: how long a child's deferred attach waits, by default, for the grow below to finish before it starts
#: (seconds; ``hierarchy.instance.core.TurnLock``): about five times a 64-node grow's way down from a
#: level on the machines measured (docs/hierarchy.md, "Deferred attach")
IDLE_WAIT_S = 0.05


@dataclass
class LevelTiming:
    """Server-side times of one instance for one call, in seconds (see the proto)."""

    instance: str
    depth: int
    match_s: float = 0.0
    attach_update_s: float = 0.0
    upstream_s: float = 0.0
    server_s: float = 0.0
    outcome: str = ""
    #: the attach+update at this level ran after the reply (see Instance.match_grow)
    deferred: bool = False


@dataclass
class MatchOutcome:
    """The answer to MatchAllocate or MatchGrow."""

    jobid: int
    jgf: bytes
    timings: list[LevelTiming] = field(default_factory=list)
    lease_token: str = ""
    grace_s: float = 0.0
    replayed: bool = False
    vertices: int = 0
    edges: int = 0
    #: round trip measured by the caller (0 when the call was not remote)
    rtt_s: float = 0.0


@dataclass
class ShrinkOutcome:
    """The answer to Shrink."""

    job_gone: bool
    released: int = 0
    returned: int = 0
    pending: int = 0
    replayed: bool = False
    timings: list[LevelTiming] = field(default_factory=list)
    rtt_s: float = 0.0


@dataclass
class ReleaseOutcome:
    """The answer to Release."""

    returned: int = 0
    pending: int = 0
    timings: list[LevelTiming] = field(default_factory=list)
    rtt_s: float = 0.0


class Parent(Protocol):
    """What a child instance needs from its parent."""

    address: str

    def match_allocate(
        self,
        jobspec: bytes,
        *,
        request_id: str,
        lease: bool = False,
        child_name: str = "",
        child_address: str = "",
        lease_secret: str = "",
        timeout: float | None = None,
    ) -> MatchOutcome:
        """Allocate a new job; with ``lease`` the job lives only while the caller heartbeats.

        ``lease_secret`` is the lease token the child chose (never sent back);
        without it the parent makes one and returns it on this call only.
        """
        ...

    def match_grow(
        self,
        jobid: int,
        jobspec: bytes,
        *,
        request_id: str,
        lease_token: str = "",
        timeout: float | None = None,
    ) -> MatchOutcome:
        """Grow job ``jobid``; the JGF holds only the new resources."""
        ...

    def shrink(
        self,
        jobid: int,
        *,
        jgf: bytes = b"",
        paths: Sequence[str] = (),
        lease_token: str = "",
        request_id: str = "",
        timeout: float | None = None,
    ) -> ShrinkOutcome:
        """Release part of job ``jobid`` (resources it holds there, else ForeignResourcesError)."""
        ...

    def release(self, jobid: int, *, lease_token: str = "", timeout: float | None = None) -> ReleaseOutcome:
        """Release the whole job."""
        ...

    def heartbeat(self, jobid: int, *, lease_token: str = "", timeout: float | None = None) -> float:
        """Keep a lease alive; returns the parent's grace period in seconds."""
        ...

    def health(self, *, timeout: float | None = None) -> dict[str, Any]:
        """Liveness: name, depth, pid and parent of the peer."""
        ...

    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...
