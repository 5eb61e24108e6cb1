"""Discrete-event simulation on the real engine: one virtual clock for every experiment.

The simulators never keep their own copy of allocation state: they drive an
:class:`fluxlite.api.Engine` (matcher, planner, aggregates, grow/shrink) with
the virtual time of :class:`fluxlite.sim.kernel.Kernel`.

``fluxlite sim deadline``  grid allocators and leak policies for deadline-bound jobs
``fluxlite sim batch``     batch queues with malleable and evolving jobs (ESP)
"""

from __future__ import annotations

from fluxlite.sim.kernel import Kernel

__all__ = ["Kernel"]
