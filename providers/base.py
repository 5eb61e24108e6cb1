"""The ExternalAPI interface: a source of resources outside the tree, seen as one more parent.

A top-level instance whose own graph cannot satisfy a MatchGrow asks its
provider.  The provider turns the jobspec into external resources and
returns them as a JGF subgraph that hangs under the instance's root (same
root path), so the instance attaches it exactly as it attaches a subgraph
from a parent.  Shrink hands resources back.

Contract:

* ``grow`` is idempotent per ``request_id``: a retried request returns the
  same document and never acquires twice.  It raises
  :class:`fluxlite.errors.BusyError` (nothing free now),
  :class:`fluxlite.errors.UnsatisfiableError` (it can never provide this),
  :class:`fluxlite.errors.JobspecError` (bad jobspec) or another
  :class:`fluxlite.errors.FluxliteError`.
* ``shrink`` releases resources that ``grow`` returned (any whole subtrees
  of them); it raises :class:`fluxlite.errors.StateError` when the document
  names something the provider did not hand out (:class:`NotGrantedError`),
  and changes nothing then.
* ``close`` releases the provider's own resources (files, clients); it is
  idempotent.

A provider's vertices must not collide with the instance's graph: distinct
paths, broker ranks and ``uniq_id`` values.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from fluxlite.errors import StateError

__all__ = ["ExternalAPI", "NotGrantedError"]


class NotGrantedError(StateError):
    """A shrink names resources this provider does not count as granted (never, or no longer).

    A caller retrying a hand-back may drop them: the provider holds nothing there.
    """


@runtime_checkable
class ExternalAPI(Protocol):
    """A provider of external resources (see the module docstring for the contract)."""

    #: short name for logs, e.g. ``"pool:burst.json"``
    name: str

    def grow(self, jobspec: str | bytes, request_id: str) -> bytes:
        """Acquire resources for ``jobspec``; return them as JGF bytes (orjson text)."""
        ...

    def shrink(self, jgf: str | bytes) -> None:
        """Give back the resources listed in ``jgf``."""
        ...

    def close(self) -> None:
        """Release whatever the provider holds open."""
        ...
