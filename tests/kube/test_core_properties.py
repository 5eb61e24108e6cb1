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
