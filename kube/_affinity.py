"""What is not a graph match: inter-pod (anti-)affinity, topology spread, soft node affinity, pod count.

kube-scheduler's Filter and Score plugins for these read where the other pods are and
what labels the nodes carry; here that is read from the core (which pods the engine
placed on which node, :attr:`kube.KubeCore.pods`, and the nodes' labels), never kept
apart. :func:`candidates` turns a pod's rules into

* a filter - the nodes it may go to (``None``: every node), with the reason the others
  were left out, as kube-scheduler words it; and
* scores - an order of preference over those nodes, given to the engine as tiers
  (each tier a hostlist constraint, tried best first), so the engine still chooses the
  vertices within a tier.

Rules (``pkg/scheduler/framework/plugins``): required pod affinity - the node's domain
(its value of ``topologyKey``) holds a pod matching the term, or no pod anywhere matches
and the incoming pod matches its own term (the first of a group); required
anti-affinity - no matching pod in the domain, and no pod already there has a required
anti-affinity term that matches the incoming pod (symmetry); preferred terms add or
subtract their weight; topology spread - with ``DoNotSchedule`` a domain is allowed
when its matching-pod count + 1 - the smallest count over the eligible domains is at
most ``maxSkew``; with ``ScheduleAnyway`` fewer matching pods score higher; preferred
node affinity adds the weights of the terms a node matches; ``status.allocatable.pods``
leaves out nodes holding that many pods.  Terms select pods in the incoming pod's
namespace unless they name ``namespaces``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fluxlite.errors import InputError
from kube._model import NodeInfo

__all__ = ["PodMeta", "candidates", "has_rules", "pod_meta", "selector_matches"]

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class PodMeta:
    """What other pods' rules look at in a placed pod: namespace, labels, its own anti-affinity."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    anti: tuple[dict[str, Any], ...] = ()  # required anti-affinity terms (for the symmetric check)
    priority: int = 0


def _affinity(pod: dict[str, Any]) -> dict[str, Any]:
    return ((pod.get("spec") or {}).get("affinity")) or {}


def pod_meta(pod: dict[str, Any]) -> PodMeta:
    md = pod.get("metadata") or {}
    anti = (_affinity(pod).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or ()
    return PodMeta(
        md.get("namespace", "default"),
        dict(md.get("labels") or {}),
        tuple(anti),
        int((pod.get("spec") or {}).get("priority") or 0),
    )


def has_rules(pod: dict[str, Any]) -> bool:
    """Does the pod use any rule of this module (else the plain match is the whole answer)?"""
    a = _affinity(pod)
    node_pref = (a.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
    return bool(
        a.get("podAffinity") or a.get("podAntiAffinity") or node_pref
        or (pod.get("spec") or {}).get("topologySpreadConstraints")
    )  # fmt: skip


def selector_matches(selector: dict[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (``matchLabels``, ``matchExpressions``) against labels; None matches nothing."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or ():
        key, op, vals = e.get("key", ""), e.get("operator", ""), e.get("values") or ()
        if op == "In":
            ok = key in labels and labels[key] in vals
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in vals
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise InputError(f"label selector: unknown operator {op!r}")
        if not ok:
            return False
    return True


def _domain(node: NodeInfo, key: str) -> str | None:
    if key == HOSTNAME:
        return node.labels.get(key, node.name)
    return node.labels.get(key)


def _term_matches(term: dict[str, Any], own_ns: str, meta: PodMeta) -> bool:
    namespaces = term.get("namespaces") or (own_ns,)
    return meta.namespace in namespaces and selector_matches(term.get("labelSelector"), meta.labels)


def _node_term(term: dict[str, Any], node: NodeInfo) -> bool:
    for e in term.get("matchExpressions") or ():
        key, op, vals = e.get("key", ""), e.get("operator", ""), e.get("values") or ()
        have = node.labels.get(key)
        if op == "In" and have not in vals:
            return False
        if op == "NotIn" and have in vals:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
        if op in ("Gt", "Lt"):
            try:
                x, bound = int(have or ""), int(vals[0])
            except (ValueError, IndexError):
                return False
            if (op == "Gt" and not x > bound) or (op == "Lt" and not x < bound):
                return False
    return True


def candidates(
    pod: dict[str, Any],
    nodes: Mapping[str, NodeInfo],
    placed: Iterable[tuple[str, PodMeta]],
    full: Iterable[str] = (),
) -> tuple[set[str] | None, dict[str, int], str]:
    """The nodes ``pod`` may go to (None: all), scores over them, and why nodes were left out.

    ``placed`` is ``(node, meta)`` of every pod the engine holds; ``full`` the nodes at their
    pod count.  O(pods x terms + nodes).
    """
    md = pod.get("metadata") or {}
    ns = md.get("namespace", "default")
    own = PodMeta(ns, dict(md.get("labels") or {}))
    a = _affinity(pod)
    aff = a.get("podAffinity") or {}
    anti = a.get("podAntiAffinity") or {}
    spreads = (pod.get("spec") or {}).get("topologySpreadConstraints") or ()
    placed = list(placed)
    allowed = {n for n, info in nodes.items()} - set(full)
    why: list[str] = []
    if len(allowed) < len(nodes):
        why.append(f"{len(nodes) - len(allowed)} node(s) are at their pod count (status.allocatable.pods)")
    scores = dict.fromkeys(allowed, 0)

    def domains_with(term: dict[str, Any]) -> set[str]:
        key = term.get("topologyKey", "")
        out = set()
        for node, meta in placed:
            info = nodes.get(node)
            if info is not None and _term_matches(term, ns, meta):
                d = _domain(info, key)
                if d is not None:
                    out.add(d)
        return out

    for term in aff.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        key = term.get("topologyKey", "")
        doms = domains_with(term)
        if not doms and _term_matches(term, ns, own):
            continue  # the first pod of a group that wants to be together
        keep = {n for n in allowed if _domain(nodes[n], key) in doms}
        if keep != allowed:
            why.append(f"{len(allowed) - len(keep)} node(s) didn't match pod affinity rules")
        allowed = keep
    for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        key = term.get("topologyKey", "")
        doms = domains_with(term)
        keep = {n for n in allowed if _domain(nodes[n], key) not in doms}
        if keep != allowed:
            why.append(f"{len(allowed) - len(keep)} node(s) didn't match pod anti-affinity rules")
        allowed = keep
    # symmetry: a placed pod's required anti-affinity that matches the incoming pod
    for node, meta in placed:
        for term in meta.anti:
            if _term_matches(term, meta.namespace, own):
                info = nodes.get(node)
                d = _domain(info, term.get("topologyKey", "")) if info else None
                if d is None:
                    continue
                keep = {n for n in allowed if _domain(nodes[n], term.get("topologyKey", "")) != d}
                if keep != allowed:
                    why.append(
                        f"{len(allowed) - len(keep)} node(s) didn't satisfy existing pods' anti-affinity rules"
                    )
                allowed = keep
    for c in spreads:
        key = c.get("topologyKey", "")
        skew = int(c.get("maxSkew", 1))
        counts: dict[str, int] = {}
        for n in nodes:
            d = _domain(nodes[n], key)
            if d is not None:
                counts.setdefault(d, 0)
        sel = {"labelSelector": c.get("labelSelector"), "namespaces": [ns]}
        for node, meta in placed:
            info = nodes.get(node)
            if info is not None and _term_matches(sel, ns, meta):
                d = _domain(info, key)
                if d is not None:
                    counts[d] = counts.get(d, 0) + 1
        if not counts:
            continue
        low = min(counts.values())
        if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
            keep = {
                n for n in allowed if _domain(nodes[n], key) is not None and counts[_domain(nodes[n], key)] + 1 - low <= skew
            }  # fmt: skip
            if keep != allowed:
                why.append(f"{len(allowed) - len(keep)} node(s) didn't match pod topology spread constraints")
            allowed = keep
        else:
            for n in allowed:
                d = _domain(nodes[n], key)
                scores[n] = scores.get(n, 0) - (counts.get(d, 0) if d is not None else low) * 10
    for w in aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        doms = domains_with(w.get("podAffinityTerm") or {})
        key = (w.get("podAffinityTerm") or {}).get("topologyKey", "")
        for n in allowed:
            if _domain(nodes[n], key) in doms:
                scores[n] = scores.get(n, 0) + int(w.get("weight", 1)) * 10
    for w in anti.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        doms = domains_with(w.get("podAffinityTerm") or {})
        key = (w.get("podAffinityTerm") or {}).get("topologyKey", "")
        for n in allowed:
            if _domain(nodes[n], key) in doms:
                scores[n] = scores.get(n, 0) - int(w.get("weight", 1)) * 10
    for w in (a.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        for n in allowed:
            if _node_term(w.get("preference") or {}, nodes[n]):
                scores[n] = scores.get(n, 0) + int(w.get("weight", 1))
    return allowed, {n: scores.get(n, 0) for n in allowed}, "; ".join(why)
