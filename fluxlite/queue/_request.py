"""Jobspecs for the requests a queue makes: ``count`` nodes or cores for ``duration`` seconds.

A node request is ``slot[count] > node[1]`` (whole nodes, exclusive), a core
request ``slot[count] > core[1]`` (cores anywhere).  Built once per
(unit, count, duration) and cached: a queue asks for the same shapes again
and again.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fluxlite.errors import InputError

__all__ = ["request_jobspec"]

UNITS = ("node", "core")


@lru_cache(maxsize=8192)
def request_jobspec(unit: str, count: int, duration: int, per_node_cores: int = 0) -> Any:
    """The jobspec for ``count`` units of ``unit`` during ``duration`` seconds.

    The shape is parsed once per (unit, count, cores) and shared (the same
    resource tree, which the matcher's per-request caches key on); only the
    duration differs between jobs (a trace has nearly one walltime per job).
    """
    import dataclasses

    if duration < 1:
        raise InputError(f"a request needs a duration of at least 1 s, got {duration}")
    shape = _shape(unit, count, per_node_cores)
    return dataclasses.replace(shape, duration=float(duration), attributes={"system": {"duration": duration}})


@lru_cache(maxsize=1024)
def _shape(unit: str, count: int, per_node_cores: int) -> Any:
    from fluxlite.jobspec import parse_jobspec

    duration = 1
    if unit not in UNITS:
        raise InputError(f"unknown request unit {unit!r} (use node or core)")
    if count < 1:
        raise InputError(f"a request needs at least one {unit}, got {count}")
    inner = f"      - type: {unit}\n        count: 1\n"
    if unit == "node" and per_node_cores > 0:
        inner += f"        with:\n          - type: core\n            count: {per_node_cores}\n"
    text = (
        "version: 1\nresources:\n  - type: slot\n    count: "
        f"{count}\n    label: default\n    with:\n{inner}"
        "tasks:\n  - command: [app]\n    slot: default\n    count: {per_slot: 1}\n"
        f"attributes: {{system: {{duration: {duration}}}}}\n"
    )
    return parse_jobspec(text)
