"""The records an instance keeps beside its engine: one per job, one per subgraph attached from above."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["JobRecord", "Origin"]


@dataclass
class JobRecord:
    """What this instance knows about one of its jobs beyond the engine."""

    jobid: int
    kind: str  # "client" | "child"
    name: str = ""
    address: str = ""
    token: str = ""
    at: int = 0
    duration: int | None = None
    #: the user who owns the job ("" when the instance runs without identities)
    owner: str = ""
    #: time.monotonic() of the last heartbeat (children); not persisted
    last_seen: float = field(default=0.0, compare=False)

    def public(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("last_seen")
        return d


@dataclass
class Origin:
    """One subgraph attached from above: where it came from and the paths it created here."""

    oid: int
    source: str  # "parent" | "provider"
    request_id: str
    jobid: int
    paths: set[str]

    def public(self) -> dict[str, Any]:
        return {
            "oid": self.oid,
            "source": self.source,
            "request_id": self.request_id,
            "jobid": self.jobid,
            "paths": sorted(self.paths),
        }
