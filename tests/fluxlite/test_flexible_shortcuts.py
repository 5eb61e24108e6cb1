"""The flexible traverser's shortcuts change no result: a differential stateful test.

``-T flexible`` keeps the matcher's exact shortcuts for jobspecs without
slot alternatives and takes the plain walk for or_slot/xor_slot ones.  Two
flexible engines on the same graph -- one as shipped, one with
``traverser.shortcuts = False`` (the plain walk for everything) -- receive
the same random operations, mixing plain jobspecs, or_slot and xor_slot
alternatives and the ``socket[3]`` with two alternatives that disagreed when
the shortcuts were on for every jobspec; every output and the whole state
must stay identical.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from fluxlite.api import Engine
from fluxlite.match.flexible import FlexibleTraverser, has_alternatives
from fluxlite.readers.generate import generate_graph
from tests.fluxlite import test_shortcuts_differential as base
from tests.fluxlite.helpers import jobspec


def _slot(label: str, items: dict[str, int], count: int = 1, kind: str = "slot") -> str:
    p = " " * 6
    lines = [f"{p}- type: {kind}", f"{p}  count: {count}", f"{p}  label: {label}", f"{p}  with:"]
    for t, n in items.items():
        lines += [f"{p}    - type: {t}", f"{p}      count: {n}"]
    return "\n".join(lines)


def _socket(n: int, *slots: str) -> object:
    return jobspec(f"  - type: socket\n    count: {n}\n    with:\n" + "\n".join(slots))


ALTERNATIVES = [
    _socket(1, _slot("small", {"core": 2, "gpu": 1}), _slot("big", {"core": 4})),
    # the case that disagreed with the shortcuts on: socket[3] -> two alternatives
    _socket(3, _slot("a", {"core": 1}), _slot("b", {"core": 2, "gpu": 1})),
    _socket(2, _slot("a", {"core": 3}, count=2), _slot("b", {"core": 1})),
    _socket(
        1,
        _slot("small", {"core": 2, "gpu": 1}, kind="xor_slot"),
        _slot("big", {"core": 4}, kind="xor_slot"),
    ),
]
PLAIN = [_socket(1, _slot("one", {"core": 2})), _socket(3, _slot("c", {"core": 1}))]
REQUESTS = base.REQUESTS + PLAIN + ALTERNATIVES


def test_has_alternatives() -> None:
    assert all(has_alternatives(r.resources) for r in ALTERNATIVES)  # type: ignore[attr-defined]
    assert not any(has_alternatives(r.resources) for r in PLAIN + base.REQUESTS)  # type: ignore[attr-defined]


class FlexibleDifferential(base.Differential):
    @initialize(
        policy=st.sampled_from(["low", "high", "first", "lonode", "hinodex", "locality"]),
        shape=st.sampled_from(sorted(base.SHAPES)),
    )
    def build(self, policy: str, shape: str) -> None:
        racks, nodes = base.SHAPES[shape]
        self.fast, self.plain = (
            Engine(
                generate_graph(racks=racks, nodes=nodes, sockets=2, cores=4, gpus=1),
                policy=policy,
                traverser_policy="flexible",
            )
            for _ in range(2)
        )
        assert isinstance(self.fast.traverser, FlexibleTraverser)
        self.plain.traverser.shortcuts = False
        self.plain.traverser.fresh = False
        self.nodes = sorted(p for p in self.fast.graph.by_path if p.rsplit("/", 1)[-1].startswith("node"))

    @rule(req=st.sampled_from(REQUESTS), op=st.sampled_from(base.OPS), repeat=st.integers(1, 6))
    def match(self, req: object, op: str, repeat: int) -> None:
        super().match(req, op, repeat)

    @rule(
        n=st.integers(1, 3),
        alts=st.lists(
            st.fixed_dictionaries({"core": st.integers(1, 4)}, optional={"gpu": st.integers(1, 2)}),
            min_size=1,
            max_size=3,
        ),
        kind=st.sampled_from(["slot", "xor_slot"]),
        op=st.sampled_from(base.OPS),
    )
    def match_random_alternatives(self, n: int, alts: list[dict[str, int]], kind: str, op: str) -> None:
        req = _socket(n, *(_slot(f"s{i}", items, kind=kind) for i, items in enumerate(alts)))
        super().match(req, op, 1)


FlexibleDifferential.TestCase.settings = settings(
    max_examples=12, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestFlexibleDifferential = FlexibleDifferential.TestCase
