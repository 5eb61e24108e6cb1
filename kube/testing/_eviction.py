"""The Eviction API (``pods/eviction``, policy/v1) and PodDisruptionBudget status.

What kube-apiserver's eviction REST does (``pkg/registry/core/pod/storage/eviction.go``),
on the same rules, decided under the store lock so two evictions never both spend the
last allowed disruption:

* a pod that is Pending, Succeeded, Failed or already terminating is deleted at once;
* otherwise the PodDisruptionBudgets of its namespace whose selector matches it are
  found: none - the pod is deleted; more than one - ``500`` (unsupported, as upstream);
  one whose ``disruptionsAllowed`` is 0 - ``429 TooManyRequests`` with a
  ``DisruptionBudget`` cause ("needs N healthy pods and has M currently") and nothing
  changes; else the pod is deleted (gracefully, with the Eviction's ``deleteOptions``).

A budget's status is computed as the disruption controller computes it: healthy pods
are the matching pods that are Running, Ready and not terminating; ``desiredHealthy`` is
``minAvailable`` or ``expectedPods - maxUnavailable`` (percentages of the matching pods
round up, as upstream); ``disruptionsAllowed = max(0, currentHealthy - desiredHealthy)``.
The controllers (``controllers=True``) keep ``status`` current for ``kubectl get pdb``;
the eviction itself always decides on a fresh count.
"""

from __future__ import annotations

import math
from typing import Any

from kube.testing._resources import resource
from kube.testing._selectors import label_selector_from_object
from kube.testing._store import ApiError, Store, not_found

__all__ = ["evict", "pdb_status"]

PODS = resource("", "v1", "pods")
PDBS = resource("policy", "v1", "poddisruptionbudgets")
Obj = dict[str, Any]


def _healthy(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return (
        not pod["metadata"].get("deletionTimestamp")
        and status.get("phase") == "Running"
        and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
        )
    )


def _scaled(value: Any, total: int, name: str) -> int:
    if isinstance(value, str) and value.endswith("%"):
        try:
            return math.ceil(int(value[:-1]) * total / 100)
        except ValueError:
            raise ApiError(
                422, "Invalid", f"poddisruptionbudget {name}: invalid percentage {value!r}"
            ) from None
    return int(value)


def _matching(store: Store, pdb: Obj) -> list[Obj]:
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:  # policy/v1: a null selector selects nothing, an empty one everything
        return []
    match = label_selector_from_object(selector)
    ns = pdb["metadata"].get("namespace", "")
    return [p for p in store.list(PODS, ns)[0] if match(p)]


def pdb_status(store: Store, pdb: Obj) -> Obj:
    """The budget's status from the pods as they are now."""
    spec = pdb.get("spec") or {}
    pods = [
        p
        for p in _matching(store, pdb)
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    expected = len(pods)
    healthy = sum(1 for p in pods if _healthy(p))
    name = pdb["metadata"]["name"]
    if "minAvailable" in spec:
        desired = _scaled(spec["minAvailable"], expected, name)
    elif "maxUnavailable" in spec:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, name))
    else:
        desired = expected  # no field: maxUnavailable 0 (no voluntary disruption)
    return {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": max(0, healthy - desired),
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if healthy > desired else "False",
                "reason": "SufficientPods" if healthy > desired else "InsufficientPods",
                "message": "",
                "observedGeneration": pdb["metadata"].get("generation", 1),
                "lastTransitionTime": pdb["metadata"].get("creationTimestamp"),
            }
        ],
    }


def evict(store: Store, namespace: str, name: str, body: Any) -> Obj:
    """``POST .../pods/NAME/eviction``: delete the pod if its budget allows (see the module)."""
    if not isinstance(body, dict) or body.get("kind", "Eviction") != "Eviction":
        raise ApiError(400, "BadRequest", "the request body must be a policy/v1 Eviction")
    if (body.get("metadata") or {}).get("name", name) != name:
        raise ApiError(400, "BadRequest", f"name in URL does not match name in Eviction object: {name}")
    options = body.get("deleteOptions") or {}
    with store.cond:
        try:
            pod = store.get(PODS, namespace, name)
        except ApiError:
            raise not_found(PODS, name) from None
        phase = (pod.get("status") or {}).get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase in ("Pending", "Succeeded", "Failed", None):
            return store.delete(PODS, namespace, name, options)
        budgets = []
        for pdb in store.list(PDBS, namespace)[0]:
            selector = (pdb.get("spec") or {}).get("selector")
            if selector is not None and label_selector_from_object(selector)(pod):
                budgets.append(pdb)
        if len(budgets) > 1:
            raise ApiError(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            )
        if budgets:
            pdb = budgets[0]
            status = pdb_status(store, pdb)
            if status["disruptionsAllowed"] <= 0:
                raise ApiError(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    {
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {pdb['metadata']['name']} needs "
                                f"{status['desiredHealthy']} healthy pods and has {status['currentHealthy']} currently",
                            }
                        ]
                    },
                )
        return store.delete(PODS, namespace, name, options)
