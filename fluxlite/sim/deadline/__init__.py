"""The deadline simulator: static grid allocators and leak policies for deadline-bound jobs.

``workload``   Lublin-Feitelson traces and SWF files, extended with type, earliest start, deadline
``program``    the jobs' programs (four runtime-behaviour types) and their timing on a placement
``placement``  the engine on a grid machine, and the strategies' node choosers
``sim``        one run on the shared kernel: accept/reject, start, phases, forks/joins, deadlines
``sweep``      many runs into one resumable CSV (local processes or Dask)
``plot``       figures with confidence intervals, tables, grid occupancy pictures
``cli``        ``fluxlite sim deadline run|sweep|plot|bench|trace``
"""

from __future__ import annotations

from fluxlite.sim.deadline.placement import STRATEGIES, Machine
from fluxlite.sim.deadline.program import COMM_STYLES, CommModel, Program
from fluxlite.sim.deadline.sim import RunResult, simulate
from fluxlite.sim.deadline.workload import LOADS, TYPES, DeadlineJob, from_swf, lublin_trace

__all__ = [
    "COMM_STYLES",
    "LOADS",
    "STRATEGIES",
    "TYPES",
    "CommModel",
    "DeadlineJob",
    "Machine",
    "Program",
    "RunResult",
    "from_swf",
    "lublin_trace",
    "simulate",
]
