"""Match policies: which of the qualifying resources a match prefers.

A policy is a frozen :class:`MatchPolicy` of independent settings; a named
policy is a preset over it, and a new policy is usually one line::

    register("lonodex", "policy=low node_centric=true node_exclusive=true")

Settings (the same keys as Fluxion's custom policy strings):

``policy``
    ``high`` (prefer high resource ids), ``low`` (prefer low ids),
    ``locality`` (prefer contiguous id ranges at the top level) or
    ``variation`` (Fluxion's variation-aware policy: prefer vertices of the
    lowest ``perf_class`` property, 9999 when missing or invalid; selected
    by name, ``-P variation``, or as ``policy=variation``).
``node_centric``
    Score a vertex by its node first: resources of the best node win before
    id order inside nodes is considered.
``node_exclusive``
    Allocate every node touched by a job exclusively.
``stop_on_1_matches``
    Stop exploring as soon as enough qualifying resources are found, in the
    order of most available first (Fluxion's ``first``): fast, not optimal.

"is it known?" is ``name in POLICIES``; ``parse_policy`` also accepts a
custom settings string.

Placements (:data:`PLACEMENTS`) are the other kind of policy: the resources
are chosen outside the traverser, by a module above the engine that is
imported only when a placement of its own is used (so the engine never
imports it; the module uses the engine).  ``kind`` ``static``: usable as
``Engine(graph, policy=NAME)`` (whole nodes, advance reservation with a
deadline); ``grow``: usable as ``Engine.grow(..., strategy=NAME)`` and
``Engine.leak_start(..., strategy=NAME)``.  The provider module offers
``placer(engine, policy)``.  A new placement is one line::

    register_placement("snake", "static", "fluxlite.grid.ops")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluxlite.errors import InputError

__all__ = [
    "PLACEMENTS",
    "POLICIES",
    "MatchPolicy",
    "load_placer",
    "parse_policy",
    "placements",
    "register",
    "register_placement",
]


@dataclass(frozen=True, slots=True)
class MatchPolicy:
    """Independent settings of a match policy."""

    name: str
    order: str = "high"  # "high" | "low" | "locality" | "variation"
    node_centric: bool = False
    node_exclusive: bool = False
    stop_on_first: bool = False

    @property
    def descending(self) -> bool:
        """True when higher scores are better."""
        return self.order not in ("low", "variation")


_OPTIONS = ("policy", "node_centric", "stop_on_1_matches", "node_exclusive")

#: name -> settings string (Fluxion's presets)
POLICIES: dict[str, str] = {}


def register(name: str, settings: str) -> None:
    """Register a named policy preset; refuses a name that is already taken."""
    if name in POLICIES:
        raise ValueError(f"match policy {name!r} is already registered")
    _parse_settings(name, settings)  # validate now
    POLICIES[name] = settings


#: name -> (kind, provider module): placements chosen outside the traverser (see the module docstring)
PLACEMENTS: dict[str, tuple[str, str]] = {}
PLACEMENT_KINDS = ("static", "grow")


def register_placement(name: str, kind: str, module: str) -> None:
    """Register a placement ``name`` of ``kind`` (static or grow) provided by ``module``."""
    if name in PLACEMENTS or name in POLICIES:
        raise ValueError(f"policy {name!r} is already registered")
    if kind not in PLACEMENT_KINDS:
        raise ValueError(f"placement kind must be one of {PLACEMENT_KINDS}, got {kind!r}")
    PLACEMENTS[name] = (kind, module)


def placements(kind: str) -> tuple[str, ...]:
    """The registered placement names of ``kind``, in registration order."""
    return tuple(n for n, (k, _m) in PLACEMENTS.items() if k == kind)


def load_placer(name: str) -> Any:
    """The provider module's ``placer`` factory of placement ``name`` (imported now)."""
    import importlib

    return importlib.import_module(PLACEMENTS[name][1]).placer


def _parse_settings(name: str, settings: str) -> MatchPolicy:
    order = None
    flags = {"node_centric": False, "node_exclusive": False, "stop_on_1_matches": False}
    for token in settings.split():
        key, sep, value = token.partition("=")
        if key not in _OPTIONS:
            raise InputError(f"invalid policy option: {key}", policy=name)
        if not sep:
            raise InputError(f"policy option {key} requires a value", policy=name)
        if key == "policy":
            if value not in ("high", "low"):
                raise InputError("policy key within custom policy accepts only low or high", policy=name)
            order = value
        elif value in ("true", "false"):
            flags[key] = value == "true"
        else:
            raise InputError(f"Policy option {key} requires true or false, got {value}", policy=name)
    if order is None:
        raise InputError("custom policy needs policy=low or policy=high", policy=name)
    return MatchPolicy(
        name=name,
        order=order,
        node_centric=flags["node_centric"],
        node_exclusive=flags["node_exclusive"],
        stop_on_first=flags["stop_on_1_matches"],
    )


def parse_policy(spec: str) -> MatchPolicy:
    """Return the policy named ``spec``, or parse ``spec`` as a custom settings string.

    Raises :class:`~fluxlite.errors.InputError` naming the bad option.
    """
    if spec == "locality":
        return MatchPolicy(name="locality", order="locality")
    if spec in ("variation", "policy=variation"):
        return MatchPolicy(name="variation", order="variation")
    settings = POLICIES.get(spec)
    if settings is not None:
        return _parse_settings(spec, settings)
    if "=" not in spec:
        known = ", ".join(sorted([*POLICIES, "locality", "variation"]))
        raise InputError(
            f"unknown match policy {spec!r} (known: {known}; or a custom 'policy=low ...' string)"
        )
    return _parse_settings(spec, spec)


# Built-in presets, registered in one place (Fluxion's dfu_match_policy_factory).
register("first", "policy=high node_centric=true stop_on_1_matches=true")
register("firstnodex", "policy=high node_centric=true node_exclusive=true stop_on_1_matches=true")
register("high", "policy=high")
register("low", "policy=low")
register("lonode", "policy=low node_centric=true")
register("hinode", "policy=high node_centric=true")
register("lonodex", "policy=low node_centric=true node_exclusive=true")
register("hinodex", "policy=high node_centric=true node_exclusive=true")

# Placements chosen outside the traverser (fluxlite.grid: grid allocators with deadlines, leak strategies).
register_placement("hilbert", "static", "fluxlite.grid.ops")
register_placement("manhattan", "static", "fluxlite.grid.ops")
register_placement("count", "static", "fluxlite.grid.ops")
register_placement("leak", "grow", "fluxlite.grid.ops")
register_placement("leak-noncontig", "grow", "fluxlite.grid.ops")
