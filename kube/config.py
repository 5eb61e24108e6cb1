"""Settings of the Kubernetes shim (both forms): labels, units, policy, names.

One frozen dataclass, :class:`KubeConfig`, shared by the standalone
scheduler (form A), the Fluence sidecar (form B) and the benchmark.  Every
field has a command-line option in ``fluxlite kube``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kube._quantity import parse_quantity

__all__ = ["ANNOTATION_GROUP", "ANNOTATION_RESOURCES", "KubeConfig"]

#: Annotation written at bind time: the group (job) key of the pod.
ANNOTATION_GROUP = "fluxlite.io/group"
#: Annotation written at bind time: the pod's resources as ``[[path, units], ...]``.
ANNOTATION_RESOURCES = "fluxlite.io/resources"


@dataclass(frozen=True)
class KubeConfig:
    """How Node objects become vertices and pods become jobspecs."""

    #: pods whose ``spec.schedulerName`` is this are ours
    scheduler_name: str = "fluxlite"
    #: node label whose value becomes a ``zone`` vertex between cluster and node
    zone_label: str = "topology.kubernetes.io/zone"
    #: node label whose value becomes a ``rack`` vertex (below the zone)
    rack_label: str = "fluxlite.io/rack"
    #: bytes of memory per ``memory`` vertex (a pod's request is rounded up to whole units)
    memory_unit: str = "1Gi"
    #: bytes of ephemeral storage per ``storage`` vertex (nodes that report ``ephemeral-storage`` get them)
    storage_unit: str = "1Gi"
    #: extended resource name -> vertex type (one vertex per unit)
    extended: tuple[tuple[str, str], ...] = (("nvidia.com/gpu", "gpu"),)
    #: match policy of the engine (``low`` packs replicas onto the fewest nodes)
    policy: str = "low"
    #: pod label naming a gang (coscheduling PodGroup label, as Fluence uses it)
    group_label: str = "scheduling.x-k8s.io/pod-group"
    #: pod label (or annotation) with the gang's minimum member count
    min_member_label: str = "fluence.group-size"
    #: pod annotation: ``node`` asks for whole (exclusive) nodes; or the engine's policy name
    policy_annotation: str = "fluxlite.io/policy"
    #: grow a group onto the nodes it already holds first ("node"), or anywhere ("none")
    grow_locality: str = "node"
    #: vertex types counted by the pruning filter
    prune_types: tuple[str, ...] = field(default=("core", "memory", "gpu", "storage", "node"))

    @property
    def memory_bytes(self) -> Fraction:
        return parse_quantity(self.memory_unit, field="memory unit")

    @property
    def storage_bytes(self) -> Fraction:
        return parse_quantity(self.storage_unit, field="storage unit")

    @property
    def extended_types(self) -> dict[str, str]:
        return dict(self.extended)

    def prune_filters(self) -> str:
        types = list(dict.fromkeys([*self.prune_types, *(t for _, t in self.extended)]))
        return ",".join(f"ALL:{t}" for t in types)
