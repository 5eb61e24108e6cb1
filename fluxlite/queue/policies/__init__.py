"""The registry of queue policies: name -> factory(reservation_depth=None) -> QueuePolicy."""

from __future__ import annotations

from collections.abc import Callable

from fluxlite.errors import InputError
from fluxlite.queue.base import QueuePolicy
from fluxlite.queue.policies import conservative, easy, fcfs, hybrid

__all__ = ["POLICIES", "create_policy", "register"]

#: name -> factory
POLICIES: dict[str, Callable[..., QueuePolicy]] = {}


def register(name: str, factory: Callable[..., QueuePolicy]) -> None:
    """Add a policy; a name can be registered once."""
    if name in POLICIES:
        raise ValueError(f"queue policy {name!r} is already registered")
    POLICIES[name] = factory


def create_policy(name: str, reservation_depth: int | None = None) -> QueuePolicy:
    """The policy called ``name``; :class:`InputError` naming the known ones otherwise."""
    factory = POLICIES.get(name)
    if factory is None:
        raise InputError(f"unknown queue policy {name!r} (known: {', '.join(POLICIES)})")
    if reservation_depth is not None and reservation_depth < 0:
        raise InputError(f"reservation depth must be >= 0, got {reservation_depth}")
    return factory(reservation_depth=reservation_depth)


register("fcfs", fcfs.create)
register("easy", easy.create)
register("conservative", conservative.create)
register("hybrid", hybrid.create)
