"""The one exception tree of fluxlite.

Every error fluxlite raises on purpose derives from :class:`FluxliteError`.
Callers that only want to report a failure catch that; callers that must
react differently to "bad input", "busy now" and "never possible" catch the
specific branches::

    FluxliteError
    ├── InputError                 bad input: the caller must fix something
    │   ├── JobspecError           a jobspec violates RFC 14/25 (names the field)
    │   ├── GraphFormatError       a graph file (JGF, GRUG, R, hwloc) is malformed
    │   └── CommandError           a REPL/CLI command is malformed
    ├── MatchError                 a request could not be placed
    │   ├── BusyError              resources exist but are taken (EBUSY)
    │   ├── UnsatisfiableError     this graph can never satisfy it (ENODEV)
    │   └── DeadlineError          no start time lets the job end by its deadline
    ├── PlannerError               a planner (timeline) operation is invalid
    ├── StateError                 the operation conflicts with current state
    │   └── UnknownJobError        no allocation or reservation with that id
    └── RpcError                   a remote instance failed or refused a call

Context travels as keyword arguments and ends up in the message, so a
message always names the input and field at fault.
"""

from __future__ import annotations

__all__ = [
    "BusyError",
    "CommandError",
    "DeadlineError",
    "FluxliteError",
    "GraphFormatError",
    "InputError",
    "JobspecError",
    "MatchError",
    "PlannerError",
    "RpcError",
    "StateError",
    "UnknownJobError",
    "UnsatisfiableError",
]


class FluxliteError(Exception):
    """Root of every error fluxlite raises deliberately."""

    def __init__(self, message: str, **context: object) -> None:
        self.context = context
        if context:
            detail = ", ".join(f"{k}={v}" for k, v in context.items())
            message = f"{message} ({detail})"
        super().__init__(message)

    @property
    def message(self) -> str:
        return str(self)


class InputError(FluxliteError):
    """The input given by the caller is invalid."""


class JobspecError(InputError):
    """A jobspec is invalid; the message names the offending field."""


class GraphFormatError(InputError):
    """A resource graph document is invalid; the message names the vertex/edge at fault."""


class CommandError(InputError):
    """A command (REPL or CLI) is malformed."""


class MatchError(FluxliteError):
    """A request could not be placed."""


class BusyError(MatchError):
    """The resources exist but are allocated or reserved now (Fluxion's EBUSY)."""


class UnsatisfiableError(MatchError):
    """No state of this graph can ever satisfy the request (Fluxion's ENODEV)."""


class DeadlineError(MatchError):
    """No start time at or after the job's earliest start lets it finish by its deadline."""


class PlannerError(FluxliteError):
    """An invalid planner operation (time out of range, amount exceeds total, unknown span)."""

    def __init__(self, message: str, errno: str = "EINVAL", **context: object) -> None:
        self.errno = errno
        super().__init__(message, **context)


class StateError(FluxliteError):
    """The operation conflicts with the current state (e.g. a job id already in use)."""


class UnknownJobError(StateError):
    """No allocation or reservation exists for the job id."""


class RpcError(FluxliteError):
    """A remote scheduler instance failed, timed out or refused the call."""
