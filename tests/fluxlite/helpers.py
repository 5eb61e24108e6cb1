"""Helpers shared by the engine tests: small graphs, jobspecs, state snapshots and recounts."""

from __future__ import annotations

from typing import Any

from fluxlite import check
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph


def jobspec(resources: str, duration: int = 3600) -> Any:
    """A jobspec from an indented YAML ``resources`` block."""
    text = (
        "version: 1\nresources:\n"
        + resources
        + f"\nattributes:\n  system:\n    duration: {duration}\n"
        + "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
    )
    return parse_jobspec(text)


NODE = jobspec(
    "  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: socket\n            count: 2\n            with:\n"
    "              - type: core\n                count: 4\n"
)
CORE = jobspec(
    "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: core\n        count: 1\n"
)
SOCKET = jobspec(
    "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: socket\n        count: 1\n"
    "        with:\n          - type: core\n            count: 4\n"
)
TWO_NODES = jobspec(
    "  - type: node\n    count: 2\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: socket\n            count: 1\n            with:\n"
    "              - type: core\n                count: 1\n"
)
HUGE = jobspec(
    "  - type: node\n    count: 99\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: socket\n            count: 1\n            with:\n"
    "              - type: core\n                count: 1\n"
)


def small_engine(
    policy: str = "low", nodes: int = 4, racks: int = 0, prune: str = "ALL:core,ALL:node"
) -> Engine:
    """cluster -> [rack ->] node[nodes] -> socket[2] -> core[4]."""
    return Engine(
        generate_graph(racks=racks, nodes=nodes, sockets=2, cores=4), policy=policy, prune_filters=prune
    )


def _copy(col: list[Any]) -> list[Any]:
    return [None if x is None else dict(x) for x in col]


def snapshot(eng: Engine) -> tuple:
    """Everything a failed operation must leave untouched."""
    tr = eng.traverser
    sub = {}
    for ss, col in tr.subplan.items():
        rows = []
        for p in col:
            if p is None:
                rows.append(None)
                continue
            spans = [(sid, tuple(p.span_counts(sid))) for sid in p.span_ids()]
            totals = tuple(p.resource_total_at(i) for i in range(p.resources_len))
            rows.append((tuple(spans), totals))
        sub[ss] = rows
    g = eng.graph
    return (
        _copy(tr.vspans),
        _copy(tr.allocs),
        _copy(tr.resvs),
        _copy(tr.tags),
        _copy(tr.xspans),
        {k: _copy(v) for k, v in tr.job2span.items()},
        sub,
        dict(eng.jobs),
        tr.nodes_up,
        list(g.v_status),
        sorted(g.rx.node_indices()),
        sorted(g.rx.edge_indices()),
        dict(g.by_path),
    )


def recount_errors(eng: Engine, times: list[int]) -> list[str]:
    """Compare every subtree aggregate with a fresh recount from the vertices' own spans."""
    return check.recount_errors(eng, times)


def observable(eng: Engine, times: list[int]) -> tuple:
    """What a user can observe: every job's resources and every aggregate's free units over time.

    Unlike :func:`snapshot` it ignores internal span identifiers, so a grow
    followed by the shrink of the grown part compares equal to the start.
    """
    tr = eng.traverser
    jobs = {j: sorted(eng.job_items(j)) for j in sorted(eng.jobs)}
    aggs = []
    for ss, col in sorted(tr.subplan.items()):
        for u, p in enumerate(col):
            if p is None or not eng.graph.is_live(u):
                continue
            aggs.append(
                (ss, u, tuple(p.avail_resources_at(t, i) for t in times for i in range(p.resources_len)))
            )
    g = eng.graph
    status = {v: g.v_status[v] for v in g.vertices()}
    return jobs, dict(eng.jobs), aggs, status, tr.nodes_up


def one_by_one_first(pm: Any, on_or_after: int, duration: int, counts: Any) -> int | None:
    """``PlannerMulti.avail_time_first`` as Fluxion runs it: every index-0 candidate tested in turn."""
    ps = pm._planners
    if len(ps) < 1 or len(counts) != len(ps):
        pm.errno = "EINVAL"
        return None
    pm._iter_on_or_after, pm._iter_duration = on_or_after, duration
    for typ, c in zip(pm._types, counts):
        pm._iter_counts[typ] = c
    return _one_by_one(pm, ps[0].avail_time_first(on_or_after, duration, counts[0]), duration, list(counts))


def one_by_one_next(pm: Any) -> int | None:
    """``PlannerMulti.avail_time_next`` as Fluxion runs it (see :func:`one_by_one_first`)."""
    t = pm._planners[0].avail_time_next()
    if t is None:
        pm.errno = pm._planners[0].errno
        return None
    return _one_by_one(pm, t, pm._iter_duration, [pm._iter_counts.get(typ) for typ in pm._types])


def _one_by_one(pm: Any, t: int | None, duration: int, counts: list[Any]) -> int | None:
    ps = pm._planners
    if len(ps) == 1:
        if t is None:
            pm.errno = ps[0].errno
        return t
    while t is not None:
        for i in range(1, len(ps)):
            if counts[i] is None:
                pm.errno = "EINVAL"
                return None
            if not ps[i].avail_during(t, duration, counts[i]):
                break
        else:
            return t
        t = ps[0].avail_time_next()
    pm.errno = ps[0].errno
    return None
