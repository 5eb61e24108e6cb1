"""Errors specific to nested instances, placed in fluxlite's one exception tree.

::

    FluxliteError
    ├── StateError
    │   └── ForeignResourcesError    a shrink names resources its job does not hold
    └── RpcError
        ├── NotAuthorizedError       refused: no/wrong tree secret, user token or lease token,
        │   │                        or the user may not act on that job
        │   └── LimitError           refused: the user would go over a configured limit
        └── InstanceUnavailableError the instance (or its parent) is down or timed out

Errors raised by a remote instance are re-raised on the calling side with
the same fluxlite type when the server names one (``BusyError`` stays
``BusyError`` across the wire), otherwise as :class:`fluxlite.errors.RpcError`.
"""

from __future__ import annotations

from fluxlite.errors import RpcError, StateError

__all__ = ["ForeignResourcesError", "InstanceUnavailableError", "LimitError", "NotAuthorizedError"]


class ForeignResourcesError(StateError):
    """A shrink names resources that the job it names does not hold at this instance."""


class NotAuthorizedError(RpcError):
    """The call was refused: missing or wrong tree secret, or a wrong lease token."""


class LimitError(NotAuthorizedError):
    """The call would take its user over a configured limit (the message names it); nothing changed."""


class InstanceUnavailableError(RpcError):
    """An instance did not answer in time (down, unreachable, or its deadline passed).

    ``ambiguous`` is True when the call may have been carried out (its
    deadline passed after it was sent); retry it with the same request id.
    """

    ambiguous: bool = False
