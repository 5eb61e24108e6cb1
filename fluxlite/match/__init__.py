"""Matching: the DFU traverser, match policies and scoring.

:class:`Traverser` walks the resource graph to select, allocate, reserve
and free resources for jobspecs; :func:`parse_policy` turns a policy name or
a custom settings string into a :class:`MatchPolicy`.
"""

from fluxlite.match._traverser import (
    AT_ALLOC,
    AT_RESERVE,
    AT_SATISFIABILITY,
    SYSTEM_DEFAULT_DURATION,
    SYSTEM_MAX_DURATION,
    JobMeta,
    Traverser,
    calc_count,
    calc_effective_max,
)
from fluxlite.match.policies import POLICIES, MatchPolicy, parse_policy, register

__all__ = [
    "AT_ALLOC",
    "AT_RESERVE",
    "AT_SATISFIABILITY",
    "POLICIES",
    "SYSTEM_DEFAULT_DURATION",
    "SYSTEM_MAX_DURATION",
    "JobMeta",
    "MatchPolicy",
    "Traverser",
    "calc_count",
    "calc_effective_max",
    "parse_policy",
    "register",
]
