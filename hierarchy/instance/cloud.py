"""What an instance does differently for resources that stand for cloud instances (see providers/ec2.py).

A provider marks each vertex it can only take back whole (an EC2 node) with
the property ``release=whole``.  Three rules follow, at every level of a tree:

* **Whole or nothing.**  A shrink that would give back part of such a
  vertex's subtree (of what the job holds there) is refused before anything
  changes (:func:`refuse_partial`): the cloud cannot take back four cores of
  an instance, and a half-returned node would sit pending forever.
* **Draining.**  A hand-back to the provider whose termination EC2 did not
  confirm is kept: the node stays in the graph, marked down (never handed
  to another job), and is retried with exponential backoff
  (:func:`note_failure`, :func:`due`) until the provider confirms it is gone.
  ``instance info`` lists these under ``draining`` (:func:`draining_view`).
* **Node down.**  A node whose instance died under a job (spot reclaim,
  manual termination) is marked down and its job is told
  (:meth:`CloudMixin.nodes_down`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.readers import read_vertices
from hierarchy._release import node_vertices, release_exact, vertices_held
from hierarchy.instance.core import InstanceCore

__all__ = [
    "WHOLE",
    "CloudMixin",
    "draining_view",
    "due",
    "narrow_to_whole",
    "note_failure",
    "refuse_partial",
]

#: the property (key, value) a provider puts on vertices that go back whole only
WHOLE = ("release", "whole")
#: backoff of a draining hand-back: first retry after BACKOFF[0] s, doubling up to BACKOFF[1] s
BACKOFF = (1.0, 300.0)


def _whole(eng: Engine, v: int) -> bool:
    p = eng.graph.v_props.get(v)
    return p is not None and p.get(WHOLE[0]) == WHOLE[1]


def whole_root(eng: Engine, v: int) -> int | None:
    """The vertex marked whole at or above ``v`` (None if there is none).  O(depth)."""
    g = eng.graph
    if _whole(eng, v):
        return v
    for a in g.ancestors(v, eng.dom):
        if _whole(eng, a):
            return a
    return None


def refuse_partial(eng: Engine, jobid: int, vids: Iterable[int]) -> None:
    """InputError if ``vids`` name only part of what ``jobid`` holds of a whole-only vertex.  Changes nothing."""
    g = eng.graph
    if not g.v_props:
        return
    want = set(vids)
    roots = {r for v in want if (r := whole_root(eng, v)) is not None}
    for r in sorted(roots):
        held = vertices_held(eng, jobid, node_vertices(g, eng.dom, g.subtree(r, eng.dom)))
        missing = held - want
        if missing:
            raise InputError(
                f"a shrink must give back whole cloud nodes: {g.path(r, eng.dom)} is named only in part "
                f"({len(held) - len(missing)} of the {len(held)} vertices job {jobid} holds there); "
                "nothing was released"
            )


def narrow_to_whole(eng: Engine, roots: Iterable[str]) -> list[str]:
    """The whole-only vertices at or under ``roots`` (a root with none is kept as it is).

    A draining hand-back holds just its cloud nodes, so the zone above them
    stays usable for new nodes meanwhile.
    """
    g = eng.graph
    out: list[str] = []
    for p in roots:
        v = g.vertex_by_path(p)
        if v is None:
            continue
        inner = [g.path(u, eng.dom) for u in g.subtree(v, eng.dom) if _whole(eng, u)]
        out.extend(inner if inner and not _whole(eng, v) else [p])
    return list(dict.fromkeys(out))


def note_failure(item: dict[str, Any], error: object) -> None:
    """Count one failed attempt of a hand-back and set its next try (exponential backoff, wall clock)."""
    n = int(item.get("attempts", 0)) + 1
    item["attempts"] = n
    item["last_error"] = " ".join(str(error).split())[:300]
    item["next_try"] = time.time() + min(BACKOFF[1], BACKOFF[0] * 2 ** (n - 1))


def due(item: dict[str, Any], now: float | None = None) -> bool:
    return float(item.get("next_try", 0.0)) <= (time.time() if now is None else now)


def draining_view(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``instance info``'s view of the pending hand-backs to the provider."""
    out = []
    now = time.time()
    for it in items:
        if it.get("source") != "provider":
            continue
        names = [v.name for v in read_vertices(it["jgf"], source="draining") if v.type == "node"]
        out.append(
            {
                "instances": names,
                "roots": list(it["roots"]),
                "attempts": int(it.get("attempts", 0)),
                "last_error": it.get("last_error", ""),
                "next_try_s": round(max(0.0, float(it.get("next_try", now)) - now), 3),
            }
        )
    return out


class CloudMixin(InstanceCore):
    """The instance's side of a cloud provider's watch."""

    def nodes_down(self, lost: Iterable[tuple[str, str]], *, policy: str | None = None) -> list[dict[str, Any]]:
        """Nodes whose cloud instance died (``(path, EC2 state)`` from the provider's watch): see :mod:`hierarchy._cloud`.

        Each is marked down; the job holding it is told through the
        node-failure path, per ``policy`` (default the provider's
        ``on_node_down``): ``shrink`` takes the node from the job (the job
        goes on with the rest), ``fail`` ends the job.  A child's lease
        keeps the node, down here, and the child is told with every
        heartbeat answer (:meth:`lease_down_for`) until it gives the node
        back; the child does the same with its own jobs and children.  What
        is freed goes back to where it came from (the provider, which
        confirms the instance is gone, or the parent).  Returns the events
        (also in ``info()["node_events"]``, the state file and the log).
        """
        if policy is None:
            policy = getattr(self.provider, "on_node_down", "shrink")
        events: list[dict[str, Any]] = []
        with self._lock:
            g = self.engine.graph
            dom = self.engine.dom
            draining = {p for it in self.returning for p in it["roots"]}
            for path, state in lost:
                v = g.vertex_by_path(path)
                if v is None or path in draining:
                    continue
                sub = [u for u in g.subtree(v, dom) if g.v_rank[u] >= 0]
                self.engine.set_status(path, "down")
                holders = self.engine.holders(sub)
                ev: dict[str, Any] = {"path": path, "state": state, "at": time.time(), "jobs": {}}
                freed: list[int] = []
                for jobid, held in holders.items():
                    rec = self.jobs.get(jobid)
                    if rec is not None and rec.kind == "child":
                        self.lease_down.setdefault(jobid, {})[path] = (state, policy)
                        ev["jobs"][str(jobid)] = f"told child {rec.name or '?'} (its lease)"
                    elif policy == "fail":
                        vids = self.engine.traverser.job_vertices(jobid)
                        self.engine.cancel(jobid)
                        self._job_ended(jobid)
                        freed.extend(vids)
                        ev["jobs"][str(jobid)] = "failed (job ended)"
                    else:
                        if release_exact(self.engine, jobid, list(held)):
                            self.jobs.pop(jobid, None)
                            self._job_ended(jobid)
                        freed.extend(held)
                        ev["jobs"][str(jobid)] = "shrunk (node taken from the job)"
                if freed or not holders:
                    self._hand_back(freed or sub, None)
                self.counters["node_down"] += 1
                self.node_events.append(ev)
                del self.node_events[:-256]
                self.log.warning(
                    "node %s: its instance is %s; %s",
                    path,
                    state,
                    "; ".join(f"job {j} {a}" for j, a in ev["jobs"].items()) or "no job held it",
                )
                events.append(ev)
            if events:
                self._persist()
        return events

    def lease_down_for(self, jobid: int) -> list[tuple[str, str, str]]:
        """(path, cloud state, policy) of the dead nodes child lease ``jobid`` still holds.

        Paths the lease no longer holds (given back, or gone) are forgotten
        here.  Called with every heartbeat of the lease; takes no lock (a
        read of one vertex's holders per dead node).  O(dead nodes).
        """
        told = self.lease_down.get(jobid)
        if not told:
            return []
        g = self.engine.graph
        out = []
        for path, (state, policy) in list(told.items()):
            v = g.vertex_by_path(path)
            if v is None or jobid not in self.engine.holders([v]):
                told.pop(path, None)
                continue
            out.append((path, state, policy))
        if not told:
            self.lease_down.pop(jobid, None)
        return out

    def parent_says_down(self, down: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
        """The parent's word that nodes of this instance's lease died: each as :meth:`nodes_down` with its policy."""
        events: list[dict[str, Any]] = []
        by_policy: dict[str, list[tuple[str, str]]] = {}
        for path, state, policy in down:
            if path in self.told_down:  # handled already; the parent repeats it until the node is back
                continue
            self.told_down.add(path)
            del_old = len(self.told_down) - 4096
            if del_old > 0:
                for old in list(self.told_down)[:del_old]:
                    self.told_down.discard(old)
            by_policy.setdefault(policy if policy in ("shrink", "fail") else "shrink", []).append((path, state))
        for policy, lost in by_policy.items():
            events += self.nodes_down(lost, policy=policy)
        return events
