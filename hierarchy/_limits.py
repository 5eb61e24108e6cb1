"""Per-user limits of an instance (optional): nodes and cores held at once, grows per minute.

A limits file (YAML or JSON, ``fluxlite instance serve --limits FILE``)::

    default:                 # every user not listed below (optional)
      max_nodes: 8
      max_cores: 256
      grows_per_minute: 30
    users:
      alice: {max_nodes: 2}
      bob: {grows_per_minute: 5}

A user's own entry replaces the default key by key; a missing key (or
``null``) means "no limit".  The instance owner is exempt.  A request that
would take its user over a limit is refused with :class:`LimitError`
naming the limit, and nothing changes.  Requests are counted as the
jobspec asks (its minimum counts, multiplied down the tree), like Slurm's
TRES limits, so a limit is checked before anything is allocated anywhere.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from fluxlite.errors import InputError
from fluxlite.jobspec import Jobspec

__all__ = ["Limits", "UserLimits", "request_counts"]


@dataclass(frozen=True)
class UserLimits:
    """The limits of one user (None: no limit)."""

    max_nodes: int | None = None
    max_cores: int | None = None
    grows_per_minute: int | None = None


_KEYS = {f.name for f in fields(UserLimits)}


def _user_limits(doc: Any, where: str, base: UserLimits) -> UserLimits:
    if doc is None:
        return base
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a mapping of {', '.join(sorted(_KEYS))}")
    out = base
    for key, value in doc.items():
        if key not in _KEYS:
            raise InputError(f"{where}.{key}: unknown limit (known: {', '.join(sorted(_KEYS))})")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InputError(f"{where}.{key}: expected a non-negative integer or null, got {value!r}")
        out = replace(out, **{key: value})
    return out


class Limits:
    """Limits by user, from a file or a dict (see the module docstring)."""

    def __init__(self, default: UserLimits | None = None, users: dict[str, UserLimits] | None = None) -> None:
        self.default = default or UserLimits()
        self.users = dict(users or {})

    @classmethod
    def from_dict(cls, doc: Any, source: str = "limits") -> Limits:
        if not isinstance(doc, dict):
            raise InputError(f"{source}: expected a mapping with 'default' and/or 'users'")
        for key in doc:
            if key not in ("default", "users"):
                raise InputError(f"{source}.{key}: unknown key (expected 'default' and/or 'users')")
        default = _user_limits(doc.get("default"), f"{source}.default", UserLimits())
        users_doc = doc.get("users") or {}
        if not isinstance(users_doc, dict):
            raise InputError(f"{source}.users: expected a mapping user -> limits")
        users = {str(u): _user_limits(d, f"{source}.users.{u}", default) for u, d in users_doc.items()}
        return cls(default, users)

    @classmethod
    def from_file(cls, path: str | Path) -> Limits:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise InputError(f"cannot read limits file {path}: {exc.strerror or exc}") from exc
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"limits file {path}: not YAML/JSON ({exc})") from exc
        return cls.from_dict(doc, source=str(path))

    def for_user(self, user: str) -> UserLimits:
        return self.users.get(user, self.default)


def request_counts(js: Jobspec) -> Counter[str]:
    """How many of each resource type ``js`` asks for at least (minimum counts, multiplied down the tree)."""
    out: Counter[str] = Counter()

    def walk(resources: Any, mult: int) -> None:
        for r in resources:
            m = mult * max(1, int(r.count.min))
            if r.type != "slot":
                out[r.type] += m
            walk(r.with_, m)

    walk(js.resources, 1)
    return out
