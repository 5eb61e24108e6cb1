"""Server-side printing: ``meta.k8s.io/v1`` Tables, as kubectl's ``get`` asks for them.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`` and prints the
columns the server returns (``-o wide`` adds the columns of priority 1). The columns and
cells are those of kube-apiserver's printers (``pkg/printers/internalversion``) for the
kinds a scheduler's users look at: Pods, Nodes, ReplicaSets, Deployments,
PodDisruptionBudgets and PriorityClasses; any other kind gets the server's default
table (Name, Created At). Each row carries the object's metadata
(``PartialObjectMetadata``), or the whole object with ``includeObject=Object``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from kube.testing._selectors import format_label_selector

__all__ = ["age", "table", "wants_table"]

Obj = dict[str, Any]


def wants_table(accept: str | None) -> bool:
    """Does this Accept header ask for a meta.k8s.io Table (v1 or v1beta1)?"""
    for part in (accept or "").split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False


def age(timestamp: str | None, now: dt.datetime | None = None) -> str:
    """``translateTimestampSince``: kube's short human duration (``45s``, ``5m3s``, ``3h``, ``2d5h``)."""
    if not timestamp:
        return "<unknown>"
    then = dt.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    secs = int(((now or dt.datetime.now(dt.UTC)) - then).total_seconds())
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m" if secs % 60 == 0 else f"{mins}m{secs % 60}s"
    if mins < 180:
        return f"{mins}m"
    hours = secs // 3600
    if hours < 8:
        return f"{hours}h" if mins % 60 == 0 else f"{hours}h{mins % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y" if days % 365 == 0 else f"{days // 365}y{days % 365}d"
    return f"{hours // (24 * 365)}y"


def _col(name: str, typ: str = "string", priority: int = 0, fmt: str = "", desc: str = "") -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


_NAME = _col("Name", fmt="name", desc="Name must be unique within a namespace.")
_AGE = _col(
    "Age", desc="CreationTimestamp is a timestamp representing the server time when this object was created."
)


def _pod_status(pod: Obj) -> tuple[str, int, int, int]:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in status.get("containerStatuses") or ():
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    cond = {c.get("type"): c for c in status.get("conditions") or ()}
    gated = cond.get("PodScheduled", {}).get("reason") == "SchedulingGated"
    if gated:
        reason = "SchedulingGated"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    statuses = status.get("containerStatuses") or ()
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    total = len((pod.get("spec") or {}).get("containers") or ())
    return reason, ready, total, restarts


def _pod(pod: Obj) -> list[Any]:
    reason, ready, total, restarts = _pod_status(pod)
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    gates = spec.get("readinessGates") or ()
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        ok = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gate_cell = f"{ok}/{len(gates)}"
    else:
        gate_cell = "<none>"
    return [
        pod["metadata"]["name"], f"{ready}/{total}", reason, str(restarts), age(pod["metadata"].get("creationTimestamp")),
        status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>", gate_cell,
    ]  # fmt: skip


def _node(node: Obj) -> list[Any]:
    md, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    state = (
        "Unknown"
        if ready is None
        else {"True": "Ready", "False": "NotReady"}.get(ready.get("status"), "Unknown")
    )
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(
        {k.split("/", 1)[1] for k in md.get("labels") or {} if k.startswith("node-role.kubernetes.io/")}
        | ({(md.get("labels") or {})["kubernetes.io/role"]} if "kubernetes.io/role" in (md.get("labels") or {}) else set())
    )  # fmt: skip
    info = status.get("nodeInfo") or {}
    addr = {a.get("type"): a.get("address") for a in status.get("addresses") or ()}
    return [
        md["name"], state, ",".join(r for r in roles if r) or "<none>", age(md.get("creationTimestamp")),
        info.get("kubeletVersion", ""), addr.get("InternalIP") or "<none>", addr.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]  # fmt: skip


def _containers(obj: Obj) -> tuple[str, str]:
    cs = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or ()
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


def _replicaset(rs: Obj) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    names, images = _containers(rs)
    return [
        rs["metadata"]["name"], int(spec.get("replicas", 1)), int(status.get("replicas", 0)),
        int(status.get("readyReplicas", 0)), age(rs["metadata"].get("creationTimestamp")), names, images,
        format_label_selector(spec.get("selector")) or "<none>",
    ]  # fmt: skip


def _deployment(d: Obj) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    names, images = _containers(d)
    return [
        d["metadata"]["name"], f"{int(status.get('readyReplicas', 0))}/{int(spec.get('replicas', 1))}",
        int(status.get("updatedReplicas", 0)), int(status.get("availableReplicas", 0)),
        age(d["metadata"].get("creationTimestamp")), names, images,
        format_label_selector(spec.get("selector")) or "<none>",
    ]  # fmt: skip


def _pdb(p: Obj) -> list[Any]:
    spec, status = p.get("spec") or {}, p.get("status") or {}
    return [
        p["metadata"]["name"], str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
        str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
        int(status.get("disruptionsAllowed", 0)), age(p["metadata"].get("creationTimestamp")),
    ]  # fmt: skip


def _priorityclass(pc: Obj) -> list[Any]:
    return [
        pc["metadata"]["name"], int(pc.get("value", 0)), bool(pc.get("globalDefault", False)),
        age(pc["metadata"].get("creationTimestamp")), pc.get("preemptionPolicy") or "PreemptLowerPriority",
    ]  # fmt: skip


def _hpa(h: Obj) -> list[Any]:
    spec, status = h.get("spec") or {}, h.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    current = {}
    for m in status.get("currentMetrics") or ():
        body = m.get("resource") or m.get("pods") or {}
        name = body.get("name") or (body.get("metric") or {}).get("name", "")
        cur = body.get("current") or {}
        current[name] = f"{cur['averageUtilization']}%" if "averageUtilization" in cur else cur.get("averageValue")
    targets = []
    for m in spec.get("metrics") or ():
        body = m.get("resource") or m.get("pods") or {}
        name = body.get("name") or (body.get("metric") or {}).get("name", "")
        t = body.get("target") or {}
        want = f"{t['averageUtilization']}%" if "averageUtilization" in t else t.get("averageValue", "?")
        targets.append(f"{name}: {current.get(name) or '<unknown>'}/{want}")
    return [
        h["metadata"]["name"], f"{ref.get('kind', '')}/{ref.get('name', '')}", ", ".join(targets) or "<none>",
        int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 0), int(status.get("currentReplicas", 0)),
        age(h["metadata"].get("creationTimestamp")),
    ]  # fmt: skip


_WIDE_WORKLOAD = [
    _col("Containers", priority=1, desc="Names of each container in the template."),
    _col("Images", priority=1, desc="Images referenced by each container in the template."),
    _col("Selector", priority=1, desc="Label selector for pods."),
]
#: plural -> (columns, row printer)
_PRINTERS: dict[str, tuple[list[Obj], Callable[[Obj], list[Any]]]] = {
    "pods": (
        [_NAME, _col("Ready", desc="The aggregate readiness state of this pod for accepting traffic."),
         _col("Status", desc="The aggregate status of the containers in this pod."),
         _col("Restarts", desc="The number of times the containers in this pod have been restarted."), _AGE,
         _col("IP", priority=1, desc="IP address allocated to the pod."),
         _col("Node", priority=1, desc="Name of the node this pod runs on."),
         _col("Nominated Node", priority=1, desc="Name of the node where the pod is nominated to run."),
         _col("Readiness Gates", priority=1, desc="Pod readiness gates.")],
        _pod,
    ),
    "nodes": (
        [_NAME, _col("Status", desc="The status of the node"), _col("Roles", desc="The roles of the node"), _AGE,
         _col("Version", desc="Kubelet Version reported by the node."),
         _col("Internal-IP", priority=1, desc="List of internal IPs for the node."),
         _col("External-IP", priority=1, desc="List of external IPs for the node."),
         _col("OS-Image", priority=1, desc="OS Image reported by the node."),
         _col("Kernel-Version", priority=1, desc="Kernel Version reported by the node."),
         _col("Container-Runtime", priority=1, desc="Container Runtime Version reported by the node.")],
        _node,
    ),
    "replicasets": (
        [_NAME, _col("Desired", "integer", desc="Number of desired pods."),
         _col("Current", "integer", desc="Number of actual replicas."),
         _col("Ready", "integer", desc="The number of ready replicas for this replica set."), _AGE, *_WIDE_WORKLOAD],
        _replicaset,
    ),
    "deployments": (
        [_NAME, _col("Ready", desc="Number of the pod with ready state"),
         _col("Up-to-date", "integer", desc="Total number of non-terminated pods targeted by this deployment that "
              "have the desired template spec."),
         _col("Available", "integer", desc="Total number of available pods (ready for at least minReadySeconds) "
              "targeted by this deployment."), _AGE, *_WIDE_WORKLOAD],
        _deployment,
    ),
    "poddisruptionbudgets": (
        [_NAME, _col("Min Available", desc="The minimum number of pods that must be available."),
         _col("Max Unavailable", desc="The maximum number of pods that may be unavailable."),
         _col("Allowed Disruptions", "integer", desc="Calculated number of pods that may be disrupted at this "
              "time."), _AGE],
        _pdb,
    ),
    "horizontalpodautoscalers": (
        [_NAME, _col("Reference", desc="The target of the autoscaler."),
         _col("Targets", desc="Current and target values of the metrics."),
         _col("MinPods", "integer", desc="Lower limit for the number of pods."),
         _col("MaxPods", "integer", desc="Upper limit for the number of pods."),
         _col("Replicas", "integer", desc="Current number of replicas."), _AGE],
        _hpa,
    ),
    "priorityclasses": (
        [_NAME, _col("Value", "integer", desc="The value of this priority class."),
         _col("Global-Default", "boolean", desc="globalDefault specifies whether this PriorityClass should be "
              "considered as the default priority."), _AGE,
         _col("PreemptionPolicy", desc="PreemptionPolicy is the Policy for preempting pods with lower priority.")],
        _priorityclass,
    ),
}  # fmt: skip
_CREATED = _col("Created At", "date", desc="CreationTimestamp is a timestamp representing the server time.")
_DEFAULT = ([_NAME, _CREATED], lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp")])


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def table(plural: str, items: list[Obj], meta: Obj, include: str = "Metadata", columns: bool = True) -> Obj:
    """A ``Table`` of ``items`` (``includeObject``: None, Metadata (default), Object)."""
    cols, printer = _PRINTERS.get(plural, _DEFAULT)
    rows = []
    for obj in items:
        row: Obj = {"cells": printer(obj)}
        ro = _row_object(obj, include)
        if ro is not None:
            row["object"] = ro
        rows.append(row)
    out: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
    if columns:
        out["columnDefinitions"] = cols
    out["rows"] = rows
    return out
