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
  (:func:`owner_of`; the instance does the rest).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.readers import read_vertices
from hierarchy._release import vertices_held

__all__ = [
    "WHOLE",
    "draining_view",
    "due",
    "narrow_to_whole",
    "note_failure",
    "owner_of",
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
        held = vertices_held(eng, jobid, [u for u in g.subtree(r, eng.dom) if g.v_rank[u] >= 0])
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


def owner_of(eng: Engine, v: int) -> int | None:
    """The job holding ``v`` (None if free)."""
    held = eng.holders([v])
    return next(iter(held), None)
