"""Plain API objects (camelCase dicts, as the API serves them) for tests, examples and benchmarks.

``node_object`` and ``pod_object`` build Nodes and Pods with the fields the
scheduler reads; ``replicaset_object`` a ReplicaSet whose template names a
scheduler.  They are what ``kubectl get -o json`` would show, minus the
fields the server fills in.
"""

from __future__ import annotations

from typing import Any

__all__ = ["node_object", "pod_object", "replicaset_object"]


def node_object(
    name: str,
    *,
    cpu: str = "32",
    memory: str = "128Gi",
    gpus: int = 0,
    zone: str | None = "zone-a",
    labels: dict[str, str] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node with allocatable ``cpu``/``memory``/``nvidia.com/gpu``, a zone label and a Ready condition."""
    alloc: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    if zone:
        lab["topology.kubernetes.io/zone"] = zone
    lab.update(labels or {})
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": lab},
        "spec": spec,
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}
            ],
        },
    }


def _container(cpu: str | None, memory: str | None, gpus: int, name: str = "main") -> dict[str, Any]:
    req: dict[str, str] = {}
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    res: dict[str, Any] = {"requests": req}
    if gpus:
        res["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {"name": name, "image": "busybox", "resources": res}


def pod_object(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    gpus: int = 0,
    scheduler: str = "fluxlite",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    node_name: str | None = None,
    owner: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A Pod with one container requesting ``cpu``/``memory`` (and ``gpus`` as a limit)."""
    md: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if annotations:
        md["annotations"] = dict(annotations)
    if owner:
        md["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner[0],
                "name": owner[1],
                "uid": f"uid-{owner[1]}",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [_container(cpu, memory, gpus)]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def replicaset_object(
    name: str,
    *,
    replicas: int = 1,
    namespace: str = "default",
    cpu: str = "1",
    memory: str = "1Gi",
    scheduler: str = "fluxlite",
) -> dict[str, Any]:
    """An apps/v1 ReplicaSet whose pods request ``cpu``/``memory`` and name ``scheduler``."""
    sel = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": sel},
            "template": {
                "metadata": {"labels": sel},
                "spec": {"schedulerName": scheduler, "containers": [_container(cpu, memory, 0)]},
            },
        },
    }
