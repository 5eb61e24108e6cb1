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
"""

from __future__ import annotations

from dataclasses import dataclass

from fluxlite.errors import InputError

__all__ = ["POLICIES", "MatchPolicy", "parse_policy", "register"]


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
