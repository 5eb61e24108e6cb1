"""The resource types the stand-in server serves, with their discovery data.

One :class:`Resource` per (group, version, plural); :data:`RESOURCES` is the registry the
router and the discovery endpoints (``/api/v1``, ``/apis/apps/v1``, ...) both read, so
"is it served?" is ``(group, version, plural) in RESOURCES``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GROUPS", "RESOURCES", "Resource", "resource"]

_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    """A served resource type: where it lives, what it is called, what it supports."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    field_labels: frozenset[str] = _META_FIELDS
    has_status: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``pods``, ``replicasets.apps``: the resource name used in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_POD_FIELDS = _META_FIELDS | {
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
}
_EVENT_FIELDS = _META_FIELDS | {
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
}
_EVENTS_V1_FIELDS = _META_FIELDS | {
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "reason",
    "reportingController",
    "type",
}

_ALL = [
    Resource("", "v1", "namespaces", "Namespace", False, "namespace", ("ns",), ("status",),
             _META_FIELDS | {"status.phase"}),
    Resource("", "v1", "nodes", "Node", False, "node", ("no",), ("status",),
             _META_FIELDS | {"spec.unschedulable"}),
    Resource("", "v1", "pods", "Pod", True, "pod", ("po",), ("status", "binding", "eviction"), _POD_FIELDS),
    Resource("", "v1", "events", "Event", True, "event", ("ev",), (), _EVENT_FIELDS, has_status=False),
    Resource("events.k8s.io", "v1", "events", "Event", True, "event", ("ev",), (), _EVENTS_V1_FIELDS,
             has_status=False),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, "replicaset", ("rs",), ("status", "scale"),
             _META_FIELDS | {"status.replicas"}),
    Resource("apps", "v1", "deployments", "Deployment", True, "deployment", ("deploy",), ("status", "scale")),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, "statefulset", ("sts",), ("status", "scale")),
    Resource("batch", "v1", "jobs", "Job", True, "job", (), ("status",), _META_FIELDS | {"status.successful"}),
    Resource("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",), has_status=False),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, "lease", (), has_status=False),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "poddisruptionbudget",
             ("pdb",), ("status",)),
    Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
             "horizontalpodautoscaler", ("hpa",), ("status",)),
    # the same objects, seen as autoscaling/v1 (kube.testing._hpa converts; the store keeps v2)
    Resource("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
             "horizontalpodautoscaler", ("hpa",), ("status",)),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, "priorityclass", ("pc",),
             has_status=False),
]  # fmt: skip

RESOURCES: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in _ALL}
GROUPS: dict[str, list[str]] = {}
for _r in _ALL:
    if _r.group and _r.version not in GROUPS.setdefault(_r.group, []):
        GROUPS[_r.group].append(_r.version)


def resource(group: str, version: str, plural: str) -> Resource:
    """The registered resource (KeyError if it is not served)."""
    return RESOURCES[(group, version, plural)]


def discovery(group: str, version: str) -> dict:
    """The ``APIResourceList`` of one group version."""
    entries = []
    for r in _ALL:
        if (r.group, r.version) != (group, version):
            continue
        entries.append(
            {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(_VERBS),
                **({"shortNames": list(r.short_names)} if r.short_names else {}),
            }
        )
        for sub in r.subresources:
            kind, verbs = {
                "status": (r.kind, ["get", "patch", "update"]),
                "scale": ("Scale", ["get", "patch", "update"]),
                "binding": ("Binding", ["create"]),
                "eviction": ("Eviction", ["create"]),
            }[sub]
            entry = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
            }
            if sub == "scale":
                entry.update(group="autoscaling", version="v1")
            if sub == "eviction":
                entry.update(group="policy", version="v1")
            entries.append({**entry, "verbs": verbs})
    if not group:
        entries.append(
            {
                "name": "bindings",
                "singularName": "binding",
                "namespaced": True,
                "kind": "Binding",
                "verbs": ["create"],
            }
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }
