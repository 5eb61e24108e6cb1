"""Siblings of one type: the shortcuts refuse exactly what the plain walk refuses (issue 6, §1).

Fluxion's ``dfu_impl_t::match`` refuses a vertex visited with a request
list holding two resources of its type (or a slot beside a resource that
matches it): "siblings in jobspec request same resource type".  The
best-first shortcut evaluates leaf children inline, without that test, so
it must hand such requests to the plain walk.  Random jobspecs, with
repeated sibling types drawn on purpose, run on two engines over the same
graph -- one with the shortcuts, one without -- and must give the same
answer, the same chosen vertices and the same state, with every policy.
A jobspec with two siblings of one (non-slot) type at any level can never
match, so it must also be refused by both.
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import snapshot
from tests.fluxlite.test_query_hwloc import one_numa_v1, power9_v1

POLICIES = ["first", "low", "high", "lonode", "hinode", "locality", "firstnodex", "lonodex", "variation"]
BELOW = {"node": ["socket", "gpu"], "socket": ["core", "core", "gpu"], "core": [], "gpu": []}


def _graph(kind: str) -> Any:
    if kind == "power9":  # hwloc: GPUs under the sockets
        return load_graph(power9_v1(), format="hwloc", allowlist="node,socket,core,gpu")
    if kind == "quartz":  # hwloc: 2 sockets x 4 cores
        return load_graph(one_numa_v1(), format="hwloc", allowlist="node,socket,core")
    # 70 nodes: wide enough for the skip index of the best-first walk
    return generate_graph(nodes=70, sockets=2, cores=4, gpus=1)


@st.composite
def requests(draw: st.DrawFn, t: str, depth: int, slotted: bool) -> list[dict[str, Any]]:
    """A list of sibling requests below a ``t`` request; types may repeat on purpose."""
    kinds = BELOW[t]
    if not kinds or depth > 3:
        return []
    n = draw(st.integers(1, 2))
    out = []
    for _ in range(n):
        kt = draw(st.sampled_from(kinds))
        r: dict[str, Any] = {"type": kt, "count": draw(st.integers(1, 2))}
        kids = draw(requests(kt, depth + 1, True))
        if kids:
            r["with"] = kids
        out.append(r)
    if not slotted:
        out = [{"type": "slot", "count": 1, "label": "default", "with": out}]
    return out


@st.composite
def jobspecs(draw: st.DrawFn) -> dict[str, Any]:
    top = draw(st.sampled_from(["node", "socket"]))
    slot_here = draw(st.booleans())
    r: dict[str, Any] = {"type": top, "count": draw(st.integers(1, 2))}
    kids = draw(requests(top, 1, slot_here))
    if not kids:
        kids = [{"type": "slot", "count": 1, "label": "default", "with": [{"type": "core", "count": 1}]}]
    r["with"] = kids
    resources = [{"type": "slot", "count": 1, "label": "default", "with": [r]}] if slot_here else [r]
    return {
        "version": 1,
        "resources": resources,
        "attributes": {"system": {"duration": 3600}},
        "tasks": [{"command": ["app"], "slot": "default", "count": {"per_slot": 1}}],
    }


def repeated_type(resources: list[dict[str, Any]]) -> bool:
    """Does some level list two non-slot siblings of one type?"""
    types = [r["type"] for r in resources if r["type"] != "slot"]
    if len(set(types)) != len(types):
        return True
    return any(repeated_type(r.get("with", [])) for r in resources)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["power9", "quartz", "wide"]),
    policy=st.sampled_from(POLICIES),
    specs=st.lists(jobspecs(), min_size=1, max_size=4),
    ops=st.lists(st.sampled_from(["allocate", "allocate_orelse_reserve", "satisfiability"]), min_size=4),
)
def test_shortcuts_agree_with_the_plain_walk_on_siblings(
    kind: str, policy: str, specs: list[dict[str, Any]], ops: list[str]
) -> None:
    fast = Engine(_graph(kind), policy=policy)
    plain = Engine(_graph(kind), policy=policy)
    plain.traverser.shortcuts = False
    plain.traverser.fresh = False
    for spec, op in zip(specs, ops):
        js = parse_jobspec(yaml.safe_dump(spec))
        a = fast.match(js, op=op)
        b = plain.match(js, op=op)
        assert (a.ok, a.at, a.text) == (b.ok, b.at, b.text)
        if repeated_type(spec["resources"]):
            assert not a.ok, yaml.safe_dump(spec)
        assert snapshot(fast) == snapshot(plain)
        assert fast.jobs == plain.jobs


def test_the_generator_draws_repeated_siblings() -> None:
    """The strategy is worth running: it draws both kinds of jobspec."""
    seen = set()

    @settings(max_examples=60, deadline=None, database=None)
    @given(jobspecs())
    def draw(spec: dict[str, Any]) -> None:
        seen.add(repeated_type(spec["resources"]))

    draw()
    assert seen == {True, False}
