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
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint, a node whose Ready condition is
  not True the ``node.kubernetes.io/not-ready`` NoSchedule and NoExecute taints (no
  eviction follows); both are removed when the state clears.
* **Pod GC** — pods bound to a deleted node are force-deleted at once.
* **Kubelet stand-in** — a pod bound to an existing node (or to a node created later) is
  admitted as the kubelet admits it: its ``nodeSelector`` and required node affinity must
  match the node (else it fails with reason ``NodeAffinity``) and the node's
  ``allocatable`` (cpu, memory, pods, extended resources) must still hold its requests
  (else reason ``OutOf<resource>``); then it becomes ``Running`` and ``Ready`` at once. A
  terminating pod is removed at once.

The controllers react to store writes (a listener feeds a queue; one thread drains it), so
clients see the same asynchronous behaviour as against a real cluster.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import queue
import re
import threading
import time
from typing import Any

import orjson

from kube.testing._hpa import sync_all as sync_all_hpas
from kube.testing._resources import RESOURCES, Resource, resource
from kube.testing._selectors import label_selector_from_object
from kube.testing._store import ApiError, Store, WatchEvent, _copy, now_rfc3339

__all__ = ["Controllers", "parse_quantity"]

PODS = resource("", "v1", "pods")
NODES = resource("", "v1", "nodes")
EVENTS = resource("", "v1", "events")
RS = resource("apps", "v1", "replicasets")
DEPLOYMENTS = resource("apps", "v1", "deployments")
STATEFULSETS = resource("apps", "v1", "statefulsets")
JOBS = resource("batch", "v1", "jobs")
_COMPONENTS = {
    "ReplicaSet": "replicaset-controller",
    "Deployment": "deployment-controller",
    "StatefulSet": "statefulset-controller",
    "Job": "job-controller",
}
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_NOT_READY_TAINT = "node.kubernetes.io/not-ready"
_REVISION = "deployment.kubernetes.io/revision"
_REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
_HASH_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

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


def _status_only(event: WatchEvent) -> bool:
    """A write that changed only the object's status (and so its resourceVersion): what a
    controller's own status update looks like.  Such an event does not sync the workload
    again (its pods' events do), or every sync would cost a second one."""
    if event.type != "MODIFIED" or event.prev is None:
        return False
    new, old = event.obj, event.prev
    if new.get("spec") != old.get("spec"):
        return False
    a = {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}
    b = {k: v for k, v in old["metadata"].items() if k != "resourceVersion"}
    return a == b


_DONE = ("Succeeded", "Failed")
_SPAM_BURST = 25  # client-go tools/record: defaultSpamBurst
_SPAM_REFILL_S = 300.0  # 1 / defaultSpamQPS


def _active(pod: dict) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in _DONE


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
        self._owners: dict[tuple[str, str, str], Any] = {}  # workloads to sync after this batch
        #: seconds between two syncs of every HorizontalPodAutoscaler (kube-controller-manager: 15)
        self.hpa_interval = 1.0
        self._next_hpa = 0.0
        #: (source, involved object) -> (tokens, monotonic time) of the event spam filter
        self._event_tokens: dict[tuple[str, ...], tuple[float, float]] = {}
        #: workload -> (monotonic start, duration) of its last pod-triggered sync
        self._synced: dict[tuple[str, str, str], tuple[float, float]] = {}
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
            wait = max(0.0, min(0.2, self._next_hpa - time.monotonic()))
            if self._owners:
                now = time.monotonic()
                wait = max(0.0, min(wait, min(self._due(k) for k in self._owners) - now))
            batch = []
            with contextlib.suppress(queue.Empty):
                batch.append(self._queue.get(timeout=wait))
            while len(batch) < 1000:  # what has queued up meanwhile is handled together
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for res, event in batch:
                # a conflict or a vanished object: a later event reconciles again
                with contextlib.suppress(ApiError):
                    self._handle(res, event)
            self._sync_owners()
            if time.monotonic() >= self._next_hpa:  # the HPA controller's periodic resync
                self._next_hpa = time.monotonic() + self.hpa_interval
                sync_all_hpas(self.store)

    def _due(self, key: tuple[str, str, str]) -> float:
        last, took = self._synced.get(key, (float("-inf"), 0.0))
        return last + 10 * took

    def _sync_owners(self) -> None:
        """A workload's pods changed: one sync per workload per batch, not one per pod event,
        and a workload whose sync took ``t`` is synced again at most every ``10 t`` (as
        kube-controller-manager's work queue coalesces keys): a burst of pod events on a
        10,000-pod ReplicaSet costs the controller a bounded share of the server, not
        O(pods) per event.  A deferred sync runs when due, whatever else happens."""
        now = time.monotonic()
        for key in [k for k in self._owners if self._due(k) <= now]:
            fn = self._owners.pop(key)
            t0 = time.monotonic()
            with contextlib.suppress(ApiError):
                fn(key[1], key[2])
            self._synced[key] = (t0, time.monotonic() - t0)
        if len(self._synced) > 4096:
            self._synced = {k: v for k, v in self._synced.items() if v[0] + 10 * v[1] > now}

    def _handle(self, res: Resource, event: WatchEvent) -> None:
        obj = event.obj
        ns = event.namespace
        if event.type == "DELETED":
            self._collect_garbage(obj)
        key = (res.group, res.plural)
        sync = {
            ("apps", "replicasets"): self._sync_replicaset,
            ("apps", "deployments"): self._sync_deployment,
            ("apps", "statefulsets"): self._sync_statefulset,
            ("batch", "jobs"): self._sync_job,
        }
        if key in sync:
            if event.type != "DELETED" and not (key == ("apps", "replicasets") and _status_only(event)):
                sync[key](ns, obj["metadata"]["name"])
            ref = _owner(obj)
            if ref and ref.get("kind") == "Deployment":
                self._sync_deployment(ns, ref["name"])
        if key == ("autoscaling", "horizontalpodautoscalers") and event.type == "ADDED":
            from kube.testing._hpa import sync_one

            sync_one(self.store, ns, obj["metadata"]["name"])
        if key in (("", "pods"), ("policy", "poddisruptionbudgets")):
            self._sync_budgets(ns)
        if key == ("", "pods"):
            if event.type != "DELETED":
                self._kubelet(obj)
            ref = _owner(obj)
            by_kind = {"ReplicaSet": RS, "StatefulSet": STATEFULSETS, "Job": JOBS}
            if ref and ref.get("kind") in by_kind:
                fn = sync[(by_kind[ref["kind"]].group, by_kind[ref["kind"]].plural)]
                self._owners[(ref["kind"], ns, ref["name"])] = fn
            elif event.type != "DELETED" and not ref and obj["metadata"].get("labels"):
                for rs in self.store.list(RS, ns)[0]:
                    self._sync_replicaset(ns, rs["metadata"]["name"])
        elif key == ("", "nodes"):
            if event.type == "DELETED":
                self._collect_pods_of(obj["metadata"]["name"])
            else:
                self._sync_node(obj)
                if event.type == "ADDED":  # the new node's kubelet starts the pods bound to it
                    for pod in self.store.pods_on(obj["metadata"]["name"]):
                        self._kubelet(pod)

    # -- disruption controller ---------------------------------------------------------------

    def _sync_budgets(self, ns: str) -> None:
        """Keep every PodDisruptionBudget's status of the namespace current (see ``_eviction``)."""
        from kube.testing._eviction import PDBS, pdb_status

        with self.store.cond:
            for pdb in self.store.list(PDBS, ns)[0]:
                status = pdb_status(self.store, pdb)
                old = pdb.get("status") or {}
                if {k: v for k, v in old.items() if k != "conditions"} != {
                    k: v for k, v in status.items() if k != "conditions"
                }:
                    self.store.mutate(
                        PDBS, ns, pdb["metadata"]["name"], lambda o, s=status: {**o, "status": s}, "status"
                    )

    # -- garbage collector -------------------------------------------------------------------

    def _collect_garbage(self, owner: dict) -> None:
        uid = owner["metadata"]["uid"]
        for res in RESOURCES.values():
            for obj in self.store.dependents(res, uid):
                if any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or []):
                    with contextlib.suppress(ApiError):
                        self.store.delete(res, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    # -- node lifecycle ----------------------------------------------------------------------

    def _sync_node(self, node: dict) -> None:
        """Taints from state, as the node lifecycle controller sets them: ``unschedulable``
        (NoSchedule) while cordoned; ``not-ready`` (NoSchedule and NoExecute) while the node
        reports a Ready condition that is not True (a node without conditions is left alone)."""
        spec = node.get("spec") or {}
        ready = next(
            (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None
        )
        want: set[tuple[str, str]] = set()
        if spec.get("unschedulable"):
            want.add((_UNSCHEDULABLE_TAINT, "NoSchedule"))
        if ready is not None and ready.get("status") != "True":
            want |= {(_NOT_READY_TAINT, "NoSchedule"), (_NOT_READY_TAINT, "NoExecute")}
        managed = (_UNSCHEDULABLE_TAINT, _NOT_READY_TAINT)
        have = {(t.get("key"), t.get("effect")) for t in spec.get("taints") or [] if t.get("key") in managed}
        if want == have:
            return

        def fix(n: dict) -> dict:
            old = n["spec"].get("taints") or []
            kept = [t for t in old if t.get("key") not in managed or (t.get("key"), t.get("effect")) in want]
            present = {(t.get("key"), t.get("effect")) for t in kept}
            for key, effect in sorted(want - present):
                kept.append({"key": key, "effect": effect, "timeAdded": now_rfc3339()})
            if kept:
                n["spec"]["taints"] = kept
            else:
                n["spec"].pop("taints", None)
            return n

        self.store.mutate(NODES, "", node["metadata"]["name"], fix)

    def _collect_pods_of(self, node_name: str) -> None:
        """Pod garbage collection: pods bound to a node that no longer exists are force-deleted
        (the real PodGC waits about 40 s first)."""
        for pod in self.store.pods_on(node_name):
            with contextlib.suppress(ApiError):
                self.store.delete(
                    PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], {"gracePeriodSeconds": 0}
                )

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
            return status

        self.store.set_status(PODS, ns, name, set_status)

    def _admit(self, pod: dict, node: dict) -> tuple[str, str]:
        """The kubelet's admission (node selector, required node affinity, resources):
        ("", "") or (reason, message) as a rejecting kubelet writes them."""
        if not _node_matches(pod, node):
            return "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed"
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        if not allocatable:
            return "", ""
        used: dict[str, float] = {}
        count = 0
        for other in self.store.pods_on(node["metadata"]["name"]):
            if other is pod:
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
            # one pass over the owner index (in no order: nothing below depends on it, deletion
            # sorts by its own total order); O(pods) per sync, so kept tight
            active = []
            for p in store.dependents(PODS, uid, ordered=False):
                md = p["metadata"]
                for ref in md.get("ownerReferences") or ():
                    if ref.get("controller"):
                        phase = (p.get("status") or {}).get("phase")
                        if ref.get("uid") == uid and not md.get("deletionTimestamp") and phase not in _DONE:
                            active.append(p)
                        break
            orphans = [p for p in store.unowned_pods(ns) if _active(p) and selects(p)]
            for pod in orphans:
                adopted = store.mutate(PODS, ns, pod["metadata"]["name"], lambda p: self._adopt(p, rs))
                if _active(adopted):
                    active.append(adopted)
            diff = int(spec.get("replicas", 1)) - len(active)
            if diff > 0:
                for _ in range(diff):
                    try:
                        created = store.create(PODS, ns, self._pod_from_template(rs), owned=True)
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
            # ``active`` holds the current objects: read from the store's index, created or kept
            # above, all under the store lock
            labelled = ready = 0
            wanted = template_labels.items()
            exact = any(v is None for v in template_labels.values())  # else a view's subset test says it
            for p in active:
                labels = p["metadata"].get("labels") or {}
                if exact:
                    labelled += all(labels.get(k) == v for k, v in wanted)
                else:
                    labelled += wanted <= labels.items()
                for c in (p.get("status") or {}).get("conditions") or ():
                    if c.get("type") == "Ready" and c.get("status") == "True":
                        ready += 1
                        break
            status = {
                "replicas": len(active),
                "fullyLabeledReplicas": labelled,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": rs["metadata"].get("generation", 1),
            }
            status = {k: v for k, v in status.items() if v or k == "replicas"}

            def write(r: dict) -> dict:
                return {**{k: v for k, v in (r.get("status") or {}).items() if k == "conditions"}, **status}

            store.set_status(RS, ns, name, write)

    def _event_allowed(self, key: tuple[str, ...]) -> bool:
        """client-go's event spam filter (``EventSourceObjectSpamFilter``, tools/record/events_cache.go),
        which kube-controller-manager's recorders use: per source and involved object a token
        bucket of 25 events refilled at one per 300 s.  A 10,000-pod ReplicaSet records 25
        ``SuccessfulCreate`` events, as on a real cluster, not 10,000.  (client-go's aggregation of
        similar events into one "combined from similar events" Event is not done.)"""
        now = time.monotonic()
        tokens, last = self._event_tokens.pop(key, (_SPAM_BURST, now))
        tokens = min(_SPAM_BURST, tokens + (now - last) / _SPAM_REFILL_S)
        allowed = tokens >= 1
        self._event_tokens[key] = (tokens - 1 if allowed else tokens, now)  # most recent last
        if len(self._event_tokens) > 4096:  # client-go keeps an LRU of 4,096 objects
            del self._event_tokens[next(iter(self._event_tokens))]
        return allowed

    def _owned(self, res: Resource, ns: str, owner: dict) -> list[dict]:
        uid = owner["metadata"]["uid"]
        return [
            o
            for o in self.store.dependents(res, uid)
            if o["metadata"].get("namespace", "") == ns and (_owner(o) or {}).get("uid") == uid
        ]

    # -- Deployment controller ---------------------------------------------------------------

    def _sync_deployment(self, ns: str, name: str) -> None:
        """One ReplicaSet per pod template (``<name>-<pod-template-hash>``); the current one
        gets ``spec.replicas``, older ones are scaled to 0 (a rollout done at once)."""
        store = self.store
        with store.cond:
            try:
                d = store.get(DEPLOYMENTS, ns, name)
            except ApiError:
                return
            if d["metadata"].get("deletionTimestamp"):
                return
            spec = d.get("spec") or {}
            template = spec.get("template") or {}
            norm = _normal_template(template)
            digest = hashlib.sha256(orjson.dumps(norm, option=orjson.OPT_SORT_KEYS)).digest()
            pod_hash = "".join(_HASH_ALPHABET[b % len(_HASH_ALPHABET)] for b in digest[:10])
            replicas = int(spec.get("replicas", 1))
            owned = self._owned(RS, ns, d)
            # the ReplicaSet whose template is this one, the hash label aside (upstream's
            # EqualIgnoreHash): a rollback (``kubectl rollout undo``) scales the old one up again
            current = next(
                (r for r in owned if _normal_template((r.get("spec") or {}).get("template"), True) == norm),
                None,
            )
            revisions = [int((r["metadata"].get("annotations") or {}).get(_REVISION, 0)) for r in owned]
            revision = 1 + max(revisions, default=0)
            if current is not None and int(
                (current["metadata"].get("annotations") or {}).get(_REVISION, 0)
            ) < max(
                revisions, default=0
            ):  # an older revision comes back: it becomes the newest, as upstream renumbers it
                old_rev = (current["metadata"].get("annotations") or {}).get(_REVISION, "")

                def renumber(r: dict, rev: int = revision, old: str = old_rev) -> dict:
                    ann = r["metadata"].setdefault("annotations", {})
                    history = [h for h in (ann.get(_REVISION_HISTORY) or "").split(",") if h]
                    ann[_REVISION] = str(rev)
                    ann[_REVISION_HISTORY] = ",".join([*history, old]) if old else ",".join(history)
                    return r

                current = store.mutate(RS, ns, current["metadata"]["name"], renumber)
                owned = [current if r["metadata"]["uid"] == current["metadata"]["uid"] else r for r in owned]
                self._record(
                    d,
                    "Normal",
                    "ScalingReplicaSet",
                    f"Rolled back to replica set {current['metadata']['name']}",
                )
            if current is None:
                labels = {
                    **((template.get("metadata") or {}).get("labels") or {}),
                    "pod-template-hash": pod_hash,
                }
                selector = copy.deepcopy(spec.get("selector") or {})
                selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
                rs_template = copy.deepcopy(template)
                rs_template.setdefault("metadata", {})["labels"] = labels
                body = {
                    "metadata": {
                        "name": f"{name}-{pod_hash}",
                        "labels": labels,
                        "annotations": {_REVISION: str(revision)},
                        "ownerReferences": [self._controller_ref(d)],
                    },
                    "spec": {"replicas": replicas, "selector": selector, "template": rs_template},
                }
                try:
                    current = store.create(RS, ns, body)
                except ApiError as err:
                    self._record(d, "Warning", "FailedCreate", f"Error creating ReplicaSet: {err.message}")
                    return
                self._record(
                    d,
                    "Normal",
                    "ScalingReplicaSet",
                    f"Scaled up replica set {current['metadata']['name']} from 0 to {replicas}",
                )
                owned.append(current)
            for r in owned:
                want = replicas if r is current else 0
                if (r.get("spec") or {}).get("replicas", 1) != want:
                    store.set_scale(
                        RS, ns, r["metadata"]["name"], lambda s, want=want: {**s, "spec": {"replicas": want}}
                    )
            rev = (current["metadata"].get("annotations") or {}).get(_REVISION)
            if rev and (d["metadata"].get("annotations") or {}).get(_REVISION) != rev:

                def annotate(o: dict, rev: str = rev) -> dict:
                    o["metadata"].setdefault("annotations", {})[_REVISION] = rev
                    return o

                store.mutate(DEPLOYMENTS, ns, name, annotate)  # the Deployment shows its revision
            fresh = [store.get(RS, ns, r["metadata"]["name"]) for r in owned if self._still(RS, ns, r)]
            total = lambda field, rs=fresh: sum((r.get("status") or {}).get(field, 0) for r in rs)  # noqa: E731
            status = {
                "observedGeneration": d["metadata"].get("generation", 1),
                "replicas": total("replicas"),
                "updatedReplicas": (store.get(RS, ns, current["metadata"]["name"]).get("status") or {}).get(
                    "replicas", 0
                ),
                "readyReplicas": total("readyReplicas"),
                "availableReplicas": total("availableReplicas"),
            }
            status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
            store.mutate(
                DEPLOYMENTS,
                ns,
                name,
                lambda o: {**o, "status": {**(o.get("status") or {}), **status}},
                subresource="status",
            )

    def _still(self, res: Resource, ns: str, obj: dict) -> bool:
        try:
            return (
                self.store.get(res, ns, obj["metadata"]["name"])["metadata"]["uid"] == obj["metadata"]["uid"]
            )
        except ApiError:
            return False

    # -- StatefulSet controller --------------------------------------------------------------

    def _sync_statefulset(self, ns: str, name: str) -> None:
        """Pods ``<name>-0 .. <name>-(N-1)``; with ``OrderedReady`` (the default) ordinal i is
        created only once 0..i-1 are Running and Ready, and scale-down removes the highest
        ordinal first, one at a time; ``Parallel`` creates and deletes all at once."""
        store = self.store
        with store.cond:
            try:
                sts = store.get(STATEFULSETS, ns, name)
            except ApiError:
                return
            if sts["metadata"].get("deletionTimestamp"):
                return
            spec = sts.get("spec") or {}
            replicas = int(spec.get("replicas", 1))
            ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
            pods = {p["metadata"]["name"]: p for p in self._owned(PODS, ns, sts)}
            for i in range(replicas):
                pod_name = f"{name}-{i}"
                pod = pods.get(pod_name)
                if pod is None:
                    try:
                        store.get(PODS, ns, pod_name)
                        break  # a pod of that name is still terminating or not ours: wait
                    except ApiError:
                        pass
                    body = self._pod_from_template(sts, name=pod_name)
                    body["metadata"].setdefault("labels", {}).update(
                        {
                            "statefulset.kubernetes.io/pod-name": pod_name,
                            "apps.kubernetes.io/pod-index": str(i),
                        }
                    )
                    body["spec"] = {**body["spec"], "hostname": pod_name}
                    if spec.get("serviceName"):
                        body["spec"]["subdomain"] = spec["serviceName"]
                    try:
                        pod = store.create(PODS, ns, body)
                    except ApiError as err:
                        self._record(
                            sts,
                            "Warning",
                            "FailedCreate",
                            f"create Pod {pod_name} in StatefulSet {name} failed error: {err.message}",
                        )
                        break
                    self._record(
                        sts,
                        "Normal",
                        "SuccessfulCreate",
                        f"create Pod {pod_name} in StatefulSet {name} successful",
                    )
                    pods[pod_name] = pod
                if ordered and not (_active(pod) and _ready(pod)):
                    break
            surplus = sorted(
                (
                    p
                    for n, p in pods.items()
                    if _ordinal(n, name) >= replicas and not p["metadata"].get("deletionTimestamp")
                ),
                key=lambda p: -_ordinal(p["metadata"]["name"], name),
            )
            for pod in surplus[:1] if ordered else surplus:
                with contextlib.suppress(ApiError):
                    store.delete(PODS, ns, pod["metadata"]["name"])
                    self._record(
                        sts,
                        "Normal",
                        "SuccessfulDelete",
                        f"delete Pod {pod['metadata']['name']} in StatefulSet {name} successful",
                    )
            live = [p for p in self._owned(PODS, ns, sts) if _active(p)]
            status = {
                "observedGeneration": sts["metadata"].get("generation", 1),
                "replicas": len(live),
                "readyReplicas": sum(1 for p in live if _ready(p)),
                "currentReplicas": len(live),
                "updatedReplicas": len(live),
                "availableReplicas": sum(1 for p in live if _ready(p)),
            }
            status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")}
            store.mutate(
                STATEFULSETS,
                ns,
                name,
                lambda o: {**o, "status": {**(o.get("status") or {}), **status}},
                subresource="status",
            )

    # -- Job controller ----------------------------------------------------------------------

    def _sync_job(self, ns: str, name: str) -> None:
        """Keep ``min(parallelism, completions - succeeded)`` pods active until the Job is
        complete (pods succeed when something sets their phase: there are no containers)."""
        store = self.store
        with store.cond:
            try:
                job = store.get(JOBS, ns, name)
            except ApiError:
                return
            if job["metadata"].get("deletionTimestamp"):
                return
            spec = job.get("spec") or {}
            old_status = job.get("status") or {}
            pods = self._owned(PODS, ns, job)
            succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
            failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
            active = [p for p in pods if _active(p)]
            completions = spec.get("completions")
            parallelism = int(spec.get("parallelism", 1))
            done = completions is not None and succeeded >= int(completions)
            done = done or (completions is None and succeeded > 0)
            want = 0
            if not done and not spec.get("suspend") and failed <= int(spec.get("backoffLimit", 6)):
                left = int(completions) - succeeded if completions is not None else parallelism
                want = min(parallelism, left)
            if len(active) < want:
                for _ in range(want - len(active)):
                    try:
                        pod = store.create(PODS, ns, self._pod_from_template(job), owned=True)
                    except ApiError as err:
                        self._record(job, "Warning", "FailedCreate", f"Error creating: {err.message}")
                        break
                    active.append(pod)
                    self._record(job, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
            elif len(active) > want:
                active.sort(key=_deletion_rank)
                for pod in active[: len(active) - want]:
                    with contextlib.suppress(ApiError):
                        store.delete(PODS, ns, pod["metadata"]["name"])
                active = active[len(active) - want :]
            now = now_rfc3339()
            status = {
                **{k: v for k, v in old_status.items() if k in ("startTime", "conditions", "completionTime")},
                "active": len(active),
                "succeeded": succeeded,
                "failed": failed,
            }
            status.setdefault("startTime", now)
            if done and "completionTime" not in status:
                status["completionTime"] = now
                status["conditions"] = [
                    *(status.get("conditions") or []),
                    {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now},
                ]
            status = {k: v for k, v in status.items() if v or k == "startTime"}
            store.mutate(JOBS, ns, name, lambda o: {**o, "status": status}, subresource="status")

    @staticmethod
    def _controller_ref(owner: dict) -> dict:
        return {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def _adopt(self, pod: dict, rs: dict) -> dict:
        pod["metadata"].setdefault("ownerReferences", []).append(self._controller_ref(rs))
        return pod

    def _pod_from_template(self, rs: dict, name: str | None = None) -> dict:
        template = _copy((rs.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        pod_meta: dict[str, Any] = {
            **({"name": name} if name else {"generateName": f"{rs['metadata']['name']}-"}),
            "namespace": rs["metadata"]["namespace"],
            "ownerReferences": [self._controller_ref(rs)],
        }
        for field in ("labels", "annotations", "finalizers"):
            if meta.get(field):
                pod_meta[field] = meta[field]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.get("spec") or {}}

    def _record(self, rs: dict, type_: str, reason: str, message: str) -> None:
        meta = rs["metadata"]
        component = _COMPONENTS.get(rs["kind"], "kube-controller-manager")
        if not self._event_allowed((component, rs["kind"], meta["namespace"], meta["name"], meta["uid"])):
            return
        now = now_rfc3339()
        event = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "kind": rs["kind"],
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": rs["apiVersion"],
                "resourceVersion": meta["resourceVersion"],
            },
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": type_,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": "",
        }
        with contextlib.suppress(ApiError):
            self.store.create(EVENTS, meta["namespace"], event, owned=True)


def _normal_template(template: Any, drop_hash: bool = False) -> Any:
    """A pod template with empty and null fields removed (what a Go client adds, such as
    ``creationTimestamp: null`` and ``resources: {}``), and the ``pod-template-hash`` label
    optionally: two templates that mean the same compare equal."""

    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            out = {k: clean(v) for k, v in x.items()}
            return {k: v for k, v in out.items() if v not in (None, {}, [], "")}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    t = clean(copy.deepcopy(template or {}))
    if drop_hash:
        labels = (t.get("metadata") or {}).get("labels") or {}
        labels.pop("pod-template-hash", None)
        t = clean(t)
    return t


def _node_matches(pod: dict, node: dict) -> bool:
    """``spec.nodeSelector`` and required node affinity (``nodeSelectorTerms``: any term,
    all of its ``matchExpressions`` on labels and ``matchFields`` on ``metadata.name``)."""
    labels = node["metadata"].get("labels") or {}
    spec = pod.get("spec") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}

    def holds(expr: dict, values: dict[str, str]) -> bool:
        key, op, want = expr.get("key"), expr.get("operator"), expr.get("values") or []
        have = values.get(key)
        if op == "In":
            return have in want
        if op == "NotIn":
            return have not in want
        if op == "Exists":
            return have is not None
        if op == "DoesNotExist":
            return have is None
        if op in ("Gt", "Lt") and have is not None and want:
            try:
                a, b = int(have), int(want[0])
            except ValueError:
                return False
            return a > b if op == "Gt" else a < b
        return False

    for term in required.get("nodeSelectorTerms") or []:
        exprs, field_exprs = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue  # an empty term matches no objects
        if all(holds(e, labels) for e in exprs) and all(holds(e, fields) for e in field_exprs):
            return True
    return False


def _ordinal(pod_name: str, sts_name: str) -> int:
    suffix = pod_name[len(sts_name) + 1 :]
    return int(suffix) if suffix.isdigit() else -1


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
