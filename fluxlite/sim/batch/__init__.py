"""``fluxlite sim batch``: batch queues with malleable and evolving jobs (ESP, SWF) on the real engine."""

from fluxlite.sim.batch.sim import BatchConfig, BatchSim
from fluxlite.sim.batch.workloads import WORKLOADS, Workload

__all__ = ["WORKLOADS", "BatchConfig", "BatchSim", "Workload"]
