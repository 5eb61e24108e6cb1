"""The HorizontalPodAutoscaler controller of the stand-in server (autoscaling/v2).

What ``kubectl autoscale`` creates is acted on as kube-controller-manager's HPA controller
does, reduced to what a scheduler test needs: every ``interval`` seconds each HPA reads the
metrics of its target's pods, computes

    desired = ceil(current value / target value x pods with the metric)

per metric (no change while the ratio is within the 10 % tolerance), takes the largest,
clamps it to ``[minReplicas, maxReplicas]``, writes it through the target's ``scale``
subresource (Deployment, ReplicaSet, StatefulSet) and records ``status`` (current and
desired replicas, current metrics, ``lastScaleTime``, the ``AbleToScale``,
``ScalingActive`` and ``ScalingLimited`` conditions).

Metrics source.  There is no metrics-server here: a pod's usage is what its annotations
say, set with ``kubectl annotate``::

    metrics.fluxlite.io/cpu: 900m          # Resource metric cpu (a quantity)
    metrics.fluxlite.io/memory: 300Mi      # Resource metric memory
    metrics.fluxlite.io/<name>: 42         # Pods metric <name>

``Resource`` metrics with an ``Utilization`` target (percent of the pods' requests) or an
``AverageValue`` target, and ``Pods`` metrics with an ``AverageValue`` target are served;
a pod without the annotation has no metric and is left out of the average (the real
controller's assumptions for missing pods are not modelled).  Deviations: no
stabilization window and no ``behavior`` policies (a change applies at the next sync), no
``Object``/``External``/``ContainerResource`` metrics (their HPA says ``ScalingActive``
False with reason ``FailedGetMetric``).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from fluxlite.errors import FluxliteError
from kube._quantity import parse_quantity
from kube.testing._resources import RESOURCES, resource
from kube.testing._selectors import label_selector
from kube.testing._store import ApiError, Store, now_rfc3339

__all__ = ["HPA", "METRIC_ANNOTATION", "sync_all"]

HPA = resource("autoscaling", "v2", "horizontalpodautoscalers")
PODS = resource("", "v1", "pods")
#: prefix of the pod annotations that carry its metrics
METRIC_ANNOTATION = "metrics.fluxlite.io/"
_TOLERANCE = 0.1
_SCALABLE = {"Deployment": ("apps", "deployments"), "ReplicaSet": ("apps", "replicasets"),
             "StatefulSet": ("apps", "statefulsets")}  # fmt: skip


def _quantity(text: Any) -> float | None:
    if text is None:
        return None
    try:
        return float(parse_quantity(text, field="metric"))
    except FluxliteError:
        return None


def _request(pod: dict, res: str) -> float:
    """The pod's request of ``res``: its containers' requests summed (what the HPA divides by)."""
    total = 0.0
    for c in (pod.get("spec") or {}).get("containers") or ():
        got = _quantity(((c.get("resources") or {}).get("requests") or {}).get(res))
        total += got or 0.0
    return total


def _active(pod: dict) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _condition(kind: str, ok: bool, reason: str, message: str, old: list[dict]) -> dict:
    status = "True" if ok else "False"
    prev = next((c for c in old if c.get("type") == kind), None)
    since = prev["lastTransitionTime"] if prev and prev.get("status") == status else now_rfc3339()
    return {"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message}


def _evaluate(metric: dict, pods: list[dict]) -> tuple[float | None, int, dict | None, str]:
    """(usage ratio, pods with the metric, the status's currentMetrics entry, why not) of one
    metric over ``pods``."""
    mtype = metric.get("type")
    if mtype == "Resource":
        spec = metric.get("resource") or {}
        name = spec.get("name", "")
    elif mtype == "Pods":
        spec = metric.get("pods") or {}
        name = (spec.get("metric") or {}).get("name", "")
    else:
        return None, 0, None, f"metrics of type {mtype} are not served by the test server"
    target = spec.get("target") or {}
    values = []
    for p in pods:
        v = _quantity((p["metadata"].get("annotations") or {}).get(METRIC_ANNOTATION + name))
        if v is not None:
            values.append((p, v))
    if not values:
        return None, 0, None, f"no pod has the metric {name} (annotation {METRIC_ANNOTATION}{name})"
    total = sum(v for _, v in values)
    average = total / len(values)
    current: dict[str, Any] = {"averageValue": _format(average, name)}
    if mtype == "Resource" and target.get("type") == "Utilization":
        requested = sum(_request(p, name) for p, _ in values)
        if requested <= 0:
            return None, 0, None, f"the pods request no {name}: utilization is undefined"
        utilization = 100.0 * total / requested
        current["averageUtilization"] = round(utilization)
        ratio = utilization / float(target.get("averageUtilization") or 100)
    else:
        want = _quantity(target.get("averageValue"))
        if not want:
            return None, 0, None, f"metric {name}: target {target.get('type')} needs a positive averageValue"
        ratio = average / want
    if mtype == "Resource":
        entry = {"type": "Resource", "resource": {"name": name, "current": current}}
    else:
        entry = {"type": "Pods", "pods": {"metric": {"name": name}, "current": current}}
    return ratio, len(values), entry, ""


def _format(value: float, name: str) -> str:
    if name == "cpu":
        return f"{round(value * 1000)}m"
    if value == int(value):
        return str(int(value))
    return f"{round(value * 1000)}m"


def sync_one(store: Store, ns: str, name: str) -> None:
    """One HPA's sync: read its target's pods' metrics, scale the target, write the status."""
    with store.cond:
        hpa = store.get(HPA, ns, name)
        spec = hpa.get("spec") or {}
        old = (hpa.get("status") or {}).get("conditions") or []
        ref = spec.get("scaleTargetRef") or {}
        where = _SCALABLE.get(ref.get("kind", ""))
        conditions = []
        status: dict[str, Any] = dict(hpa.get("status") or {})
        try:
            if where is None:
                raise LookupError(f"the HPA controller cannot scale a {ref.get('kind')!r}")
            res = next(r for (g, _v, pl), r in RESOURCES.items() if (g, pl) == where)
            try:
                target = store.get(res, ns, ref.get("name", ""))
            except ApiError:
                raise LookupError(f"{ref.get('kind')} {ref.get('name')!r} not found") from None
        except LookupError as exc:
            conditions.append(_condition("AbleToScale", False, "FailedGetScale", str(exc), old))
            status["conditions"] = conditions
            _write(store, ns, name, status)
            return
        current = int((target.get("spec") or {}).get("replicas", 1))
        selector = label_selector(_selector_text(target))
        pods = [p for p in store.list(PODS, ns, selector)[0] if _active(p)]
        lo, hi = int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 1)
        metrics = spec.get("metrics") or [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
        ]  # fmt: skip
        proposals, entries, why = [], [], ""
        for m in metrics:
            ratio, counted, entry, reason = _evaluate(m, pods)
            if entry is not None:
                entries.append(entry)
            if ratio is None:
                why = why or reason
                continue
            proposals.append(current if abs(ratio - 1.0) <= _TOLERANCE else math.ceil(ratio * counted - 1e-9))
        conditions.append(_condition("AbleToScale", True, "SucceededGetScale",
                                     "the HPA controller was able to get the target's current scale", old))  # fmt: skip
        if not proposals:
            conditions.append(_condition("ScalingActive", False, "FailedGetMetric", why, old))
            status.update(currentReplicas=current, desiredReplicas=current, conditions=conditions)
            _write(store, ns, name, status)
            return
        desired = max(proposals)
        limited = desired < lo or desired > hi
        desired = min(max(desired, lo), hi)
        conditions.append(_condition("ScalingActive", True, "ValidMetricFound",
                                     "the HPA was able to successfully calculate a replica count", old))  # fmt: skip
        conditions.append(
            _condition("ScalingLimited", limited, "TooManyReplicas" if limited and desired == hi else
                       ("TooFewReplicas" if limited else "DesiredWithinRange"),
                       "the desired replica count is outside the range" if limited else
                       "the desired count is within the acceptable range", old)
        )  # fmt: skip
        if desired != current:
            with contextlib.suppress(ApiError):
                store.set_scale(res, ns, ref["name"], lambda s: {**s, "spec": {"replicas": desired}})
                status["lastScaleTime"] = now_rfc3339()
        status.update(currentReplicas=current, desiredReplicas=desired, currentMetrics=entries,
                      conditions=conditions, observedGeneration=hpa["metadata"].get("generation", 1))  # fmt: skip
        _write(store, ns, name, status)


def _selector_text(target: dict) -> str:
    from kube.testing._selectors import format_label_selector

    return format_label_selector((target.get("spec") or {}).get("selector")) or ""


def _write(store: Store, ns: str, name: str, status: dict) -> None:
    with contextlib.suppress(ApiError):
        store.mutate(HPA, ns, name, lambda o: {**o, "status": status}, "status")


def sync_all(store: Store) -> None:
    """Sync every HPA of every namespace (the controller's periodic resync)."""
    for hpa in store.list(HPA, None)[0]:
        with contextlib.suppress(ApiError):
            sync_one(store, hpa["metadata"]["namespace"], hpa["metadata"]["name"])


# -- autoscaling/v1: a view of the same objects --------------------------------------------
# ``kubectl autoscale`` (1.32) creates an autoscaling/v1 HPA; a real server stores one object
# and converts between the versions.  Here the objects are stored as v2 and a v1 request is
# converted on the way in and out (``targetCPUUtilizationPercentage`` is the v2 cpu Utilization
# metric; a v1 write keeps the v2-only fields it cannot express: other metrics, behavior,
# conditions).


def _cpu_utilization(metrics: list[dict], key: str) -> int | None:
    for m in metrics or ():
        r = m.get("resource") or {}
        if m.get("type") == "Resource" and r.get("name") == "cpu":
            got = (r.get(key) or {}).get("averageUtilization")
            if got is not None:
                return int(got)
    return None


def v2_to_v1(obj: dict) -> dict:
    """The autoscaling/v1 view of a stored (v2) HPA."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    v1spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    pct = _cpu_utilization(spec.get("metrics") or [], "target")
    if pct is not None:
        v1spec["targetCPUUtilizationPercentage"] = pct
    out = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1", "metadata": obj.get("metadata") or {},
           "spec": v1spec}  # fmt: skip
    if "status" in obj:
        v1status = {k: status[k] for k in ("observedGeneration", "lastScaleTime", "currentReplicas",
                                           "desiredReplicas") if k in status}  # fmt: skip
        cur = _cpu_utilization(status.get("currentMetrics") or [], "current")
        if cur is not None:
            v1status["currentCPUUtilizationPercentage"] = cur
        v1status.setdefault("currentReplicas", 0)
        v1status.setdefault("desiredReplicas", 0)
        out["status"] = v1status
    return out


def v1_to_v2(view: Any, old: dict | None = None) -> Any:
    """A v1 HPA (a request body, or a patched view) as the stored v2 object; ``old`` (the stored
    object it replaces) gives the v2-only fields."""
    if not isinstance(view, dict):
        return view
    spec, status = view.get("spec") or {}, view.get("status")
    base = old or {}
    v2spec = {k: v for k, v in (base.get("spec") or {}).items() if k not in ("scaleTargetRef", "minReplicas",
                                                                             "maxReplicas", "metrics")}  # fmt: skip
    v2spec.update({k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec})
    others = [m for m in (base.get("spec") or {}).get("metrics") or [] if _cpu_utilization([m], "target") is None]
    if spec.get("targetCPUUtilizationPercentage") is not None:
        cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}}  # fmt: skip
        others = [cpu, *others]
    if others:
        v2spec["metrics"] = others
    out = {**{k: v for k, v in view.items() if k not in ("spec", "status")}, "spec": v2spec,
           "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2"}  # fmt: skip
    if status is not None:
        v2status = dict(base.get("status") or {})
        v2status.update({k: status[k] for k in ("observedGeneration", "lastScaleTime", "currentReplicas",
                                                "desiredReplicas") if k in status})  # fmt: skip
        out["status"] = v2status
    elif "status" in base:
        out["status"] = base["status"]
    return out
