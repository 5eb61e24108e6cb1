"""Controllers that run inside the stand-in server: what kube-controller-manager and the
kubelets would do, reduced to what a scheduler can observe.

* **ReplicaSet controller** — keeps the number of active pods (not terminating, not
  Succeeded/Failed) owned by a ReplicaSet equal to ``spec.replicas``: creates pods from the
  template (``generateName`` = name + ``-``, template labels and annotations, an owner
  reference with ``controller: true``), deletes surplus pods in the real controller's order
  (unassigned first, then Pending before Running, not-ready before ready, newest first),
  adopts matching orphans, records ``SuccessfulCreate``/``SuccessfulDelete`` Events and
  writes ``status`` (``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``,
  ``availableReplicas``, ``observedGeneration``).
* **Garbage collector** — when an owner is deleted, deletes its dependents (background
  propagation; ``Orphan`` is handled by the server before the delete).
* **Node lifecycle** — a cordoned node (``spec.unschedulable``) gets the
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint, removed on uncordon.
* **Kubelet stand-in** — a pod bound to an existing node is admitted if the node's
  ``allocatable`` (cpu, memory, pods, extended resources) still holds its requests (as the
  kubelet's admission does; otherwise the pod fails with reason ``OutOf<resource>``),
  then becomes ``Running`` and ``Ready`` at once; a terminating pod is removed at once.

The controllers react to store writes (a listener feeds a queue; one thread drains it), so
clients see the same asynchronous behaviour as against a real cluster.
"""

from __future__ import annotations

import contextlib
import copy
import queue
import re
import threading
from typing import Any

from kube.testing._resources import RESOURCES, Resource, resource
from kube.testing._selectors import label_selector_from_object
from kube.testing._store import ApiError, Store, WatchEvent, now_rfc3339

__all__ = ["Controllers", "parse_quantity"]

PODS = resource("", "v1", "pods")
NODES = resource("", "v1", "nodes")
EVENTS = resource("", "v1", "events")
RS = resource("apps", "v1", "replicasets")
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

_SUFFIXES = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}  # fmt: skip
_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse_quantity(value: Any) -> float:
    """A resource.Quantity (``"500m"``, ``"2Gi"``, ``4``) as a number of base units."""
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"quantities must match the regular expression '{_QUANTITY_RE.pattern}': {value!r}")
    return float(m.group(1)) * _SUFFIXES[m.group(2) or ""]


def pod_requests(pod: dict) -> dict[str, float]:
    """Effective requests: sum over containers, at least the largest init container (kubelet rule)."""
    total: dict[str, float] = {}
    spec = pod.get("spec") or {}
    for c in spec.get("containers") or []:
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0.0) + parse_quantity(q)
    for c in spec.get("initContainers") or []:
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, 0.0), parse_quantity(q))
    return total


def _owner(obj: dict) -> dict | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def _active(pod: dict) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


class Controllers:
    """The controller thread of one :class:`~kube.testing.ApiServer`."""

    def __init__(self, store: Store, stopping: threading.Event) -> None:
        self.store = store
        self._stopping = stopping
        self._queue: queue.Queue[tuple[Resource, WatchEvent]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="kube-controllers", daemon=True)
        store.listeners.append(lambda res, event: self._queue.put((res, event)))

    def start(self) -> None:
        with self.store.cond:  # objects created before start() are reconciled too
            for res in (RS, PODS, NODES):
                for obj in self.store.list(res, None)[0]:
                    self._queue.put(
                        (
                            res,
                            WatchEvent(
                                self.store.rv, "ADDED", obj["metadata"].get("namespace", ""), obj, None
                            ),
                        )
                    )
        self._thread.start()

    def join(self) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                res, event = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            # a conflict or a vanished object: a later event reconciles again
            with contextlib.suppress(ApiError):
                self._handle(res, event)

    def _handle(self, res: Resource, event: WatchEvent) -> None:
        obj = event.obj
        if event.type == "DELETED":
            self._collect_garbage(obj)
        key = (res.group, res.plural)
        if key == ("apps", "replicasets"):
            if event.type != "DELETED":
                self._sync_replicaset(event.namespace, obj["metadata"]["name"])
        elif key == ("", "pods"):
            if event.type != "DELETED":
                self._kubelet(obj)
            ref = _owner(obj)
            if ref and ref.get("kind") == "ReplicaSet":
                self._sync_replicaset(event.namespace, ref["name"])
            elif event.type != "DELETED" and not ref and obj["metadata"].get("labels"):
                for rs in self.store.list(RS, event.namespace)[0]:
                    self._sync_replicaset(event.namespace, rs["metadata"]["name"])
        elif key == ("", "nodes") and event.type != "DELETED":
            self._sync_node(obj)

    # -- garbage collector -------------------------------------------------------------------

    def _collect_garbage(self, owner: dict) -> None:
        uid = owner["metadata"]["uid"]
        for res in RESOURCES.values():
            for obj in self.store.list(res, None)[0]:
                if any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or []):
                    with contextlib.suppress(ApiError):
                        self.store.delete(res, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    # -- node lifecycle ----------------------------------------------------------------------

    def _sync_node(self, node: dict) -> None:
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        taints = (node.get("spec") or {}).get("taints") or []
        tainted = any(t.get("key") == _UNSCHEDULABLE_TAINT for t in taints)
        if cordoned == tainted:
            return

        def fix(n: dict) -> dict:
            kept = [t for t in n["spec"].get("taints") or [] if t.get("key") != _UNSCHEDULABLE_TAINT]
            if cordoned:
                kept.append({"key": _UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": now_rfc3339()})
            if kept:
                n["spec"]["taints"] = kept
            else:
                n["spec"].pop("taints", None)
            return n

        self.store.mutate(NODES, "", node["metadata"]["name"], fix)

    # -- kubelet -----------------------------------------------------------------------------

    def _kubelet(self, pod: dict) -> None:
        node_name = pod["spec"].get("nodeName")
        if not node_name:
            return
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            self.store.finish_deletion(PODS, ns, name)
            return
        if (pod.get("status") or {}).get("phase") != "Pending":
            return
        try:
            node = self.store.get(NODES, "", node_name)
        except ApiError:
            return  # bound to a node that does not exist: stays Pending, as with no kubelet
        reason, message = self._admit(pod, node)
        if reason:
            status = {**pod.get("status", {}), "phase": "Failed", "reason": reason, "message": message}
        else:
            now = now_rfc3339()
            addresses = (node.get("status") or {}).get("addresses") or []
            host_ip = next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "10.0.0.1")
            pod_ip = f"10.244.{(hash(name) >> 8) % 250 + 1}.{hash(name) % 250 + 1}"
            conditions = [c for c in pod["status"].get("conditions") or [] if c.get("type") == "PodScheduled"]
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
                conditions.append(
                    {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                )
            status = {
                **pod["status"],
                "phase": "Running",
                "conditions": conditions,
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": now,
                "containerStatuses": [
                    {
                        "name": c["name"],
                        "image": c.get("image", ""),
                        "imageID": "",
                        "ready": True,
                        "started": True,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": now}},
                    }
                    for c in pod["spec"].get("containers") or []
                ],
            }

        def set_status(p: dict) -> dict:
            if p["spec"].get("nodeName") != node_name or p["status"].get("phase") != "Pending":
                raise ApiError(409, "Conflict", "pod changed")
            p["status"] = status
            return p

        self.store.mutate(PODS, ns, name, set_status, subresource="status")

    def _admit(self, pod: dict, node: dict) -> tuple[str, str]:
        """The kubelet's resource admission: ("", "") or (reason, message)."""
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        if not allocatable:
            return "", ""
        used: dict[str, float] = {}
        count = 0
        for other in self.store.list(PODS, None)[0]:
            if other["spec"].get("nodeName") != node["metadata"]["name"] or other is pod:
                continue
            if other["metadata"]["uid"] == pod["metadata"]["uid"] or not _active(other):
                continue
            if (other.get("status") or {}).get("phase") != "Running":
                continue  # only pods the kubelet already admitted count
            count += 1
            for r, q in pod_requests(other).items():
                used[r] = used.get(r, 0.0) + q
        if "pods" in allocatable and count + 1 > parse_quantity(allocatable["pods"]):
            return (
                "OutOfpods",
                f"Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: {count}, capacity: {allocatable['pods']}",
            )
        for r, q in pod_requests(pod).items():
            if r not in allocatable:
                if r.startswith(("hugepages-",)) or "/" in r:
                    return (
                        f"OutOf{r}",
                        f"Pod was rejected: Node didn't have enough resource: {r}, requested: {q:g}, used: 0, capacity: 0",
                    )
                continue
            cap = parse_quantity(allocatable[r])
            if used.get(r, 0.0) + q > cap + 1e-9:
                return (
                    f"OutOf{r}",
                    f"Pod was rejected: Node didn't have enough resource: {r}, requested: {q:g}, used: {used.get(r, 0.0):g}, capacity: {cap:g}",
                )
        return "", ""

    # -- ReplicaSet controller ---------------------------------------------------------------

    def _sync_replicaset(self, ns: str, name: str) -> None:
        store = self.store
        with store.cond:
            try:
                rs = store.get(RS, ns, name)
            except ApiError:
                return
            if rs["metadata"].get("deletionTimestamp"):
                return
            uid = rs["metadata"]["uid"]
            spec = rs.get("spec") or {}
            selects = label_selector_from_object(spec.get("selector"))
            owned, orphans = [], []
            for pod in store.list(PODS, ns)[0]:
                ref = _owner(pod)
                if ref is not None and ref.get("uid") == uid:
                    owned.append(pod)
                elif ref is None and _active(pod) and selects(pod):
                    orphans.append(pod)
            for pod in orphans:
                owned.append(store.mutate(PODS, ns, pod["metadata"]["name"], lambda p: self._adopt(p, rs)))
            active = [p for p in owned if _active(p)]
            diff = int(spec.get("replicas", 1)) - len(active)
            if diff > 0:
                for _ in range(diff):
                    try:
                        created = store.create(PODS, ns, self._pod_from_template(rs))
                    except ApiError as err:
                        self._record(rs, "Warning", "FailedCreate", f"Error creating: {err.message}")
                        break
                    active.append(created)
                    self._record(
                        rs, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}"
                    )
            elif diff < 0:
                active.sort(key=_deletion_rank)
                for pod in active[:-diff]:
                    with contextlib.suppress(ApiError):
                        store.delete(PODS, ns, pod["metadata"]["name"])
                        self._record(
                            rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}"
                        )
                active = active[-diff:]
            template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            fresh = [store.get(PODS, ns, p["metadata"]["name"]) for p in active if self._exists(ns, p)]
            status = {
                "replicas": len(fresh),
                "fullyLabeledReplicas": sum(
                    1
                    for p in fresh
                    if all(
                        (p["metadata"].get("labels") or {}).get(k) == v for k, v in template_labels.items()
                    )
                ),
                "readyReplicas": sum(1 for p in fresh if _ready(p)),
                "availableReplicas": sum(1 for p in fresh if _ready(p)),
                "observedGeneration": rs["metadata"].get("generation", 1),
            }
            status = {k: v for k, v in status.items() if v or k == "replicas"}

            def write(r: dict) -> dict:
                r["status"] = {
                    **{k: v for k, v in (r.get("status") or {}).items() if k == "conditions"},
                    **status,
                }
                return r

            store.mutate(RS, ns, name, write, subresource="status")

    def _exists(self, ns: str, pod: dict) -> bool:
        try:
            current = self.store.get(PODS, ns, pod["metadata"]["name"])
        except ApiError:
            return False
        return current["metadata"]["uid"] == pod["metadata"]["uid"] and _active(current)

    @staticmethod
    def _controller_ref(rs: dict) -> dict:
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs["metadata"]["name"],
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def _adopt(self, pod: dict, rs: dict) -> dict:
        pod["metadata"].setdefault("ownerReferences", []).append(self._controller_ref(rs))
        return pod

    def _pod_from_template(self, rs: dict) -> dict:
        template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        pod_meta: dict[str, Any] = {
            "generateName": f"{rs['metadata']['name']}-",
            "namespace": rs["metadata"]["namespace"],
            "ownerReferences": [self._controller_ref(rs)],
        }
        for field in ("labels", "annotations", "finalizers"):
            if meta.get(field):
                pod_meta[field] = meta[field]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.get("spec") or {}}

    def _record(self, rs: dict, type_: str, reason: str, message: str) -> None:
        meta = rs["metadata"]
        now = now_rfc3339()
        event = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "kind": "ReplicaSet",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": "apps/v1",
                "resourceVersion": meta["resourceVersion"],
            },
            "reason": reason,
            "message": message,
            "source": {"component": "replicaset-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": type_,
            "eventTime": None,
            "reportingComponent": "replicaset-controller",
            "reportingInstance": "",
        }
        with contextlib.suppress(ApiError):
            self.store.create(EVENTS, meta["namespace"], event)


def _deletion_rank(pod: dict) -> tuple:
    """Sort key: the pods to delete first come first (controller.ActivePods ordering)."""
    phase = {"Pending": 0, "Unknown": 1, "Running": 2}.get((pod.get("status") or {}).get("phase", ""), 0)
    created = pod["metadata"].get("creationTimestamp", "")
    return (
        bool(pod["spec"].get("nodeName")),
        phase,
        _ready(pod),
        _negate(created),
        _negate(pod["metadata"]["name"]),
    )


def _negate(text: str) -> tuple[int, ...]:
    """A key that sorts strings in reverse (newest timestamp first)."""
    return tuple(-ord(c) for c in text)
