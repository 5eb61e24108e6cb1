"""Node and Pod objects (API JSON, camelCase dicts) read the way the scheduler needs them.

* :func:`node_info` - a Node's allocatable CPU, memory and extended
  resources in graph units, its zone / rack, labels, taints and whether
  it is schedulable (not cordoned, Ready);
* :func:`pod_request` - a pod's effective request as the kubelet accounts
  it: the sum over containers, or the largest init container (with the
  restartable "sidecar" init containers that keep running added), plus
  the pod overhead; requests default to limits where only limits are set;
* :func:`pod_constraint` - ``nodeSelector``, required node affinity and
  untolerated taints as an RFC 31 constraint over node properties
  (every label ``k=v`` of a node is the property ``k=v`` and ``k``);
* :func:`pod_group` - the group (one engine job) a pod belongs to: a gang
  label with a minimum member count, else its controller owner
  (ReplicaSet - which is how a Deployment's pods are grouped -, Job,
  StatefulSet, ...), else the pod alone.

Everything here is pure: no client, no engine.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from fluxlite.errors import InputError
from kube._quantity import ceil_units, floor_units, parse_quantity
from kube.config import KubeConfig

__all__ = [
    "GroupKey",
    "NodeInfo",
    "PodRequest",
    "node_info",
    "pod_constraint",
    "pod_group",
    "pod_key",
    "pod_request",
]

#: taint effects that keep a pod off a node unless it tolerates them
_BLOCKING = ("NoSchedule", "NoExecute")
#: property that no node carries (a constraint nothing satisfies)
_NONE = "fluxlite.io/no-node"


@dataclass(frozen=True)
class NodeInfo:
    """What the graph needs of one Node."""

    name: str
    cores: int
    memory: int  # units of KubeConfig.memory_unit
    extended: tuple[tuple[str, int], ...]  # (vertex type, count)
    zone: str | None
    rack: str | None
    labels: dict[str, str] = field(default_factory=dict, compare=False)
    taints: tuple[str, ...] = ()
    up: bool = True
    reason: str = ""
    max_pods: int = 0  # status.allocatable.pods (0: no limit)
    storage: int = 0  # status.allocatable.ephemeral-storage in units of KubeConfig.storage_unit

    @property
    def shape(self) -> tuple[Any, ...]:
        """What changes the node's subgraph (a change needs a re-attach)."""
        return (self.cores, self.memory, self.extended, self.zone, self.rack, self.storage)

    def properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        for k, v in self.labels.items():
            props[k] = v
            props[f"{k}={v}"] = ""
        for t in self.taints:
            props[f"taint/{t}"] = ""
        return props


@dataclass(frozen=True)
class PodRequest:
    """A pod's effective request in graph units."""

    cores: int
    memory: int
    extended: tuple[tuple[str, int], ...] = ()
    exclusive_node: bool = False
    storage: int = 0  # ephemeral-storage, units of KubeConfig.storage_unit

    def fits(self, node: NodeInfo) -> bool:
        if self.exclusive_node:
            return True
        if self.cores > node.cores or self.memory > node.memory or self.storage > node.storage:
            return False
        have = dict(node.extended)
        return all(have.get(t, 0) >= n for t, n in self.extended)


@dataclass(frozen=True)
class GroupKey:
    """The job a pod belongs to: ``kind/namespace/name`` and the gang size (1: elastic)."""

    key: str
    min_member: int = 1


def pod_key(pod: dict[str, Any]) -> str:
    md = pod.get("metadata") or {}
    return f"{md.get('namespace', 'default')}/{md.get('name', '')}"


def _q(value: Any, field: str) -> Fraction:
    return parse_quantity(value, field=field)


def node_info(node: dict[str, Any], cfg: KubeConfig) -> NodeInfo:
    """Read a Node (API dict); :class:`InputError` for a malformed quantity."""
    md = node.get("metadata") or {}
    name = md.get("name") or ""
    if not name:
        raise InputError("a Node has no metadata.name")
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    where = f"node {name}: status.allocatable"
    cores = floor_units(_q(alloc.get("cpu", 0), f"{where}.cpu"), Fraction(1))
    memory = floor_units(_q(alloc.get("memory", 0), f"{where}.memory"), cfg.memory_bytes)
    ext = []
    for res, vtype in cfg.extended:
        if res in alloc:
            n = floor_units(_q(alloc[res], f"{where}.{res}"), Fraction(1))
            if n > 0:
                ext.append((vtype, n))
    storage = floor_units(
        _q(alloc.get("ephemeral-storage", 0), f"{where}.ephemeral-storage"), cfg.storage_bytes
    )
    try:
        max_pods = int(_q(alloc.get("pods", 0), f"{where}.pods"))
    except (TypeError, ValueError):
        max_pods = 0
    labels = dict(md.get("labels") or {})
    taints = tuple(
        sorted({t.get("key", "") for t in spec.get("taints") or () if t.get("effect") in _BLOCKING})
    )
    up, reason = True, ""
    if spec.get("unschedulable"):
        up, reason = False, "cordoned (spec.unschedulable)"
    else:
        for c in status.get("conditions") or ():
            if c.get("type") == "Ready" and c.get("status") != "True":
                up, reason = False, f"not Ready ({c.get('reason') or c.get('status')})"
    return NodeInfo(
        name=name,
        cores=cores,
        memory=memory,
        extended=tuple(ext),
        zone=labels.get(cfg.zone_label) or None,
        rack=labels.get(cfg.rack_label) or None,
        labels=labels,
        taints=taints,
        up=up,
        reason=reason,
        max_pods=max(0, max_pods),
        storage=storage,
    )


def _container_req(c: dict[str, Any], res: str, where: str) -> Fraction:
    r = c.get("resources") or {}
    req = r.get("requests") or {}
    if res in req:
        return _q(req[res], f"{where}.resources.requests.{res}")
    lim = r.get("limits") or {}
    if res in lim:
        return _q(lim[res], f"{where}.resources.limits.{res}")
    return Fraction(0)


def _effective(spec: dict[str, Any], res: str, name: str) -> Fraction:
    total = sum(
        (
            _container_req(c, res, f"pod {name}: containers[{i}]")
            for i, c in enumerate(spec.get("containers") or ())
        ),
        Fraction(0),
    )
    sidecars = Fraction(0)
    init_peak = Fraction(0)
    for i, c in enumerate(spec.get("initContainers") or ()):
        q = _container_req(c, res, f"pod {name}: initContainers[{i}]")
        if c.get("restartPolicy") == "Always":  # a sidecar: runs on beside what follows
            sidecars += q
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + q)
    out = max(total + sidecars, init_peak)
    overhead = spec.get("overhead") or {}
    if res in overhead:
        out += _q(overhead[res], f"pod {name}: spec.overhead.{res}")
    return out


def pod_request(pod: dict[str, Any], cfg: KubeConfig) -> PodRequest:
    """The pod's request in graph units (at least one core: the graph's CPU unit is a core)."""
    spec = pod.get("spec") or {}
    name = pod_key(pod)
    cpu = _effective(spec, "cpu", name)
    mem = _effective(spec, "memory", name)
    ext = []
    for res, vtype in cfg.extended:
        n = ceil_units(_effective(spec, res, name), Fraction(1))
        if n > 0:
            ext.append((vtype, n))
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    excl = ann.get(cfg.policy_annotation, "") in ("node", "exclusive-node")
    return PodRequest(
        cores=max(1, ceil_units(cpu, Fraction(1))),
        memory=ceil_units(mem, cfg.memory_bytes),
        extended=tuple(ext),
        exclusive_node=excl,
        storage=ceil_units(_effective(spec, "ephemeral-storage", name), cfg.storage_bytes),
    )


def _tolerated(pod_tolerations: list[dict[str, Any]], key: str) -> bool:
    for t in pod_tolerations:
        k = t.get("key") or ""
        if t.get("effect") not in (None, "", *_BLOCKING):
            continue
        if (not k and t.get("operator") == "Exists") or k == key:
            return True
    return False


def _expression(e: dict[str, Any], nodes: dict[str, NodeInfo]) -> dict[str, Any]:
    key = e.get("key", "")
    op = e.get("operator", "")
    vals = list(e.get("values") or ())
    if op == "In":
        return {"or": [{"properties": [f"{key}={v}"]} for v in vals]} if vals else {"properties": [_NONE]}
    if op == "NotIn":
        return {"properties": [f"^{key}={v}" for v in vals]} if vals else {}
    if op == "Exists":
        return {"properties": [key]}
    if op == "DoesNotExist":
        return {"properties": [f"^{key}"]}
    if op in ("Gt", "Lt"):
        if len(vals) != 1:
            raise InputError(f"node affinity {key} {op}: expects exactly one value")
        try:
            bound = int(vals[0])
        except ValueError:
            raise InputError(f"node affinity {key} {op}: {vals[0]!r} is not an integer") from None
        names = []
        for n in nodes.values():
            v = n.labels.get(key)
            try:
                x = int(v) if v is not None else None
            except ValueError:
                x = None
            if x is not None and (x > bound if op == "Gt" else x < bound):
                names.append(n.name)
        return {"hostlist": [",".join(sorted(names))]} if names else {"properties": [_NONE]}
    raise InputError(f"node affinity {key}: unknown operator {op!r}")


def pod_constraint(
    pod: dict[str, Any], nodes: dict[str, NodeInfo], taint_keys: AbstractSet[str] | None = None
) -> dict[str, Any] | None:
    """The RFC 31 constraint of a pod (None: any node); ``nodes`` resolves Gt/Lt and metadata.name."""
    spec = pod.get("spec") or {}
    parts: list[dict[str, Any]] = []
    sel = spec.get("nodeSelector") or {}
    if sel:
        parts.append({"properties": [f"{k}={v}" for k, v in sorted(sel.items())]})
    req = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = req.get("nodeSelectorTerms") or []
    if terms:
        alts = []
        for t in terms:
            exprs = [_expression(e, nodes) for e in t.get("matchExpressions") or ()]
            for f in t.get("matchFields") or ():
                if f.get("key") != "metadata.name" or f.get("operator") not in ("In", "NotIn"):
                    raise InputError(
                        f"node affinity matchFields: unsupported {f.get('key')} {f.get('operator')}"
                    )
                names = ",".join(f.get("values") or ())
                hl = {"hostlist": [names]} if names else {"properties": [_NONE]}
                exprs.append(hl if f.get("operator") == "In" else {"not": [hl]})
            exprs = [x for x in exprs if x]
            alts.append({"and": exprs} if len(exprs) > 1 else (exprs[0] if exprs else {}))
        if any(a == {} for a in alts):
            pass  # an empty term matches every node: the OR is true
        else:
            parts.append({"or": alts} if len(alts) > 1 else alts[0])
    if spec.get("nodeName"):
        parts.append({"hostlist": [spec["nodeName"]]})
    tols = spec.get("tolerations") or []
    bad = sorted(k for k in (taint_keys or ()) if not _tolerated(tols, k))
    if bad:
        parts.append({"properties": [f"^taint/{k}" for k in bad]})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"and": parts}


def pod_group(pod: dict[str, Any], cfg: KubeConfig) -> GroupKey:
    """The group of a pod: gang label, else controller owner, else the pod itself."""
    md = pod.get("metadata") or {}
    ns = md.get("namespace", "default")
    labels = md.get("labels") or {}
    gang = labels.get(cfg.group_label)
    if gang:
        raw = labels.get(cfg.min_member_label) or (md.get("annotations") or {}).get(cfg.min_member_label)
        try:
            mm = int(raw) if raw is not None else 1
        except ValueError:
            raise InputError(
                f"pod {pod_key(pod)}: {cfg.min_member_label}={raw!r} is not an integer"
            ) from None
        if mm < 1:
            raise InputError(f"pod {pod_key(pod)}: {cfg.min_member_label} must be >= 1, got {mm}")
        return GroupKey(f"PodGroup/{ns}/{gang}", mm)
    for ref in md.get("ownerReferences") or ():
        if ref.get("controller"):
            return GroupKey(f"{ref.get('kind')}/{ns}/{ref.get('name')}")
    return GroupKey(f"Pod/{ns}/{md.get('name', '')}")
