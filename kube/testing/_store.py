"""The object store: what etcd plus the registry strategies are to a real API server.

One global, monotonically increasing ``resourceVersion`` (every write takes the next
integer; the server hands it out as a string). Objects are immutable once stored: a write
stores a new dict, so watch history and readers share them without copying. Per resource
type a bounded history of watch events (the watch cache, ``watch_cache_size`` events) lets a
watch resume from any resourceVersion still in the window; an older one is ``410 Gone``
(reason ``Expired``), as after etcd compaction (:meth:`Store.compact`).

Per-kind rules follow the real registry strategies where a scheduler or a controller can
see them: pod defaults (``schedulerName: default-scheduler``, phase ``Pending``, QoS class,
default tolerations), pod spec immutability, the ``binding`` subresource (sets
``spec.nodeName``, adds ``PodScheduled=True``, copies the binding's annotations; 409 if
already bound), status subresources (a main-resource write ignores ``status``, a status
write changes only ``status``), ``generation`` bumped on spec changes, no-op updates that
neither bump the resourceVersion nor emit an event, graceful deletion of bound pods
(``deletionTimestamp``, then removal by the node's kubelet) and finalizers.

All methods are thread-safe (one re-entrant lock, :attr:`Store.cond`'s; a watch waits on
its resource's :meth:`Store.watch_cond`, which writes of that resource notify).
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import math
import random
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from kube.testing._resources import Resource, resource
from kube.testing._selectors import format_label_selector, label_selector_from_object

__all__ = ["ApiError", "Store", "WatchEvent", "now_rfc3339"]

Obj = dict[str, Any]


def _copy(obj: Any) -> Any:
    """A deep copy of a JSON document: an orjson round trip (several times faster than
    :func:`copy.deepcopy` on pod-sized objects); deepcopy for what JSON cannot carry."""
    try:
        return orjson.loads(orjson.dumps(obj))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(obj)


class ApiError(Exception):
    """An API failure, answered as a ``Status`` object with *code*."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> Obj:
        out: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


def _details(res: Resource, name: str) -> dict:
    d = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    return d


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{res.qualified} "{name}" not found', _details(res, name))


def already_exists(res: Resource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists', _details(res, name))


def conflict(res: Resource | str, name: str, why: str) -> ApiError:
    qualified = res if isinstance(res, str) else res.qualified
    details = {"name": name, "kind": qualified.split(".")[0]}
    if not isinstance(res, str) and res.group:
        details["group"] = res.group
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified} "{name}": {why}', details)


def stale(res: Resource, name: str) -> ApiError:
    return conflict(
        res,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )


def invalid(res: Resource, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; *causes* are (field, reason, message) as in ``field.ErrorList``."""
    kind = f"{res.kind}.{res.group}" if res.group else res.kind
    text = ", ".join(f"{f}: {m}" for f, _, m in causes)
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {text}'
        if len(causes) == 1
        else f'{kind} "{name}" is invalid: [{text}]',
        {
            "name": name,
            **({"group": res.group} if res.group else {}),
            "kind": res.kind,
            "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
        },
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def expired(rv: int, floor: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {rv} ({floor})")


_rfc3339_cache: tuple[int, str] = (0, "")


def now_rfc3339(offset: float = 0.0) -> str:
    """Now (plus *offset* seconds) to the second, as the API writes timestamps; formatted
    once per second (every write stamps one or more)."""
    global _rfc3339_cache
    t = math.floor(time.time() + offset)
    cached = _rfc3339_cache
    if cached[0] != t:
        cached = _rfc3339_cache = (t, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)))
    return cached[1]


def _name_suffix() -> str:
    """Five random characters of :data:`_SUFFIX_ALPHABET` (one random draw, not five)."""
    n = random.randrange(len(_SUFFIX_ALPHABET) ** 5)
    out = []
    for _ in range(5):
        n, i = divmod(n, len(_SUFFIX_ALPHABET))
        out.append(_SUFFIX_ALPHABET[i])
    return "".join(out)


def now_micro() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: type ADDED/MODIFIED/DELETED, the object after it, and before it."""

    rv: int
    type: str
    namespace: str
    obj: Obj
    prev: Obj | None


class Store:
    """Objects of every served resource, the resourceVersion counter and watch history."""

    def __init__(self, watch_cache_size: int = 1000) -> None:
        self._lock = threading.RLock()
        self.cond = threading.Condition(self._lock)
        #: (group, plural) -> the condition its watches wait on (the same lock as :attr:`cond`):
        #: a write wakes only the watches of its resource, not every open watch
        self._watch_conds: dict[tuple[str, str], threading.Condition] = {}
        self.rv = 0
        self.watch_cache_size = watch_cache_size
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._history: dict[tuple[str, str], deque[WatchEvent]] = {}
        self._floor: dict[tuple[str, str], int] = {}
        self._compacted = 0
        self.listeners: list[Callable[[Resource, WatchEvent], None]] = []
        self._dry = threading.local()
        #: node name -> {(namespace, name): pod} of the pods bound there (the kubelet's view, O(1) to find)
        self._on_node: dict[str, dict[tuple[str, str], Obj]] = {}
        #: (group, plural) -> owner uid -> {(namespace, name): object} of the objects naming it in
        #: ``ownerReferences`` (controllers and the garbage collector read this, O(dependents))
        self._dependents: dict[tuple[str, str], dict[str, dict[tuple[str, str], Obj]]] = {}
        #: namespace -> {name: pod} of the pods with no controller reference (adoption candidates)
        self._unowned_pods: dict[str, dict[str, Obj]] = {}
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(resource("", "v1", "namespaces"), "", {"metadata": {"name": ns}})

    # -- reads -------------------------------------------------------------------------------

    def _bucket(self, res: Resource) -> dict[tuple[str, str], Obj]:
        return self._objects.setdefault((res.group, res.plural), {})

    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        """The stored object (do not mutate it); NotFound if absent."""
        with self.cond:
            obj = self._bucket(res).get((namespace, name))
            if obj is None:
                raise not_found(res, name)
            return obj

    def list(
        self, res: Resource, namespace: str | None, pred: Callable[[Obj], bool] | None = None
    ) -> tuple[list[Obj], int]:
        """Matching objects sorted by (namespace, name), and the resourceVersion of the list."""
        with self.cond:
            items = [
                obj
                for (ns, _), obj in sorted(self._bucket(res).items())
                if (namespace is None or ns == namespace) and (pred is None or pred(obj))
            ]
            return items, self.rv

    def pods_on(self, node: str) -> list[Obj]:
        """The pods bound to ``node`` (do not mutate them).  O(pods there)."""
        with self.cond:
            return list(self._on_node.get(node, {}).values())

    def dependents(self, res: Resource, owner_uid: str, *, ordered: bool = True) -> list[Obj]:
        """Objects of *res* whose ``ownerReferences`` name *owner_uid*, sorted by (namespace,
        name) unless not *ordered* (do not mutate them).  O(dependents), not O(objects)."""
        with self.cond:
            here = self._dependents.get((res.group, res.plural), {}).get(owner_uid, {})
            return [here[k] for k in sorted(here)] if ordered else list(here.values())

    def unowned_pods(self, namespace: str) -> list[Obj]:
        """Pods of *namespace* without a controller reference, sorted by name."""
        with self.cond:
            here = self._unowned_pods.get(namespace, {})
            return [here[k] for k in sorted(here)]

    def _index_owners(self, res: Resource, namespace: str, name: str, prev: Obj | None, obj: Obj | None) -> None:
        key = (namespace, name)
        by_owner = self._dependents.setdefault((res.group, res.plural), {})
        refs = obj["metadata"].get("ownerReferences") if obj is not None else None
        if prev is not None and refs is not None and refs is prev["metadata"].get("ownerReferences"):
            # the same references (a write that shares them with the stored object): the index
            # keeps its entries, pointing at the new object
            for ref in refs:
                here = by_owner.get(ref.get("uid"))
                if here is not None and key in here:
                    here[key] = obj
            if res.plural == "pods" and not res.group:
                free = self._unowned_pods.get(namespace)
                if free is not None and name in free:
                    free[name] = obj
            return
        was = {r.get("uid") for r in (prev or {}).get("metadata", {}).get("ownerReferences") or ()}
        now = {r.get("uid") for r in (obj or {}).get("metadata", {}).get("ownerReferences") or ()}
        for uid in was - now:
            here = by_owner.get(uid)
            if here is not None:
                here.pop(key, None)
                if not here:
                    del by_owner[uid]
        if obj is not None:
            for uid in now:
                by_owner.setdefault(uid, {})[key] = obj
        if res.plural == "pods" and not res.group:
            free = self._unowned_pods.setdefault(namespace, {})
            refs = (obj or {}).get("metadata", {}).get("ownerReferences") or ()
            if obj is not None and not any(r.get("controller") for r in refs):
                free[name] = obj
            else:
                free.pop(name, None)
                if not free:
                    del self._unowned_pods[namespace]

    def _index_pod(self, namespace: str, name: str, prev: Obj | None, obj: Obj | None) -> None:
        was = ((prev or {}).get("spec") or {}).get("nodeName")
        now = ((obj or {}).get("spec") or {}).get("nodeName")
        if was and was != now:
            here = self._on_node.get(was, {})
            here.pop((namespace, name), None)
            if not here:
                self._on_node.pop(was, None)
        if now:
            self._on_node.setdefault(now, {})[(namespace, name)] = obj

    # -- watch history -----------------------------------------------------------------------

    def events_since(self, res: Resource, rv: int, *, open_watch: bool = False) -> list[WatchEvent]:
        """History events of *res* strictly after *rv*.

        A new watch from a version older than the window (or than the last compaction) is
        410 Expired. An open watch (*open_watch*) is not affected by compaction, as in the
        real watch cache; it is expired only if it fell behind the window (the real server
        closes such a watcher, and its client's re-watch then gets the 410).
        """
        with self.cond:
            key = (res.group, res.plural)
            floor = self._floor.get(key, 0) if open_watch else max(self._floor.get(key, 0), self._compacted)
            if rv < floor:
                raise expired(rv, floor)
            out = []
            for event in reversed(self._history.get(key, ())):
                if event.rv <= rv:
                    break
                out.append(event)
            out.reverse()
            return out

    def watch_cond(self, res: Resource) -> threading.Condition:
        """The condition a watch of *res* waits on (under :attr:`cond`'s lock) for new events."""
        with self.cond:
            key = (res.group, res.plural)
            cond = self._watch_conds.get(key)
            if cond is None:
                cond = self._watch_conds[key] = threading.Condition(self._lock)
            return cond

    def wake_all(self) -> None:
        """Wake every waiting watch (the server is stopping)."""
        with self.cond:
            for cond in self._watch_conds.values():
                cond.notify_all()
            self.cond.notify_all()

    def compact(self) -> int:
        """Compaction: from now on a watch may start only at the current version or later
        (older ones get 410 Gone); open watches go on. Returns the current version."""
        with self.cond:
            self._compacted = self.rv
            return self.rv

    def _emit(self, res: Resource, type_: str, namespace: str, obj: Obj, prev: Obj | None) -> None:
        key = (res.group, res.plural)
        history = self._history.get(key)
        if history is None:
            history = self._history[key] = deque()
        if len(history) >= self.watch_cache_size:
            self._floor[key] = history.popleft().rv
        event = WatchEvent(self.rv, type_, namespace, obj, prev)
        history.append(event)
        for listener in self.listeners:
            listener(res, event)
        cond = self._watch_conds.get(key)
        if cond is not None:
            cond.notify_all()

    @contextlib.contextmanager
    def dry_run(self) -> Iterator[None]:
        """Within this block (on this thread, under the store lock) writes are checked and
        answered but not stored, and no watch event is sent: ``dryRun=All``."""
        with self.cond:
            self._dry.on = True
            try:
                yield
            finally:
                self._dry.on = False

    def _commit(self, res: Resource, namespace: str, obj: Obj, prev: Obj | None) -> Obj:
        if getattr(self._dry, "on", False):
            if prev is None:
                obj["metadata"].pop("resourceVersion", None)
            else:
                obj["metadata"]["resourceVersion"] = prev["metadata"]["resourceVersion"]
            return obj
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._bucket(res)[(namespace, obj["metadata"]["name"])] = obj
        if res.plural == "pods" and not res.group:
            self._index_pod(namespace, obj["metadata"]["name"], prev, obj)
        self._index_owners(res, namespace, obj["metadata"]["name"], prev, obj)
        self._emit(res, "ADDED" if prev is None else "MODIFIED", namespace, obj, prev)
        return obj

    # -- writes ------------------------------------------------------------------------------

    def create(self, res: Resource, namespace: str, body: Obj, *, owned: bool = False) -> Obj:
        """Store a new object (generateName, uid, timestamps, defaults); AlreadyExists on a name clash.

        *owned*: the caller hands *body* over (freshly parsed or built, referenced by nothing
        else): it is stored as it is, not copied."""
        obj = body if owned else _copy(body)
        if not isinstance(obj, dict):
            raise bad_request("the request body must be a JSON object")
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        body_ns = meta.get("namespace")
        if res.namespaced:
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
        elif body_ns:
            meta.pop("namespace")
        with self.cond:
            if res.namespaced and ("", namespace) not in self._bucket(resource("", "v1", "namespaces")):
                raise ApiError(
                    404,
                    "NotFound",
                    f'namespaces "{namespace}" not found',
                    {"name": namespace, "kind": "namespaces"},
                )
            if not meta.get("name"):
                base = meta.get("generateName")
                if not base:
                    raise invalid(
                        res,
                        "",
                        [
                            (
                                "metadata.name",
                                "FieldValueRequired",
                                "Required value: name or generateName is required",
                            )
                        ],
                    )
                for _ in range(8):
                    name = base[:58] + _name_suffix()
                    if (namespace, name) not in self._bucket(res):
                        break
                meta["name"] = name
            name = meta["name"]
            _validate_name(res, name)
            if res.namespaced:
                meta["namespace"] = namespace
            else:
                namespace = ""
            if (namespace, name) in self._bucket(res):
                raise already_exists(res, name)
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(field, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if res.group in ("apps", "batch"):  # the kinds whose strategy tracks generation (v1.31)
                meta["generation"] = 1
            obj["kind"], obj["apiVersion"] = res.kind, res.api_version
            _omit_empty(meta)
            if (res.group, res.plural) == ("", "pods"):
                self._admit_priority(name, obj)
            _prepare_create(res, obj)
            _validate(res, obj, None)
            return self._commit(res, namespace, obj, None)

    def _admit_priority(self, name: str, pod: Obj) -> None:
        """The Priority admission plugin: ``priorityClassName`` (or the global default class) sets
        ``spec.priority`` and ``spec.preemptionPolicy``; an unknown class is 403 Forbidden."""
        spec = pod.setdefault("spec", {})
        classes = self._bucket(resource("scheduling.k8s.io", "v1", "priorityclasses"))
        wanted = spec.get("priorityClassName")
        if wanted:
            pc = classes.get(("", wanted))
            if pc is None:
                raise ApiError(
                    403,
                    "Forbidden",
                    f'pods "{name}" is forbidden: no PriorityClass with name {wanted} was found',
                    {},
                )
        else:
            pc = next((c for c in classes.values() if c.get("globalDefault")), None)
            if pc is None:
                return
            spec["priorityClassName"] = pc["metadata"]["name"]
        value = int(pc.get("value", 0))
        if spec.get("priority") is not None and spec["priority"] != value:
            raise ApiError(
                403, "Forbidden", f'pods "{name}" is forbidden: the integer value of priority ({spec["priority"]}) '
                f"must not be provided in pod spec; priority admission controller computed {value} from the given "
                "PriorityClass name", {}
            )  # fmt: skip
        spec["priority"] = value
        spec["preemptionPolicy"] = pc.get("preemptionPolicy") or "PreemptLowerPriority"

    def update(
        self, res: Resource, namespace: str, name: str, body: Obj, subresource: str | None = None
    ) -> Obj:
        """PUT: replace the object (or only its status); 409 Conflict on a stale resourceVersion."""
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        with self.cond:
            old = self.get(res, namespace, name)
            want = meta.get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise stale(res, name)
            return self._replace(res, namespace, old, _copy(body), subresource)

    def mutate(
        self,
        res: Resource,
        namespace: str,
        name: str,
        fn: Callable[[Obj], Obj],
        subresource: str | None = None,
    ) -> Obj:
        """Read-modify-write under the lock: *fn* gets a private copy and returns the new object."""
        with self.cond:
            old = self.get(res, namespace, name)
            new = fn(_copy(old))
            if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
                raise bad_request("the patched object is not a JSON object with object metadata")
            want = (new.get("metadata") or {}).get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise stale(res, name)
            if (new.get("metadata") or {}).get("name", name) != name:
                raise bad_request("metadata.name: the name of the object cannot be changed by a patch")
            return self._replace(res, namespace, old, new, subresource)

    def set_status(self, res: Resource, namespace: str, name: str, fn: Callable[[Obj], Obj]) -> Obj:
        """A status subresource write computed from the stored object: *fn* reads it (and must not
        change it) and returns the new status, a dict it shares with nothing it will change.
        No copy of the object is made (:meth:`mutate` copies it for its *fn*)."""
        with self.cond:
            old = self.get(res, namespace, name)
            return self._replace(res, namespace, old, {"status": fn(old)}, "status")

    def _replace(self, res: Resource, namespace: str, old: Obj, new: Obj, subresource: str | None) -> Obj:
        name = old["metadata"]["name"]
        if subresource == "status":
            # everything but the status is the stored object's: shared, not copied (stored
            # objects are never changed in place), with metadata of its own (written below)
            status = new.get("status")
            new = {**old, "metadata": dict(old["metadata"])}
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        else:
            meta = new.get("metadata")
            if not isinstance(meta, dict):
                meta = new["metadata"] = {}
            for field in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if field in old["metadata"]:
                    meta[field] = old["metadata"][field]
                else:
                    meta.pop(field, None)
            if res.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            new["kind"], new["apiVersion"] = res.kind, res.api_version
            if "generation" in meta and new.get("spec") != old.get("spec"):
                meta["generation"] += 1
            _validate(res, new, old)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        _omit_empty(new["metadata"])
        if new == old:
            return old  # a no-op write neither bumps the resourceVersion nor emits an event
        finalized = new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers")
        if finalized and not (res.plural == "pods" and _pod_needs_kubelet(new)):
            return self._remove(res, namespace, name, new)
        return self._commit(res, namespace, new, old)

    def _remove(self, res: Resource, namespace: str, name: str, last: Obj) -> Obj:
        if getattr(self._dry, "on", False):
            return _copy(last)
        old = self._bucket(res).pop((namespace, name))
        if res.plural == "pods" and not res.group:
            self._index_pod(namespace, name, old, None)
        self._index_owners(res, namespace, name, old, None)
        self.rv += 1
        gone = _copy(last)
        gone["metadata"]["resourceVersion"] = str(self.rv)
        self._emit(res, "DELETED", namespace, gone, old)
        if res.plural == "namespaces":
            for (group, plural), bucket in list(self._objects.items()):
                for (ns, child), obj in list(bucket.items()):
                    if ns == name:
                        child_res = next(r for r in _served() if (r.group, r.plural) == (group, plural))
                        self._remove(child_res, ns, child, obj)
        return gone

    def delete(self, res: Resource, namespace: str, name: str, options: Obj | None = None) -> Obj:
        """DELETE: the object as deleted, or as marked for graceful deletion / finalization."""
        options = options or {}
        with self.cond:
            old = self.get(res, namespace, name)
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                raise conflict(
                    res,
                    name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {old['metadata']['uid']}",
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise conflict(
                    res,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, ResourceVersion in object meta: {old['metadata']['resourceVersion']}",
                )
            grace = options.get("gracePeriodSeconds")
            if res.plural == "pods" and _pod_needs_kubelet(old) and grace != 0:
                if grace is None:
                    grace = old["spec"].get("terminationGracePeriodSeconds", 30)
                return self._mark_deleted(res, namespace, old, int(grace))
            if old["metadata"].get("finalizers"):
                return self._mark_deleted(res, namespace, old, 0)
            return self._remove(res, namespace, name, old)

    def _mark_deleted(self, res: Resource, namespace: str, old: Obj, grace: int) -> Obj:
        if old["metadata"].get("deletionTimestamp"):
            return old
        new = _copy(old)
        new["metadata"]["deletionTimestamp"] = now_rfc3339(grace)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return self._commit(res, namespace, new, old)

    def finish_deletion(self, res: Resource, namespace: str, name: str) -> Obj | None:
        """What a kubelet does after a pod's containers stopped: remove the terminating pod."""
        with self.cond:
            obj = self._bucket(res).get((namespace, name))
            if (
                obj is None
                or not obj["metadata"].get("deletionTimestamp")
                or obj["metadata"].get("finalizers")
            ):
                return None
            return self._remove(res, namespace, name, obj)

    # -- subresources ------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, binding: Obj) -> None:
        """The pods/binding subresource: assign the pod to ``binding.target.name``."""
        pods = resource("", "v1", "pods")
        target = binding.get("target") or {}
        meta = binding.get("metadata") or {}
        binding_res = Resource("", "v1", "bindings", "Binding", True, "binding")
        if meta.get("name") and meta["name"] != name:
            raise bad_request("name in URL does not match name in Binding object")
        if not target.get("name"):
            raise invalid(binding_res, name, [("target.name", "FieldValueRequired", "Required value")])
        if target.get("kind") not in (None, "", "Node"):
            raise invalid(
                binding_res,
                name,
                [
                    (
                        "target.kind",
                        "FieldValueNotSupported",
                        f'Unsupported value: "{target["kind"]}": supported values: "Node"',
                    )
                ],
            )

        def assign(pod: Obj) -> Obj:
            have = pod["metadata"]
            if meta.get("uid") and meta["uid"] != have["uid"]:
                why = f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {have['uid']}"
                raise conflict(pods, name, why)
            if meta.get("resourceVersion") and meta["resourceVersion"] != have["resourceVersion"]:
                why = (
                    f"Precondition failed: ResourceVersion in precondition: {meta['resourceVersion']}, "
                    f"ResourceVersion in object meta: {have['resourceVersion']}"
                )
                raise conflict(pods, name, why)
            if pod["metadata"].get("deletionTimestamp"):
                raise conflict(
                    "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host"
                )
            if pod["spec"].get("nodeName"):
                raise conflict(
                    "pods/binding",
                    name,
                    f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"',
                )
            if pod["spec"].get("schedulingGates"):
                raise conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
            pod["spec"]["nodeName"] = target["name"]
            if meta.get("annotations"):
                have_ann = pod["metadata"].get("annotations") or {}
                pod["metadata"]["annotations"] = {**have_ann, **meta["annotations"]}
            status = pod["status"]
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": now_rfc3339(),
                }
            )
            status["conditions"] = conditions
            return pod

        with self.cond:
            old = self.get(pods, namespace, name)
            # the parts it changes are new dicts; the rest is shared with the stored object
            new = assign({
                **old,
                "metadata": dict(old["metadata"]),
                "spec": dict(old["spec"]),
                "status": dict(old.get("status") or {}),
            })  # fmt: skip
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            self._commit(pods, namespace, new, old)

    def get_scale(self, res: Resource, namespace: str, name: str) -> Obj:
        obj = self.get(res, namespace, name)
        return _scale_of(obj)

    def set_scale(self, res: Resource, namespace: str, name: str, fn: Callable[[Obj], Obj]) -> Obj:
        """Update ``spec.replicas`` through the scale subresource; *fn* maps the Scale."""
        with self.cond:
            old = self.get(res, namespace, name)
            scale = fn(_scale_of(old))
            want = (scale.get("metadata") or {}).get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise stale(res, name)
            replicas = (scale.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                scale_res = Resource("autoscaling", "v1", "scale", "Scale", True, "scale")
                raise invalid(
                    scale_res,
                    name,
                    [
                        (
                            "spec.replicas",
                            "FieldValueInvalid",
                            f"Invalid value: {replicas}: must be greater than or equal to 0",
                        )
                    ],
                )
            new = _copy(old)
            new["spec"]["replicas"] = replicas
            if new != old:
                new["metadata"]["generation"] = new["metadata"].get("generation", 1) + 1
                self._commit(res, namespace, new, old)
            return _scale_of(new)


def _omit_empty(meta: Obj) -> None:
    """Empty metadata maps and lists are absent on the wire (``omitempty``), so a write of one is a no-op."""
    for field in ("labels", "annotations", "ownerReferences", "finalizers"):
        if field in meta and not meta[field]:
            del meta[field]


def _served() -> list[Resource]:
    from kube.testing._resources import RESOURCES

    return list(RESOURCES.values())


def _scale_of(obj: Obj) -> Obj:
    meta = obj["metadata"]
    status: Obj = {"replicas": (obj.get("status") or {}).get("replicas", 0)}
    selector = format_label_selector((obj.get("spec") or {}).get("selector"))
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": status,
    }


def _pod_needs_kubelet(pod: Obj) -> bool:
    """A bound, non-terminal pod is deleted gracefully: its kubelet must stop it first."""
    return bool(pod["spec"].get("nodeName")) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


# -- per-kind strategies ---------------------------------------------------------------------


def _validate_name(res: Resource, name: str) -> None:
    if res.plural in ("namespaces",):
        ok = len(name) <= 63 and _LABEL_RE.match(name)
        msg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
    else:
        ok = len(name) <= 253 and _NAME_RE.match(name)
        msg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    if not ok:
        raise invalid(res, name, [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {msg}')])


_DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]


def _qos_class(spec: Obj) -> str:
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    requests_any = limits_all = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_any = True
        for r in ("cpu", "memory"):
            if r not in lim or str(req.get(r, lim[r])) != str(lim[r]):
                guaranteed = False
        limits_all = True
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_all else "Burstable"


def _prepare_create(res: Resource, obj: Obj) -> None:
    key = (res.group, res.plural)
    if key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("securityContext", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        for default in _DEFAULT_TOLERATIONS:
            if not any(t.get("key") == default["key"] for t in tolerations):
                tolerations.append(dict(default))
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            if isinstance(c, dict):
                c.setdefault("resources", {})
                c.setdefault("terminationMessagePath", "/dev/termination-log")
                c.setdefault("terminationMessagePolicy", "File")
                image = str(c.get("image", ""))
                tag = image.rsplit("/", 1)[-1]
                latest = ":" not in tag or tag.endswith(":latest")
                c.setdefault("imagePullPolicy", "Always" if latest and "@" not in image else "IfNotPresent")
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    elif key == ("", "namespaces"):
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif key == ("", "nodes"):
        obj.setdefault("spec", {})
        obj.setdefault("status", {})
    elif key[0] == "apps":
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        if key == ("apps", "deployments"):
            spec.setdefault(
                "strategy",
                {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            )
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
        elif key == ("apps", "statefulsets"):
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
            spec.setdefault("revisionHistoryLimit", 10)
        obj["status"] = {"replicas": 0} if key != ("apps", "deployments") else {}
    elif key == ("batch", "jobs"):
        spec = obj.setdefault("spec", {})
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if not spec.get("manualSelector"):
            uid, name = obj["metadata"]["uid"], obj["metadata"]["name"]
            generated = {"batch.kubernetes.io/controller-uid": uid}
            spec["selector"] = {"matchLabels": generated}
            template = spec.setdefault("template", {})
            template.setdefault("metadata", {}).setdefault("labels", {}).update(
                {**generated, "controller-uid": uid, "batch.kubernetes.io/job-name": name, "job-name": name}
            )
        obj["status"] = {}


_POD_MUTABLE = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _validate(res: Resource, obj: Obj, old: Obj | None) -> None:
    name = obj["metadata"]["name"]
    key = (res.group, res.plural)
    causes: list[tuple[str, str, str]] = []
    if key == ("", "pods"):
        spec = obj.get("spec") or {}
        containers = spec.get("containers")
        if not containers:
            causes.append(("spec.containers", "FieldValueRequired", "Required value"))
        seen = set()
        for i, c in enumerate(containers or []):
            if not isinstance(c, dict) or not c.get("name"):
                causes.append((f"spec.containers[{i}].name", "FieldValueRequired", "Required value"))
            elif c["name"] in seen:
                causes.append(
                    (f"spec.containers[{i}].name", "FieldValueDuplicate", f'Duplicate value: "{c["name"]}"')
                )
            else:
                seen.add(c["name"])
            if isinstance(c, dict) and not c.get("image"):
                causes.append((f"spec.containers[{i}].image", "FieldValueRequired", "Required value"))
        if old is not None and not causes:
            a, b = _copy(old.get("spec") or {}), _copy(spec)
            for s in (a, b):
                for field in ("containers", "initContainers"):
                    for c in s.get(field) or []:
                        c.pop("image", None)
                s.pop("activeDeadlineSeconds", None)
                s.pop("schedulingGates", None)
            added = b.pop("tolerations", []) or []
            existing = a.pop("tolerations", []) or []
            if a != b or any(t not in added for t in existing):
                causes.append(("spec", "FieldValueForbidden", _POD_MUTABLE.split(": ", 1)[1]))
    elif key[0] == "apps" or key == ("batch", "jobs"):
        spec = obj.get("spec") or {}
        if key == ("batch", "jobs"):
            policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
            if policy not in ("Never", "OnFailure"):
                causes.append(
                    (
                        "spec.template.spec.restartPolicy",
                        "FieldValueNotSupported" if policy else "FieldValueRequired",
                        f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"'
                        if policy
                        else 'Required value: valid values: "OnFailure", "Never"',
                    )
                )
        selector = spec.get("selector")
        if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            causes.append(("spec.selector", "FieldValueRequired", "Required value"))
        else:
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if not label_selector_from_object(selector)({"metadata": {"labels": labels}}):
                causes.append(
                    (
                        "spec.template.metadata.labels",
                        "FieldValueInvalid",
                        f"Invalid value: {labels}: `selector` does not match template `labels`",
                    )
                )
            if old is not None and selector != (old.get("spec") or {}).get("selector"):
                causes.append(
                    ("spec.selector", "FieldValueInvalid", f"Invalid value: {selector}: field is immutable")
                )
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or replicas < 0:
            causes.append(
                (
                    "spec.replicas",
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                )
            )
    elif key == ("", "events"):
        involved = obj.get("involvedObject") or {}
        if involved.get("namespace") and involved["namespace"] != obj["metadata"].get("namespace"):
            causes.append(
                (
                    "involvedObject.namespace",
                    "FieldValueInvalid",
                    f'Invalid value: "{involved["namespace"]}": does not match event.namespace',
                )
            )
    elif key == ("events.k8s.io", "events"):
        for field in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
            if not obj.get(field):
                causes.append((field, "FieldValueRequired", "Required value"))
        regarding = obj.get("regarding") or {}
        if regarding.get("namespace") and regarding["namespace"] != obj["metadata"].get("namespace"):
            causes.append(
                (
                    "regarding.namespace",
                    "FieldValueInvalid",
                    f'Invalid value: "{regarding["namespace"]}": does not match event.namespace',
                )
            )
    if causes:
        raise invalid(res, name, causes)
