"""Form A: a standalone Kubernetes scheduler on the shared core, through the official client.

:class:`KubeScheduler` lists and watches Nodes and Pods (``resourceVersion``
carried from the list into the watch and from every event on; a ``410
Gone`` - as an HTTP status or a watch ``ERROR`` event - makes it list again
and reconcile the difference), and schedules every pending pod whose
``spec.schedulerName`` is its own:

* the pod becomes a request and a constraint (:mod:`kube._model`) and is
  placed by :class:`~kube.KubeCore` - MatchAllocate for a group's first pod,
  MatchGrow after; a gang waits until ``min_member`` pods are pending and
  is then placed all-or-nothing;
* it is bound through the ``pods/binding`` subresource; the Binding carries
  two annotations (copied onto the pod by the API server, as for any
  Binding), the group key and the pod's vertices, so that a restarted
  scheduler rebuilds every group's job and every pod's resources from the
  cluster alone and places new replicas next to the old ones;
* a pod that cannot be placed gets a ``FailedScheduling`` Warning Event
  (one Event per pod and reason, its ``count`` raised on repeats) and a
  ``PodScheduled=False`` condition with reason ``Unschedulable`` and the
  message; it is retried with exponential backoff per pod (1 s doubling
  to 60 s by default), earlier only when the cluster changes (a pod leaves,
  a node comes or returns) and never sooner than the initial backoff after
  its last attempt, so there is no retry storm; a pod that no node could
  ever hold is not woken by pods leaving, only by node changes (and its
  backoff timer);
* pods that other schedulers bound (or that were bound before this one
  ran) reduce the graph on their node, so a node is never double-booked;
  nodes added, removed, cordoned or uncordoned change the graph in place.

Placement is sequential (one thread owns the core); bindings run on a
small pool of binder threads (``bind_workers``) and Events and status patches
on a background sender, so API latency does not slow placement.  A failed
binding gives the pod's vertices back and requeues it (404/409: drops it).  Everything the scheduler does with the
cluster is in the small :class:`ClusterApi` wrapper around the official
client (one place to translate its errors).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import orjson

from fluxlite.errors import BusyError, FluxliteError, InputError, StateError, UnsatisfiableError
from fluxlite.gcpolicy import upkeep
from kube._affinity import candidates, has_rules, pod_meta
from kube._core import KubeCore, Placement
from kube._http import JsonPoster
from kube._model import GroupKey, PodRequest, node_info, pod_constraint, pod_group, pod_key, pod_request
from kube.config import ANNOTATION_GROUP, ANNOTATION_RESOURCES, KubeConfig

__all__ = ["ClusterApi", "KubeScheduler", "SchedulerMetrics"]

log = logging.getLogger("fluxlite.kube")

_TERMINAL = ("Succeeded", "Failed")


def _priority(pod: dict[str, Any]) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def _units(paths: list[str]) -> dict[str, int]:
    """Vertices per type of a pod's exclusive paths (``.../node3/core7`` -> ``core``)."""
    out: dict[str, int] = {}
    for path in paths:
        t = path.rsplit("/", 1)[-1].rstrip("0123456789")
        out[t] = out.get(t, 0) + 1
    return out


def _now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _done(resp: Any) -> None:
    """Read the rest of a raw response, then give its connection back (an unread body would
    corrupt the next request on the same keep-alive connection)."""
    try:
        resp.read()
    finally:
        resp.release_conn()


def _resp_lines(resp: Any) -> Any:
    """The non-empty lines of a streamed response, as bytes.  The client's ``iter_resp_lines``
    copies the rest of its buffer for every line (quadratic in a chunk that carries a burst of
    watch events) and decodes each line to text; this splits each chunk once."""
    rest = b""
    for seg in resp.stream(amt=None, decode_content=False):
        if isinstance(seg, str):
            seg = seg.encode()
        if rest:
            seg = rest + seg
        lines = seg.split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.strip():
                yield line
    if rest.strip():
        yield rest


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class ClusterApi:
    """The calls the scheduler makes, on the official ``kubernetes`` client (JSON dicts in and out)."""

    def __init__(self, api_client: Any, namespace: str | None = None) -> None:
        from kubernetes import client

        self.api_client = api_client
        self.v1 = client.CoreV1Api(api_client)
        self.namespace = namespace
        self._client = client
        self._poster = JsonPoster(api_client) if JsonPoster.usable(api_client) else None

    @staticmethod
    def _json(resp: Any) -> Any:
        try:
            return orjson.loads(resp.data)
        finally:
            _done(resp)

    def list_nodes(self) -> tuple[list[dict[str, Any]], str]:
        doc = self._json(self.v1.list_node(_preload_content=False))
        return doc.get("items") or [], (doc.get("metadata") or {}).get("resourceVersion", "")

    def list_pods(self) -> tuple[list[dict[str, Any]], str]:
        if self.namespace:
            resp = self.v1.list_namespaced_pod(self.namespace, _preload_content=False)
        else:
            resp = self.v1.list_pod_for_all_namespaces(_preload_content=False)
        doc = self._json(resp)
        return doc.get("items") or [], (doc.get("metadata") or {}).get("resourceVersion", "")

    def watch(self, kind: str, rv: str, timeout_s: int) -> Any:
        """Open a watch stream (the raw response; lines are JSON watch events)."""
        kw = {
            "watch": True,
            "resource_version": rv,
            "timeout_seconds": timeout_s,
            "allow_watch_bookmarks": True,
            "_preload_content": False,
        }
        if kind == "node":
            return self.v1.list_node(**kw)
        if self.namespace:
            return self.v1.list_namespaced_pod(self.namespace, **kw)
        return self.v1.list_pod_for_all_namespaces(**kw)

    def bind(self, namespace: str, name: str, node: str, annotations: dict[str, str]) -> None:
        """POST the pod's Binding.  The hot path of a burst (one per pod): the same request as
        ``create_namespaced_pod_binding`` (path, headers and bearer token from the client's
        ``param_serialize``, TLS from a connection of the client's own pool), sent over a
        per-thread keep-alive connection by :class:`kube._http.JsonPoster` without the client's
        model, REST and pool layers (0.8 ms of CPU per Binding through them, 0.1 ms here).
        Through a proxy it goes through the client as any other call."""
        from kubernetes.client.exceptions import ApiException

        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = "/api/v1/namespaces/{namespace}/pods/{name}/binding"
        params = {"namespace": namespace, "name": name}
        if self._poster is not None:
            r = self._poster.request("POST", path, params, orjson.dumps(body))
            if not 200 <= r.status < 300:
                raise ApiException(r.status, r.reason, body=r.body.decode(errors="replace") if r.body else None)
            return
        api = self.api_client
        req = api.param_serialize(
            method="POST",
            resource_path=path,
            path_params=params,
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        resp = api.call_api(*req)
        try:
            data = resp.read()
        finally:
            resp.response.release_conn()
        if not 200 <= resp.status < 300:
            raise ApiException(resp.status, resp.reason, body=data.decode(errors="replace") if data else None)

    def close(self) -> None:
        """Close the Binding connections (the client's own pool is the caller's)."""
        if self._poster is not None:
            self._poster.close()

    def evict(self, namespace: str, name: str, dry_run: bool = False) -> None:
        """POST the pod's Eviction (policy/v1): the API server refuses it (429) when a budget forbids."""
        c = self._client
        body = c.V1Eviction(metadata=c.V1ObjectMeta(name=name, namespace=namespace))
        kw = {"dry_run": "All"} if dry_run else {}
        _done(self.v1.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False, **kw))

    @staticmethod
    def _merge(patch: Any, namespace: str, name: str, body: dict[str, Any]) -> None:
        """A JSON merge patch through one of the client's ``patch_*`` calls."""
        _done(
            patch(name, namespace, body, _content_type="application/merge-patch+json", _preload_content=False)
        )

    def nominate(self, namespace: str, name: str, node: str) -> None:
        """Record ``status.nominatedNodeName`` (as kube-scheduler does for a preemptor)."""
        self._merge(
            self.v1.patch_namespaced_pod_status, namespace, name, {"status": {"nominatedNodeName": node}}
        )

    def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(self.v1.read_namespaced_pod(name, namespace, _preload_content=False))

    def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        self._merge(self.v1.patch_namespaced_pod, namespace, name, {"metadata": {"annotations": annotations}})

    def set_unschedulable(self, namespace: str, name: str, message: str) -> None:
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": _now_iso(),
        }
        resp = self.v1.patch_namespaced_pod_status(
            name,
            namespace,
            {"status": {"conditions": [cond]}},
            _content_type="application/strategic-merge-patch+json",
            _preload_content=False,
        )
        _done(resp)

    def create_event(self, pod: dict[str, Any], reason: str, message: str, etype: str, source: str) -> str:
        md = pod.get("metadata") or {}
        ns = md.get("namespace", "default")
        now = _now_iso()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{md.get('name', 'pod')}.", "namespace": ns},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": md.get("name"),
                "namespace": ns,
                "uid": md.get("uid"),
                "resourceVersion": md.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": etype,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": source},
            "reportingComponent": source,
            "reportingInstance": source,
            "action": "Scheduling",
        }
        ev = self._client.CoreV1Event.from_dict(body)
        doc = self._json(self.v1.create_namespaced_event(ns, ev, _preload_content=False))
        return (doc.get("metadata") or {}).get("name", "")

    def bump_event(self, namespace: str, name: str, count: int, message: str) -> None:
        body = {"count": count, "lastTimestamp": _now_iso(), "message": message}
        self._merge(self.v1.patch_namespaced_event, namespace, name, body)


@dataclass
class _Pending:
    key: str
    pod: dict[str, Any]
    seq: int
    group: GroupKey
    seen: float
    prio: int = 0  # spec.priority
    req: PodRequest | None = None  # the pod's request, read from ``pod`` when first needed
    attempts: int = 0
    next_try: float = 0.0
    last_try: float = 0.0
    unsat: bool = False
    message: str = ""
    rules: str = ""  # why affinity/spread/pod-count rules left nodes out
    nominated: str = ""  # the node its preemption freed


@dataclass
class SchedulerMetrics:
    """What the scheduler measured (seconds), for benchmarks and ``--json``."""

    match_s: dict[str, float] = field(default_factory=dict)  # pod -> match time in the core (wall)
    match_cpu_s: dict[str, float] = field(default_factory=dict)  # pod -> the same in thread CPU time
    grew: dict[str, bool] = field(default_factory=dict)  # pod -> placed by MatchGrow
    bind_s: dict[str, float] = field(default_factory=dict)  # pod -> pending (first seen) -> bound
    queue_s: dict[str, float] = field(default_factory=dict)  # pod -> first seen -> placed (waiting its turn)
    attempts: dict[str, int] = field(default_factory=dict)  # pod -> failed scheduling attempts
    bound_at: dict[str, float] = field(default_factory=dict)  # pod -> perf_counter at bind
    relists: dict[str, int] = field(default_factory=lambda: {"node": 0, "pod": 0})
    overcommitted: list[str] = field(default_factory=list)  # foreign pods that did not fit their node


class KubeScheduler:
    """List+watch Nodes and Pods, place this scheduler's pods on the shared core, bind them."""

    def __init__(
        self,
        api_client: Any,
        cfg: KubeConfig | None = None,
        *,
        namespace: str | None = None,
        backoff_initial: float = 1.0,
        backoff_max: float = 60.0,
        watch_timeout: int = 300,
        on_bind: Callable[[str, str], None] | None = None,
        bind_workers: int = 8,
        max_tiers: int = 8,
    ) -> None:
        self.cfg = cfg or KubeConfig()
        #: at most this many preference tiers (one match each) per pod with affinity/spread rules
        self.max_tiers = max_tiers
        #: pods placed per scheduling pass before the lock is let go (bindings and events go on meanwhile)
        self.pass_size = 64
        self.api = ClusterApi(api_client, namespace)
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.watch_timeout = watch_timeout
        self.on_bind = on_bind
        self.core: KubeCore = KubeCore(self.cfg)
        self.metrics = SchedulerMetrics()
        self.pending: dict[str, _Pending] = {}
        self._uids: dict[str, str] = {}  # pod key -> uid of the pod we hold resources for
        self._orphans: dict[str, dict[str, Any]] = {}  # bound pods whose node is not in the graph yet
        self._inflight: dict[str, _Pending] = {}  # placed, Binding under way
        self._binder = futures.ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._seq = itertools.count()
        self._q: queue.Queue[tuple[str, str, Any]] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._resps: dict[str, Any] = {}
        self._rv: dict[str, str] = {}
        self._events: queue.Queue[Any] = queue.Queue()
        self._event_names: dict[tuple[str, str], tuple[str, int]] = {}
        self._conditions: dict[str, str] = {}
        self.lock = threading.RLock()  # held while the state changes (tests/inspection take it too)
        self.idle = threading.Event()
        #: None: not known yet; True: Binding annotations reach the pod; False: PATCH them first
        self._binding_annotates: bool | None = None
        #: node -> (priority, pod) of a preemptor it was freed for: lower priorities keep off it
        self._nominated: dict[str, tuple[int, str]] = {}
        self._requests: dict[bytes, PodRequest] = {}  # see _pod_request

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> KubeScheduler:
        """List the cluster (nodes, then pods: restore ours, account others', queue pending), then watch."""
        nodes, nrv = self.api.list_nodes()
        infos = []
        for n in nodes:
            try:
                infos.append(node_info(n, self.cfg))
            except InputError as exc:
                log.warning("ignoring node: %s", exc)
        with self.lock:
            self.core = KubeCore(self.cfg, infos)
            pods, prv = self.api.list_pods()
            self._reconcile_pods(pods)
        self._rv = {"node": nrv, "pod": prv}
        for kind in ("node", "pod"):
            t = threading.Thread(target=self._watch_loop, args=(kind,), name=f"watch-{kind}", daemon=True)
            t.start()
            self._threads.append(t)
        for target, name in ((self._loop, "schedule"), (self._send_loop, "events")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        log.info(
            "scheduler %s: %d nodes, %d vertices, %d pods held, %d pending",
            self.cfg.scheduler_name,
            len(self.core.nodes),
            len(self.core.engine.graph),
            len(self.core.pods),
            len(self.pending),
        )
        return self

    def stop(self) -> None:
        self._stop.set()
        self._q.put(("stop", "", None))
        self._events.put(None)
        for resp in list(self._resps.values()):
            with contextlib.suppress(Exception):
                resp.shutdown()
        for t in self._threads:
            t.join(timeout=5)
        self._threads.clear()
        self._binder.shutdown(wait=True, cancel_futures=True)
        self.api.close()

    def run_forever(self) -> None:
        self.start()
        try:
            while not self._stop.wait(1.0):
                pass
        finally:
            self.stop()

    # ------------------------------------------------------------------ watching
    def _watch_loop(self, kind: str) -> None:
        from kubernetes.client.exceptions import ApiException

        delay = 0.2
        while not self._stop.is_set():
            try:
                resp = self.api.watch(kind, self._rv[kind], self.watch_timeout)
                self._resps[kind] = resp
                try:
                    for line in _resp_lines(resp):
                        ev = orjson.loads(line)
                        etype = ev.get("type")
                        obj = ev.get("object") or {}
                        if etype == "ERROR":
                            if obj.get("code") == 410:
                                raise _Gone()
                            raise RuntimeError(f"watch {kind}: {obj.get('reason')}: {obj.get('message')}")
                        rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if rv:
                            self._rv[kind] = rv
                        if etype != "BOOKMARK":
                            self._q.put((kind, etype, obj))
                        delay = 0.2
                finally:
                    self._resps.pop(kind, None)
                    with contextlib.suppress(Exception):
                        resp.close()  # never reuse a watch connection: its body may not be over
                        resp.release_conn()
            except _Gone:
                self._relist(kind)
            except ApiException as exc:
                if exc.status == 410:
                    self._relist(kind)
                    continue
                if self._stop.is_set():
                    return
                log.warning("watch %s: HTTP %s %s; retrying in %.1fs", kind, exc.status, exc.reason, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)
            except Exception as exc:  # connection reset, server restarting, ...
                if self._stop.is_set():
                    return
                log.warning("watch %s: %s; retrying in %.1fs", kind, exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)

    def _relist(self, kind: str) -> None:
        log.info("watch %s: resourceVersion %s is gone (410); listing again", kind, self._rv.get(kind))
        self.metrics.relists[kind] += 1
        while not self._stop.is_set():
            try:
                items, rv = self.api.list_nodes() if kind == "node" else self.api.list_pods()
                break
            except Exception as exc:
                log.warning("list %s: %s; retrying", kind, exc)
                self._stop.wait(1.0)
        else:
            return
        self._rv[kind] = rv
        self._q.put((kind, "RELIST", items))

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._q.get_nowait()  # work queued: when backoffs end does not matter yet
            except queue.Empty:
                due = min((p.next_try for p in self.pending.values() if p.next_try > 0), default=None)
                now = time.monotonic()
                timeout = 1.0 if due is None else max(0.0, min(1.0, due - now))
                try:
                    first = self._q.get(timeout=timeout)
                except queue.Empty:
                    first = None
            batch = [first] if first is not None else []
            while True:
                try:
                    batch.append(self._q.get_nowait())
                except queue.Empty:
                    break
            if batch:
                upkeep().poke()  # fluxlite.gcpolicy: the previous batch's garbage, off this thread
            with self.lock:
                self.idle.clear()
                for kind, etype, obj in batch:
                    if kind == "stop":
                        return
                    if kind == "wake":
                        continue
                    try:
                        self._handle(kind, etype, obj)
                    except Exception:
                        log.exception("handling %s %s", kind, etype)
                try:
                    self._schedule()
                except Exception:
                    log.exception("scheduling pass")
                if self._q.empty():
                    self.idle.set()

    def _handle(self, kind: str, etype: str, obj: Any) -> None:
        if kind == "node":
            if etype == "RELIST":
                self._reconcile_nodes(obj)
            elif etype == "DELETED":
                self._node_gone((obj.get("metadata") or {}).get("name", ""))
            else:
                self._node_upsert(obj)
        elif kind == "pod":
            if etype == "RELIST":
                self._reconcile_pods(obj)
            elif etype == "DELETED":
                self._pod_gone(pod_key(obj), (obj.get("metadata") or {}).get("uid"))
            else:
                self._pod_upsert(obj)

    # ------------------------------------------------------------------ nodes
    def _node_upsert(self, node: dict[str, Any]) -> None:
        try:
            info = node_info(node, self.cfg)
        except InputError as exc:
            log.warning("ignoring node: %s", exc)
            return
        change = self.core.update_node(info)
        if change:
            log.info("node %s: %s%s", info.name, change, f" ({info.reason})" if info.reason else "")
        if change == "added":
            for key, pod in list(self._orphans.items()):
                if (pod.get("spec") or {}).get("nodeName") == info.name:
                    self._hold_bound(key, (pod.get("metadata") or {}).get("uid"), pod, info.name)
        if change in ("added", "shape", "labels") or (change == "status" and info.up):
            self._kick(node_event=True)

    def _node_gone(self, name: str) -> None:
        lost = self.core.remove_node(name)
        if name:
            log.info("node %s removed; %d pod record(s) dropped with it", name, len(lost))
        for k in lost:
            self._uids.pop(k, None)

    def _reconcile_nodes(self, items: list[dict[str, Any]]) -> None:
        names = set()
        for n in items:
            names.add((n.get("metadata") or {}).get("name", ""))
            self._node_upsert(n)
        for name in list(self.core.nodes):
            if name not in names:
                self._node_gone(name)

    # ------------------------------------------------------------------ pods
    def _reconcile_pods(self, items: list[dict[str, Any]]) -> None:
        """Make the state agree with a full list (start-up and after 410): ours with records first."""
        seen: set[str] = set()
        for p in items:
            seen.add(pod_key(p))
        for k in [k for k in self.core.pods if k not in seen]:
            self._pod_gone(k, None)
        for k in [k for k in self.pending if k not in seen]:
            del self.pending[k]

        def order(p: dict[str, Any]) -> int:
            spec = p.get("spec") or {}
            ann = (p.get("metadata") or {}).get("annotations") or {}
            if spec.get("nodeName") and ANNOTATION_RESOURCES in ann:
                return 0
            return 1 if spec.get("nodeName") else 2

        for p in sorted(items, key=order):
            self._pod_upsert(p)

    def _ours(self, pod: dict[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("schedulerName") == self.cfg.scheduler_name

    def _pod_upsert(self, pod: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        key = pod_key(pod)
        uid = md.get("uid")
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        if key in self._uids and uid and self._uids[key] != uid:
            self._pod_gone(key, None)  # same name, new pod (e.g. a StatefulSet replica)
        if phase in _TERMINAL:
            self.pending.pop(key, None)
            if key in self.core.pods:
                self.core.release(key)
                self._uids.pop(key, None)
                self._kick()
            return
        node = spec.get("nodeName")
        if node:
            self.pending.pop(key, None)
            if key in self.core.pods:
                return
            self._hold_bound(key, uid, pod, node)
            return
        if not self._ours(pod) or md.get("deletionTimestamp"):
            self.pending.pop(key, None)
            return
        if key in self._inflight:
            return  # its Binding is under way
        p = self.pending.get(key)
        if p is None:
            try:
                grp = pod_group(pod, self.cfg)
            except InputError as exc:
                self._fail_input(key, pod, exc)
                return
            p = self.pending[key] = _Pending(key, pod, next(self._seq), grp, time.perf_counter(), _priority(pod))
            if grp.min_member > 1:
                self._kick_group(grp.key)
        else:
            p.pod = pod
            p.prio = _priority(pod)
            p.req = None

    def _hold_bound(self, key: str, uid: str | None, pod: dict[str, Any], node: str) -> None:
        """Account a bound pod: rebuild ours from its annotations, take others' requests on their node."""
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        if node not in self.core.nodes:
            log.info(
                "pod %s is bound to node %s, not (yet) in the graph; held back until it appears", key, node
            )
            self._orphans[key] = pod
            return
        self._orphans.pop(key, None)
        if self._ours(pod) and ANNOTATION_RESOURCES in ann:
            try:
                rec = orjson.loads(ann[ANNOTATION_RESOURCES])
                self.core.restore(key, ann.get(ANNOTATION_GROUP) or pod_group(pod, self.cfg).key, rec)
                self.core.pods[key].meta = pod_meta(pod)
                if uid:
                    self._uids[key] = uid
                return
            except (FluxliteError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
                log.warning(
                    "pod %s: cannot restore its recorded resources (%s); accounting it anew", key, exc
                )
        try:
            req = pod_request(pod, self.cfg)
            self.core.account(key, node, req)
            self.core.pods[key].meta = pod_meta(pod)
            if uid:
                self._uids[key] = uid
        except BusyError:
            log.warning("pod %s on %s does not fit the node's free resources: node overcommitted", key, node)
            self.metrics.overcommitted.append(key)
        except FluxliteError as exc:
            log.warning("pod %s on %s not accounted: %s", key, node, exc)

    def _pod_gone(self, key: str, uid: str | None) -> None:
        gone = self.pending.pop(key, None)
        if gone is not None and gone.nominated:
            self._nominated.pop(gone.nominated, None)
        self._orphans.pop(key, None)
        self._inflight.pop(key, None)
        self._conditions.pop(key, None)
        if uid and self._uids.get(key) not in (None, uid):
            return  # an older incarnation's deletion; the current pod keeps its resources
        if self.core.release(key):
            self._uids.pop(key, None)
            self._kick()

    # ------------------------------------------------------------------ scheduling
    def _kick(self, node_event: bool = False) -> None:
        """The cluster changed: retry waiting pods now, but not sooner than the initial backoff after their last try."""
        now = time.monotonic()
        for p in self.pending.values():
            if p.attempts == 0 or (p.unsat and not node_event):
                continue
            p.next_try = min(p.next_try, max(now, p.last_try + self.backoff_initial))

    def _kick_group(self, group: str) -> None:
        now = time.monotonic()
        for p in self.pending.values():
            if p.group.key == group:
                p.next_try = min(p.next_try, now) if p.next_try else 0.0

    def _schedule(self) -> None:
        now = time.monotonic()
        # the pass's pods in order (highest priority, then first seen): O(pending) to pick, not a
        # sort of every pending pod per pass (a 10,000-pod burst runs ~150 passes)
        ready = heapq.nsmallest(
            self.pass_size + 1,
            (p for p in self.pending.values() if p.next_try <= now),
            key=lambda p: (-p.prio, p.seq),
        )
        gangs_done: set[str] = set()
        for n, p in enumerate(ready):
            if self._stop.is_set():
                return
            if n >= self.pass_size:  # let the binder threads (they take the lock) work between passes
                self._wake()
                return
            if p.key not in self.pending:
                continue
            grp = p.group
            if grp.min_member > 1 and (grp.key not in self.core.groups):
                if grp.key in gangs_done:
                    continue
                gangs_done.add(grp.key)
                self._schedule_gang(grp)
                continue
            self._schedule_one(p)

    def _request(self, p: _Pending) -> tuple[PodRequest, dict[str, Any] | None]:
        if p.req is None:  # read once per version of the pod
            p.req = self._pod_request(p.pod)
        req = p.req
        ann = (p.pod.get("metadata") or {}).get("annotations") or {}
        pol = ann.get(self.cfg.policy_annotation)
        if pol and pol not in ("node", "exclusive-node", self.cfg.policy):
            raise InputError(
                f"{self.cfg.policy_annotation}={pol!r}: this scheduler serves policy {self.cfg.policy!r} "
                "(or 'node' for whole nodes)"
            )
        return req, pod_constraint(p.pod, self.core.nodes, self.core.taint_keys())

    def _pod_request(self, pod: dict[str, Any]) -> PodRequest:
        """:func:`pod_request`, kept per distinct resource part of the spec: a workload's pods share
        their template, and reading quantities exactly (fractions) costs more than the match."""
        spec = pod.get("spec") or {}
        key = orjson.dumps(
            [
                [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("containers") or ()],
                [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or ()],
                spec.get("overhead"),
                ((pod.get("metadata") or {}).get("annotations") or {}).get(self.cfg.policy_annotation),
            ]
        )
        req = self._requests.get(key)
        if req is None:
            req = pod_request(pod, self.cfg)  # InputError: nothing kept
            if len(self._requests) >= 4096:
                self._requests.clear()
            self._requests[key] = req
        return req

    def _tiers(self, p: _Pending) -> list[list[str]] | None:
        """Nodes in order of preference when the pod has affinity/spread rules or nodes are at their
        pod count (None: every node, the plain match).  Sets ``p.rules`` to why nodes were left out."""
        full = self.core.full_nodes()
        p.rules = ""
        prio = _priority(p.pod)
        held = {n for n, (q, k) in self._nominated.items() if q > prio and k != p.key}  # kept for a preemptor
        if not full and not held and not has_rules(p.pod) and not p.nominated:
            return None
        allowed, scores, p.rules = candidates(p.pod, self.core.nodes, self.core.placed(), full | held)
        if p.nominated in (allowed or ()):
            scores[p.nominated] = max(scores.values(), default=0) + 1
        ranked = sorted(allowed or (), key=lambda n: (-scores.get(n, 0), n))
        tiers: list[list[str]] = []
        last = None
        for n in ranked:
            if scores.get(n, 0) != last and len(tiers) < self.max_tiers:
                tiers.append([])
                last = scores.get(n, 0)
            tiers[-1].append(n)
        return tiers

    def _schedule_one(self, p: _Pending) -> None:
        try:
            req, constraint = self._request(p)
            pl = self.core.place(p.key, p.group.key, req, constraint, self._tiers(p))
        except BusyError as exc:
            if not p.nominated and self._preempt(p, req, constraint):
                p.next_try = time.monotonic() + self.backoff_initial / 4
                return
            self._unschedulable(p, exc)
            return
        except UnsatisfiableError as exc:
            self._unschedulable(p, exc)
            return
        except InputError as exc:
            self._fail_input(p.key, p.pod, exc)
            return
        self.core.pods[p.key].meta = pod_meta(p.pod)
        if p.nominated:
            self._nominated.pop(p.nominated, None)
        self._bind(p, pl)

    def _preempt(self, p: _Pending, req: PodRequest, constraint: dict[str, Any] | None) -> bool:
        """Make room for ``p`` by evicting lower-priority pods, when that is the only way (the pod
        fits no node as things are).  Victims are chosen on the graph: for each node the pod could
        hold, the free units (the engine's aggregates) plus the units of its lower-priority pods,
        lowest priority first, until the pod fits; then victims that turn out unnecessary are
        spared (highest priority first).  The node needing the fewest victims, then the lowest
        priorities, wins; its evictions are tried as a dry run first, so a PodDisruptionBudget that
        forbids one (429) moves on to the next node and evicts nothing.  Records
        ``status.nominatedNodeName``; the node is then kept for the pod until it is placed."""
        from kubernetes.client.exceptions import ApiException

        from fluxlite.jobspec import parse_constraint

        prio = _priority(p.pod)
        if prio <= 0 or (p.pod.get("spec") or {}).get("preemptionPolicy") == "Never" or req.exclusive_node:
            return False
        c = parse_constraint(constraint) if constraint else None
        if has_rules(p.pod):
            allowed, _s, _w = candidates(p.pod, self.core.nodes, self.core.placed())
        else:
            allowed = set(self.core.nodes)
        need = {"core": req.cores, "memory": req.memory, "storage": req.storage, **dict(req.extended)}
        by_node: dict[str, list[tuple[int, str]]] = {}
        for key, pa in self.core.pods.items():
            if pa.meta is not None and pa.meta.priority < prio and key not in self._inflight:
                by_node.setdefault(pa.node, []).append((pa.meta.priority, key))
        g = self.core.engine.graph
        plans = []
        for name in sorted(allowed & set(by_node)):
            info = self.core.nodes[name]
            if not info.up or not req.fits(info):
                continue
            if c is not None:
                v = g.vertex_by_path(self.core.node_path[name])
                if v is None or not c.match(g.properties(v), name, g.v_rank[v]):
                    continue
            have = self.core.free(name)
            units = {k: _units(self.core.pods[k].paths) for _pr, k in by_node[name]}
            fits = lambda h: all(h.get(t, 0) >= n for t, n in need.items() if n)  # noqa: E731
            slots = info.max_pods - self.core.per_node.get(name, 0) if info.max_pods else 1
            chosen: list[tuple[int, str]] = []
            gained = dict(have)
            for pr, k in sorted(by_node[name]):
                if fits(gained) and slots + len(chosen) > 0:
                    break
                chosen.append((pr, k))
                for t, n in units[k].items():
                    gained[t] = gained.get(t, 0) + n
            if not (fits(gained) and slots + len(chosen) > 0):
                continue
            for pr, k in sorted(chosen, reverse=True):  # reprieve what is not needed
                trial = {t: gained.get(t, 0) - units[k].get(t, 0) for t in set(gained) | set(units[k])}
                if fits(trial) and slots + len(chosen) - 1 > 0:
                    chosen.remove((pr, k))
                    gained = trial
            if chosen:
                plans.append(
                    (len(chosen), max(pr for pr, _ in chosen), sum(pr for pr, _ in chosen), name, chosen)
                )
        md = p.pod.get("metadata") or {}
        for _n, _top, _sum, node, chosen in sorted(plans):
            try:
                for _pr, k in chosen:
                    ns, name = k.split("/", 1)
                    self.api.evict(ns, name, dry_run=True)
            except ApiException as exc:
                if exc.status == 429:
                    log.info("preemption for %s: a disruption budget protects a pod on %s", p.key, node)
                    continue
                log.warning("preemption for %s: dry-run eviction: HTTP %s", p.key, exc.status)
                continue
            evicted = []
            for _pr, k in chosen:
                ns, name = k.split("/", 1)
                try:
                    self.api.evict(ns, name)
                    evicted.append(k)
                except ApiException as exc:
                    log.warning("preemption for %s: evicting %s: HTTP %s", p.key, k, exc.status)
            if not evicted:
                continue
            p.nominated = node
            self._nominated[node] = (prio, p.key)
            with contextlib.suppress(Exception):
                self.api.nominate(md.get("namespace", "default"), md.get("name", ""), node)
            log.info("preempting %s on %s for %s (priority %d)", ", ".join(evicted), node, p.key, prio)
            for k in evicted:
                self._events.put(("preempted", k, node, p.key))
            return True
        return False

    def _schedule_gang(self, grp: GroupKey) -> None:
        members = sorted((q for q in self.pending.values() if q.group.key == grp.key), key=lambda q: q.seq)
        if len(members) < grp.min_member:
            msg = f"waiting for the gang {grp.key}: {len(members)} of {grp.min_member} pods are pending"
            for q in members:
                q.next_try = 0.0  # woken when another member arrives
                if q.message != msg:
                    q.message = msg
                    self._post_condition(q, msg)
            return
        gang = members[: grp.min_member]
        by_key = {q.key: q for q in gang}

        def placed_one(key: str) -> None:  # affinity rules of the members after it see it
            self.core.pods[key].meta = pod_meta(by_key[key].pod)

        try:
            triples = []
            for q in gang:
                req, constraint = self._request(q)
                triples.append((q.key, req, constraint))
            placed = self.core.place_gang(
                triples, grp.key, tiers=lambda key: self._tiers(by_key[key]), on_placed=placed_one
            )
        except (BusyError, UnsatisfiableError) as exc:
            for q in gang:
                self._unschedulable(q, exc, gang=grp)
            return
        except InputError as exc:
            for q in gang:
                self._fail_input(q.key, q.pod, exc)
            return
        for q, pl in zip(gang, placed):
            self._bind(q, pl)

    def _bind(self, p: _Pending, pl: Placement) -> None:
        """Hand the placed pod to a binder thread (the placement already holds its vertices).

        Binding is the slow part (an API round trip), so several run at once,
        as kube-scheduler's binding cycles do; the pod is "in flight" meanwhile,
        neither pending nor bound.  Called with the state lock held.
        """
        self.pending.pop(p.key, None)
        self._inflight[p.key] = p
        self.metrics.queue_s[p.key] = time.perf_counter() - p.seen
        self._binder.submit(self._bind_call, p, pl)

    def _bind_call(self, p: _Pending, pl: Placement) -> None:
        from kubernetes.client.exceptions import ApiException

        md = p.pod.get("metadata") or {}
        ns, name = md.get("namespace", "default"), md.get("name", "")
        with self.lock:
            rec = pl.record(self.core.node_path.get(pl.node, ""))
        ann = {ANNOTATION_GROUP: p.group.key, ANNOTATION_RESOURCES: orjson.dumps(rec).decode()}
        failure: Exception | None = None
        drop = False
        try:
            if self._binding_annotates is False:
                self.api.annotate(ns, name, ann)
            self.api.bind(ns, name, pl.node, ann)
            # logged as soon as the server has answered (not after taking the state lock): a
            # process killed right after a binding has logged it
            log.info("bound %s to %s (%s, %.2f ms)", p.key, pl.node, "grow" if pl.grew else "allocate",
                     pl.match_s * 1e3)  # fmt: skip
            if self._binding_annotates is None:
                self._check_binding_annotations(ns, name, ann)
        except ApiException as exc:
            drop = exc.status in (404, 409)
            failure = StateError(f"binding failed: HTTP {exc.status} {exc.reason}")
        except Exception as exc:
            # no HTTP answer: the binding may or may not have happened; ask the server
            try:
                got = (self.api.read_pod(ns, name).get("spec") or {}).get("nodeName")
            except Exception:
                got = None
            if got != pl.node:
                failure = StateError(f"binding failed: {exc}")
            else:
                log.info("pod %s: binding answer lost (%s) but the pod is bound to %s", p.key, exc, got)
        with self.lock:
            if self._inflight.pop(p.key, None) is None:
                return  # deleted meanwhile: its resources were released then
            if failure is not None:
                self.core.release(p.key)
                if drop:
                    log.info("pod %s: %s; dropping it", p.key, failure)
                else:
                    self.pending[p.key] = p
                    self._unschedulable(p, failure)
                self._wake()
                return
            now = time.perf_counter()
            if md.get("uid"):
                self._uids[p.key] = md["uid"]
            m = self.metrics
            m.match_s[p.key] = pl.match_s
            m.match_cpu_s[p.key] = pl.match_cpu_s
            m.grew[p.key] = pl.grew
            m.bind_s[p.key] = now - p.seen
            m.bound_at[p.key] = now
            if p.attempts:
                m.attempts[p.key] = p.attempts
        if self.on_bind is not None:
            self.on_bind(p.key, pl.node)

    def _wake(self) -> None:
        self._q.put(("wake", "", None))

    def _check_binding_annotations(self, ns: str, name: str, ann: dict[str, str]) -> None:
        """Once: does this API server copy a Binding's annotations onto the pod (as kube-apiserver does)?

        If not, annotate pods with a PATCH before binding from now on (and this one now).
        """
        got = ((self.api.read_pod(ns, name).get("metadata") or {}).get("annotations")) or {}
        self._binding_annotates = got.get(ANNOTATION_RESOURCES) == ann[ANNOTATION_RESOURCES]
        if not self._binding_annotates:
            log.warning("the API server drops Binding annotations; annotating pods with a PATCH instead")
            self.api.annotate(ns, name, ann)

    def _what(self, pod: dict[str, Any]) -> str:
        """A pod's request in words: ``8 cores, 1Gi memory, 1 gpu`` (memory only when asked for)."""
        try:
            req = pod_request(pod, self.cfg)
        except InputError:
            return "its request"
        unit = self.cfg.memory_unit
        mem = (
            f"{req.memory}{unit[1:]}"
            if unit[:1] == "1" and not unit[1:2].isdigit()
            else f"{req.memory} x {unit}"
        )
        cores = f"{req.cores} core" + ("" if req.cores == 1 else "s")
        return (
            cores + (f", {mem} memory" if req.memory else "") + "".join(f", {k} {t}" for t, k in req.extended)
        )

    def _why(self, p: _Pending, exc: Exception) -> str:
        n = len(self.core.nodes)
        what = self._what(p.pod)
        if isinstance(exc, UnsatisfiableError):
            return (
                f"0/{n} nodes are available: no node can ever hold {what} (with its node selector/affinity)."
            )
        if isinstance(exc, BusyError):
            if p.rules:
                return f"0/{n} nodes are available: {p.rules}; no other node has {what} free now."
            return f"0/{n} nodes are available: no node has {what} free now."
        return f"0/{n} nodes are available: {exc}"

    def _unschedulable(self, p: _Pending, exc: Exception, gang: GroupKey | None = None) -> None:
        now = time.monotonic()
        p.attempts += 1
        p.last_try = now
        p.unsat = isinstance(exc, UnsatisfiableError)
        p.next_try = now + min(self.backoff_initial * 2 ** (p.attempts - 1), self.backoff_max)
        self.metrics.attempts[p.key] = p.attempts
        msg = self._why(p, exc)
        if gang is not None:
            name = gang.key.rsplit("/", 1)[-1]
            fit = getattr(exc, "fit", None)
            never = isinstance(exc, UnsatisfiableError) and fit == 0
            most = "no node can ever hold one" if never else f"at most {fit} fit now"
            msg = f"gang {name}: {gang.min_member} pods of {self._what(p.pod)}, {most}"
        self._post_event(p.pod, "FailedScheduling", msg)
        if msg != p.message:
            p.message = msg
            self._post_condition(p, msg)

    def _fail_input(self, key: str, pod: dict[str, Any], exc: Exception) -> None:
        """A pod we can never read: one Event and condition, no retries until the pod changes."""
        self.pending.pop(key, None)
        msg = f"cannot schedule: {exc}"
        self._post_event(pod, "FailedScheduling", msg)
        md = pod.get("metadata") or {}
        self._events.put(("condition", md.get("namespace", "default"), md.get("name", ""), msg))

    # ------------------------------------------------------------------ events (background)
    def _post_event(self, pod: dict[str, Any], reason: str, message: str) -> None:
        self._events.put(("event", pod, reason, message))

    def _post_condition(self, p: _Pending, message: str) -> None:
        md = p.pod.get("metadata") or {}
        self._events.put(("condition", md.get("namespace", "default"), md.get("name", ""), message))

    def _send_loop(self) -> None:
        from kubernetes.client.exceptions import ApiException

        while True:
            item = self._events.get()
            if item is None or self._stop.is_set():
                return
            try:
                if item[0] == "preempted":
                    _, victim, node, by = item
                    vns, vname = victim.split("/", 1)
                    self.api.create_event(
                        {"metadata": {"namespace": vns, "name": vname}}, "Preempted",
                        f"Preempted by pod {by} on node {node}", "Normal", self.cfg.scheduler_name,
                    )  # fmt: skip
                elif item[0] == "event":
                    _, pod, reason, message = item
                    md = pod.get("metadata") or {}
                    k = (md.get("uid") or pod_key(pod), reason)
                    known = self._event_names.get(k)
                    if known is None:
                        name = self.api.create_event(pod, reason, message, "Warning", self.cfg.scheduler_name)
                        self._event_names[k] = (name, 1)
                    else:
                        name, count = known
                        self._event_names[k] = (name, count + 1)
                        self.api.bump_event(md.get("namespace", "default"), name, count + 1, message)
                else:
                    _, ns, name, message = item
                    self.api.set_unschedulable(ns, name, message)
            except ApiException as exc:
                if exc.status != 404:
                    log.warning("recording %s: HTTP %s %s", item[0], exc.status, exc.reason)
            except Exception as exc:
                log.warning("recording %s: %s", item[0], exc)

    # ------------------------------------------------------------------ inspection
    def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Poll ``predicate`` (under the state lock) until it holds or ``timeout`` passes."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if predicate():
                    return True
            time.sleep(0.02)
        with self.lock:
            return predicate()
