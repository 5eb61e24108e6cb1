"""Random place / gang / release / node churn on the core: aggregates always equal a recount,
and a failed placement changes nothing."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluxlite.check import recount_errors
from fluxlite.errors import BusyError, UnsatisfiableError
from kube import KubeConfig, KubeCore, PodRequest, node_info
from kube.objects import node_object

CFG = KubeConfig()

ops = st.lists(
    st.one_of(
        st.tuples(st.just("place"), st.integers(0, 2), st.integers(1, 5), st.integers(0, 6)),
        st.tuples(st.just("gang"), st.integers(2, 4), st.integers(1, 3), st.integers(0, 3)),
        st.tuples(st.just("release"), st.integers(0, 40), st.just(0), st.just(0)),
        st.tuples(st.just("cordon"), st.integers(0, 2), st.booleans(), st.just(0)),
        st.tuples(st.just("node"), st.integers(3, 5), st.booleans(), st.just(0)),
    ),
    max_size=25,
)


def _state(core: KubeCore) -> dict[str, object]:
    doc = orjson.loads(core.engine.save_state())
    doc.pop("next_jobid")
    return doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_random_churn_keeps_aggregates_exact(steps: list[tuple[str, int, object, int]]) -> None:
    """Whatever happens, every aggregate equals a recount; failures leave the state as it was."""
    core = KubeCore(CFG, [node_info(node_object(f"n{i}", cpu="4", memory="6Gi"), CFG) for i in range(3)])
    n = 0
    for op, a, b, c in steps:
        if op == "place":
            before = _state(core)
            try:
                core.place(f"p{n}", f"g{a}", PodRequest(cores=int(b), memory=c))  # type: ignore[arg-type]
            except (BusyError, UnsatisfiableError):
                assert _state(core) == before
            n += 1
        elif op == "gang":
            before = _state(core)
            keys = [f"p{n + i}" for i in range(a)]
            n += a
            try:
                core.place_gang(keys, f"gang{n}", PodRequest(cores=int(b), memory=c))  # type: ignore[arg-type]
            except (BusyError, UnsatisfiableError):
                assert _state(core) == before and not any(k in core.pods for k in keys)
        elif op == "release":
            pods = sorted(core.pods)
            if pods:
                core.release(pods[a % len(pods)])
        elif op == "cordon":
            name = f"n{a}"
            if name in core.nodes:
                core.update_node(
                    node_info(node_object(name, cpu="4", memory="6Gi", unschedulable=bool(b)), CFG)
                )
        else:
            name = f"n{a}"
            if b:
                core.add_node(node_info(node_object(name, cpu="4", memory="6Gi", zone="zone-b"), CFG))
            else:
                core.remove_node(name)
        assert recount_errors(core.engine) == []
        held = {p.jobid for p in core.pods.values()}
        assert held == set(core.engine.jobs)
    for k in list(core.pods):
        core.release(k)
    assert core.engine.jobs == {} and recount_errors(core.engine) == []


narrow_ops = st.lists(
    st.one_of(
        st.tuples(st.just("place"), st.integers(0, 3), st.integers(1, 5), st.integers(0, 6)),
        st.tuples(st.just("pick"), st.integers(0, 1), st.integers(1, 3), st.integers(0, 3)),
        st.tuples(st.just("release"), st.integers(0, 60), st.just(0), st.just(0)),
        st.tuples(st.just("cordon"), st.integers(0, 11), st.booleans(), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(narrow_ops)
def test_narrowed_matches_place_as_full_matches(steps: list[tuple[str, int, object, int]]) -> None:
    """A match narrowed to the first fitting nodes (KubeCore.candidates) puts every pod where the
    full match puts it, through placements, releases (the candidate cursor moves back), cordons
    and node selectors, and leaves the same engine state."""
    nodes = [
        node_object(f"n{i:02d}", cpu="4", memory="6Gi", zone=f"z{i % 3}", labels={"disk": "ssd" if i % 4 else "hdd"})
        for i in range(12)
    ]
    cores = [KubeCore(CFG, [node_info(n, CFG) for n in nodes]) for _ in range(2)]
    cores[1].narrow = False
    for n, (op, a, b, c) in enumerate(steps):
        got = []
        for core in cores:
            if op in ("place", "pick"):
                sel = {"properties": ["disk=hdd" if a else "disk=ssd"]} if op == "pick" else None
                try:
                    got.append(core.place(f"p{n}", f"g{a}", PodRequest(cores=int(b), memory=c), sel).node)  # type: ignore[arg-type]
                except (BusyError, UnsatisfiableError) as exc:
                    got.append(type(exc).__name__)
            elif op == "release":
                pods = sorted(core.pods)
                got.append(core.release(pods[a % len(pods)]) if pods else None)
            else:
                info = node_info(nodes[a], CFG)
                got.append(core.update_node(type(info)(**{**info.__dict__, "up": bool(b)})))
        assert got[0] == got[1], (op, got)
        assert _state(cores[0]) == _state(cores[1])
    assert recount_errors(cores[0].engine) == []
