"""Dynamic fairness (DFS) for evolving jobs' requests, configured as Maui does.

A dynamic request that would delay other users' queued jobs is granted
only if the fairness policy allows those delays:

``DFSPOLICY``           NONE (requests win), DFSSINGLEJOBDELAY, DFSTARGETDELAY,
                        DFSSINGLEANDTARGETDELAY
``DFSSINGLEDELAYTIME``  how long any one queued job may be delayed in all
``DFSTARGETDELAYTIME``  the cumulative delay a user may suffer per interval
``DFSINTERVAL``         that interval; at its end the accumulated delay is
``DFSDECAY``            multiplied by this to seed the next one
``DFSDYNDELAYPERM``     1: the user's jobs may be delayed; 0: never

Limits may be set globally and per ``USERCFG[...]``, ``GROUPCFG[...]``,
``ACCOUNTCFG[...]``, ``CLASSCFG[...]`` and ``QOSCFG[...]``; where several
apply, the most restrictive wins (a 0 time limit means "no limit"; any
``DFSDYNDELAYPERM=0`` forbids).  Delays between jobs of the same user do
not count.  Times are seconds or ``[[DD:]HH:]MM:SS``.  Unknown keys are
errors naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fluxlite.errors import InputError

if TYPE_CHECKING:
    from fluxlite.queue._job import Job

__all__ = ["DFS_POLICIES", "DfsConfig", "Fairness", "parse_dfs_config", "parse_duration"]

DFS_POLICIES = ("NONE", "DFSSINGLEJOBDELAY", "DFSTARGETDELAY", "DFSSINGLEANDTARGETDELAY")
_LIMIT_KEYS = ("DFSSINGLEDELAYTIME", "DFSTARGETDELAYTIME", "DFSDYNDELAYPERM")
_CRED = {"USERCFG": "user", "GROUPCFG": "group", "ACCOUNTCFG": "account", "CLASSCFG": "cls", "QOSCFG": "qos"}
_GLOBAL = ("DFSPOLICY", "DFSINTERVAL", "DFSDECAY", "RESERVATIONDEPTH", "RESERVATIONDELAYDEPTH", *_LIMIT_KEYS)


def parse_duration(text: str, where: str = "") -> int:
    """Seconds from ``N`` or ``[[DD:]HH:]MM:SS``."""
    parts = text.strip().split(":")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise InputError(f"{where}: bad time {text!r} (seconds or [[DD:]HH:]MM:SS)") from None
    if len(nums) > 4 or any(n < 0 for n in nums):
        raise InputError(f"{where}: bad time {text!r} (seconds or [[DD:]HH:]MM:SS)")
    mult = (1, 60, 3600, 86400)
    return sum(n * mult[i] for i, n in enumerate(reversed(nums)))


@dataclass
class DfsConfig:
    policy: str = "NONE"
    interval: int = 0
    decay: float = 0.0
    reservation_depth: int = 5
    reservation_delay_depth: int = 5
    #: (credential kind, name) -> {key: value}; ("", "") holds the global limits
    limits: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def limit(self, job: Job, key: str) -> float:
        """The most restrictive value of ``key`` over the job's credentials (0 = none for times)."""
        vals = []
        for kind, name in (("", ""), *((a, getattr(job, a)) for a in _CRED.values())):
            d = self.limits.get((kind, name)) if (kind == "" or name) else None
            if d and key in d:
                vals.append(d[key])
        if key == "DFSDYNDELAYPERM":
            return min(vals) if vals else 1
        nz = [v for v in vals if v > 0]
        return min(nz) if nz else 0


def parse_dfs_config(text: str, source: str = "<dfs>") -> DfsConfig:
    """Parse a Maui-style fairness configuration (see the module docstring)."""
    cfg = DfsConfig()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{lineno}"
        m = re.fullmatch(r"(\w+)\[([^\]]+)\]\s+(.*)", line)
        if m:
            kind = m.group(1).upper()
            if kind not in _CRED:
                raise InputError(f"{where}: unknown key {m.group(1)!r} (known: {', '.join(_CRED)})")
            d = cfg.limits.setdefault((_CRED[kind], m.group(2)), {})
            for item in m.group(3).split():
                k, sep, v = item.partition("=")
                k = k.upper()
                if not sep or k not in _LIMIT_KEYS:
                    raise InputError(f"{where}: unknown setting {item!r} (known: {', '.join(_LIMIT_KEYS)})")
                d[k] = _limit_value(k, v, where)
            continue
        key, _, value = line.partition(" ")
        key, value = key.upper(), value.strip()
        if key not in _GLOBAL:
            raise InputError(f"{where}: unknown key {key!r}")
        if not value:
            raise InputError(f"{where}: {key} needs a value")
        if key == "DFSPOLICY":
            if value.upper() not in DFS_POLICIES:
                raise InputError(f"{where}: DFSPOLICY must be one of {', '.join(DFS_POLICIES)}")
            cfg.policy = value.upper()
        elif key == "DFSINTERVAL":
            cfg.interval = parse_duration(value, where)
        elif key == "DFSDECAY":
            try:
                cfg.decay = float(value)
            except ValueError:
                raise InputError(f"{where}: DFSDECAY must be a number, got {value!r}") from None
            if not 0.0 <= cfg.decay <= 1.0:
                raise InputError(f"{where}: DFSDECAY must be in [0, 1]")
        elif key in ("RESERVATIONDEPTH", "RESERVATIONDELAYDEPTH"):
            if not value.isdigit():
                raise InputError(f"{where}: {key} must be an integer >= 0")
            setattr(
                cfg,
                "reservation_depth" if key == "RESERVATIONDEPTH" else "reservation_delay_depth",
                int(value),
            )
        else:
            cfg.limits.setdefault(("", ""), {})[key] = _limit_value(key, value, where)
    return cfg


def _limit_value(key: str, v: str, where: str) -> float:
    if key == "DFSDYNDELAYPERM":
        if v not in ("0", "1"):
            raise InputError(f"{where}: DFSDYNDELAYPERM must be 0 or 1, got {v!r}")
        return int(v)
    return parse_duration(v, where)


def load_dfs_config(path: str | Path) -> DfsConfig:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"cannot read fairness config {p}: {exc.strerror}") from exc
    return parse_dfs_config(text, source=str(p))


class Fairness:
    """Decides whether delays caused by a dynamic grant are allowed, and accounts them."""

    def __init__(self, cfg: DfsConfig) -> None:
        self.cfg = cfg
        #: user -> delay accumulated in the current interval (seconds)
        self.user_delay: dict[str, float] = {}
        #: job id -> total delay that job suffered from dynamic grants
        self.job_delay: dict[int, float] = {}
        self._interval_start = 0

    def _roll(self, now: int) -> None:
        iv = self.cfg.interval
        if iv <= 0:
            return
        while now >= self._interval_start + iv:
            self._interval_start += iv
            for u in self.user_delay:
                self.user_delay[u] *= self.cfg.decay

    def allows(self, requester: Job, delays: list[tuple[Job, float]], now: int) -> bool:
        """True if the delays (delayed job, seconds) the grant would cause are within every limit."""
        self._roll(now)
        pol = self.cfg.policy
        if pol == "NONE":
            return True
        per_user: dict[str, float] = {}
        for job, d in delays:
            if d <= 0 or job.user == requester.user:
                continue
            if self.cfg.limit(job, "DFSDYNDELAYPERM") == 0:
                return False
            if pol in ("DFSSINGLEJOBDELAY", "DFSSINGLEANDTARGETDELAY"):
                lim = self.cfg.limit(job, "DFSSINGLEDELAYTIME")
                if lim > 0 and self.job_delay.get(job.jobid, 0.0) + d > lim:
                    return False
            per_user[job.user] = per_user.get(job.user, 0.0) + d
            if pol in ("DFSTARGETDELAY", "DFSSINGLEANDTARGETDELAY"):
                lim = self.cfg.limit(job, "DFSTARGETDELAYTIME")
                if lim > 0 and self.user_delay.get(job.user, 0.0) + per_user[job.user] > lim:
                    return False
        return True

    def record(self, requester: Job, delays: list[tuple[Job, float]]) -> None:
        for job, d in delays:
            if d <= 0 or job.user == requester.user:
                continue
            self.job_delay[job.jobid] = self.job_delay.get(job.jobid, 0.0) + d
            self.user_delay[job.user] = self.user_delay.get(job.user, 0.0) + d
