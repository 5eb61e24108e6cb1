"""Batch queues in front of the matcher: policies, malleable and evolving jobs.

``Queue``            pending/running jobs of one engine, any clock
``QueuePolicy``      the interface of a policy (``base.py``)
``POLICIES``         fcfs, easy, conservative, hybrid (``policies/``)
``fairness``         dynamic fairness (DFS) for evolving jobs' requests
``dynamic``          the scheduler iteration with dynamic requests
``malleable``        expand/shrink strategies: fpsma, perf, power
"""

from fluxlite.queue._job import ADAPTING, CANCELLED, DONE, DYNQUEUED, PENDING, RUNNING, Job
from fluxlite.queue._queue import Queue
from fluxlite.queue._request import request_jobspec
from fluxlite.queue.base import QueuePolicy
from fluxlite.queue.policies import POLICIES, create_policy, register

__all__ = [
    "ADAPTING",
    "CANCELLED",
    "DONE",
    "DYNQUEUED",
    "PENDING",
    "POLICIES",
    "RUNNING",
    "Job",
    "Queue",
    "QueuePolicy",
    "create_policy",
    "register",
    "request_jobspec",
]
