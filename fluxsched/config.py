"""The module's settings: ``key=value`` load arguments, or a ``[sched-fluxlite]`` table in the broker config.

Names follow ``fluxlite query`` (``policy`` is ``-P``, ``prune-filters`` is
``-p``) and Fluxion's qmanager (``queue-policy``, ``reservation-depth``);
``queue-depth`` is RFC 27's ``unlimited`` or ``limited`` mode as in flux-core's
own schedulers.  Arguments given to ``flux module load`` win over the config
table.  Bad values raise :class:`~fluxlite.errors.InputError` with one line,
so the load fails with that line and the previous scheduler stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fluxlite.errors import InputError

__all__ = ["KEYS", "Settings", "parse_settings"]

#: key -> help text (the ``--help`` of the module, printed by ``fluxlite-flux options``)
KEYS: dict[str, str] = {
    "policy": "match policy, as fluxlite query -P: first, low, high, lonode, hinode, locality, ... (default first)",
    "prune-filters": "subtree aggregates for pruning, as fluxlite query -p (default ALL:core,ALL:node)",
    "queue-policy": "fcfs, easy, conservative or hybrid (fluxlite.queue; default fcfs)",
    "reservation-depth": "pending jobs that hold a reservation under hybrid (default 4)",
    "queue-depth": "unlimited, or N for RFC 27 limited mode with N outstanding alloc requests (default unlimited)",
    "log-level": "err, warning, notice, info or debug (default info)",
}
_LOG_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
_MAX_VALUE = 256


@dataclass(frozen=True)
class Settings:
    policy: str = "first"
    prune_filters: str = "ALL:core,ALL:node"
    queue_policy: str = "fcfs"
    reservation_depth: int | None = None
    #: None: unlimited; N: limited mode
    queue_depth: int | None = None
    log_level: str = "info"


def _int(key: str, value: str, low: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise InputError(f"{key}={value!r}: expected an integer") from None
    if n < low:
        raise InputError(f"{key}={value}: must be >= {low}")
    return n


def parse_settings(args: Iterable[str] = (), table: Mapping[str, Any] | None = None) -> Settings:
    """Settings from the config ``table`` overridden by ``key=value`` ``args``; InputError names a bad one."""
    raw: dict[str, str] = {}
    for key, value in (table or {}).items():
        raw[str(key)] = str(value)
    for arg in args:
        key, eq, value = arg.partition("=")
        if not eq:
            raise InputError(f"argument {arg[:_MAX_VALUE]!r}: expected key=value (keys: {', '.join(KEYS)})")
        raw[key] = value
    kw: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in KEYS:
            raise InputError(f"unknown setting {key[:_MAX_VALUE]!r} (known: {', '.join(KEYS)})")
        if len(value) > _MAX_VALUE:
            raise InputError(f"{key}: value longer than {_MAX_VALUE} characters")
        if key == "policy":
            from fluxlite.match import parse_policy

            try:
                parse_policy(value)
            except (InputError, ValueError, KeyError) as exc:
                raise InputError(f"policy={value!r}: {exc}") from None
            kw["policy"] = value
        elif key == "prune-filters":
            kw["prune_filters"] = value
        elif key == "queue-policy":
            from fluxlite.queue import POLICIES

            if value not in POLICIES:
                raise InputError(f"queue-policy={value!r}: known are {', '.join(POLICIES)}")
            kw["queue_policy"] = value
        elif key == "reservation-depth":
            kw["reservation_depth"] = _int(key, value, 0)
        elif key == "queue-depth":
            kw["queue_depth"] = None if value == "unlimited" else _int(key, value, 1)
        elif key == "log-level":
            if value not in _LOG_LEVELS:
                raise InputError(f"log-level={value!r}: known are {', '.join(_LOG_LEVELS)}")
            kw["log_level"] = value
    return Settings(**kw)
