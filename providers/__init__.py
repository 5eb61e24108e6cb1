"""ExternalAPI providers: sources of resources outside the tree (a provider acts as a parent).

A provider is named by a spec ``KIND:ARGUMENT`` and built by
:func:`create_provider` from the registry :data:`PROVIDERS`::

    from providers import create_provider
    p = create_provider("pool:burst.json")          # a JGF pool file
    jgf = p.grow(jobspec_text, request_id="r1")     # BusyError / UnsatisfiableError if it cannot
    p.shrink(jgf)

The interface is :class:`providers.base.ExternalAPI`; ``pool`` is built in
(:class:`providers.pool.PoolProvider`), and so is ``ec2`` (:class:`providers.ec2.Ec2Provider`,
Amazon EC2 and EC2 Fleet through boto3).
Providers may use ``fluxlite`` and ``jgf``, never gRPC.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fluxlite.errors import InputError
from providers.base import ExternalAPI
from providers.pool import PoolProvider

__all__ = ["PROVIDERS", "ExternalAPI", "PoolProvider", "ProviderFactory", "create_provider", "register"]

#: A provider factory: ``factory(argument, state_path)`` -> provider.
ProviderFactory = Callable[[str, "Path | None"], ExternalAPI]

#: Provider kind -> factory.
PROVIDERS: dict[str, ProviderFactory] = {}


def register(kind: str, factory: ProviderFactory) -> None:
    """Add a provider kind; a kind already registered is refused."""
    if kind in PROVIDERS:
        raise ValueError(f"provider {kind!r} is already registered")
    PROVIDERS[kind] = factory


def create_provider(spec: str, *, state_path: str | Path | None = None) -> ExternalAPI:
    """Build the provider named by ``KIND:ARGUMENT`` (InputError for an unknown kind or bad argument).

    ``state_path`` is where the provider may keep its own state across
    restarts (the instance passes one when it runs with ``--state``).
    """
    kind, sep, arg = spec.partition(":")
    if not sep or not arg:
        raise InputError(f"provider {spec!r}: expected KIND:ARGUMENT, e.g. pool:FILE")
    factory = PROVIDERS.get(kind)
    if factory is None:
        raise InputError(f"provider {spec!r}: unknown kind {kind!r} (known: {', '.join(sorted(PROVIDERS))})")
    return factory(arg, Path(state_path) if state_path is not None else None)


register("pool", lambda arg, state_path: PoolProvider(arg, state_path=state_path))


def _ec2(arg: str, state_path: Path | None) -> ExternalAPI:
    from providers.ec2 import Ec2Provider  # boto3 is imported only when an ec2 provider is made

    return Ec2Provider.from_config(arg)


register("ec2", _ec2)
