"""Kubernetes scheduler shim: pods, pod groups and elastic ReplicaSets on the fluxlite engine.

Two forms share one core (:class:`KubeCore`, one :class:`fluxlite.api.Engine`):

* form A, a standalone scheduler (``fluxlite kube run --kubeconfig F``,
  :class:`kube.scheduler.KubeScheduler`) that lists and watches Nodes and
  Pods with the official ``kubernetes`` client and binds the pods whose
  ``schedulerName`` is its own;
* form B, a gRPC sidecar (``fluxlite kube sidecar``, :mod:`kube.sidecar`)
  wire-compatible with Fluence's ``fluxcli.FluxcliService`` (Match, Cancel)
  plus ``fluxlite.kube.v1.FluxliteElastic`` (Grow, Shrink) for elastic groups.

A group's first pod is a MatchAllocate, each further replica a MatchGrow of
the same job, a deleted pod a shrink of exactly its vertices; gangs are
all-or-nothing.  Nothing here is imported by :mod:`fluxlite`.
"""

from kube._core import KubeCore, Placement, PodAlloc
from kube._model import GroupKey, NodeInfo, PodRequest, node_info, pod_constraint, pod_group, pod_request
from kube.config import KubeConfig

__all__ = [
    "GroupKey",
    "KubeConfig",
    "KubeCore",
    "NodeInfo",
    "Placement",
    "PodAlloc",
    "PodRequest",
    "node_info",
    "pod_constraint",
    "pod_group",
    "pod_request",
]
