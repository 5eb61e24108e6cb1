"""The flexible traverser's shortcuts change no result: a differential stateful test.

``-T flexible`` keeps the matcher's exact shortcuts (skip index, best-first
with early stop, the pass-through root's memo and root cache, the root's
aggregate check) for every jobspec, with or without or_slot/xor_slot
alternatives.  Two flexible engines on the same graph -- one as shipped, one
with ``traverser.shortcuts = False`` (the plain walk) -- receive the same
random operations (allocate, reserve, satisfiability, cancel, partial
release, status changes), mixing plain jobspecs, or_slot and xor_slot
alternatives at every level, and an xor_slot jobspec followed by one of its
variants as a plain jobspec; every output and the whole state must stay
identical.  Three causes of disagreement were found this way (with an
ad-hoc fuzzer of longer sessions) and are pinned by the regression tests
below: the root's aggregate check read Fluxion's order-dependent priming of
alternatives as a lower bound; the memo of the root's children was keyed by
the request's structure without its pruning counts (an xor_slot variant
keeps the whole jobspec's); and with ``first`` the skip index passed over
children that the plain walk visits only to refuse a request with a slot
sibling, once per child, so the error text differed (simple traverser too).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from fluxlite.api import Engine
from fluxlite.match.flexible import FlexibleTraverser, has_alternatives
from fluxlite.readers.generate import generate_graph
from tests.fluxlite import test_shortcuts_differential as base
from tests.fluxlite.helpers import jobspec


def _slot(label: str, items: dict[str, int], count: int = 1, kind: str = "slot", indent: int = 6) -> str:
    p = " " * indent
    lines = [f"{p}- type: {kind}", f"{p}  count: {count}", f"{p}  label: {label}", f"{p}  with:"]
    for t, n in items.items():
        lines += [f"{p}    - type: {t}", f"{p}      count: {n}"]
    return "\n".join(lines)


def _socket(n: int, *slots: str) -> object:
    return jobspec(f"  - type: socket\n    count: {n}\n    with:\n" + "\n".join(slots))


def _top(*slots: str) -> object:
    """Alternatives at the top level (no resource above them): a pass-through root."""
    return jobspec("\n".join(slots))


def _nodes(n: int, *slots: str, exclusive: bool = False) -> object:
    x = "    exclusive: true\n" if exclusive else ""
    return jobspec(f"  - type: node\n    count: {n}\n{x}    with:\n" + "\n".join(slots))


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
ALTERNATIVES += [
    _top(_slot("a", {"core": 2}, indent=2), _slot("b", {"core": 1, "gpu": 1}, indent=2)),
    _top(
        _slot("a", {"core": 3}, kind="xor_slot", indent=2), _slot("b", {"gpu": 1}, kind="xor_slot", indent=2)
    ),
    _nodes(2, _slot("a", {"socket": 2}), _slot("b", {"socket": 1})),
    _nodes(
        1, _slot("a", {"core": 1}, kind="xor_slot"), _slot("b", {"gpu": 1}, kind="xor_slot"), exclusive=True
    ),
]
PLAIN = [_socket(1, _slot("one", {"core": 2})), _socket(3, _slot("c", {"core": 1}))]
REQUESTS = base.REQUESTS + PLAIN + ALTERNATIVES


def test_has_alternatives() -> None:
    assert all(has_alternatives(r.resources) for r in ALTERNATIVES)  # type: ignore[attr-defined]
    assert not any(has_alternatives(r.resources) for r in PLAIN + base.REQUESTS)  # type: ignore[attr-defined]


def _pair(engine_kw: dict[str, object]) -> tuple[Engine, Engine]:
    """Two flexible engines on equal graphs: shortcuts on (as shipped) and off (the plain walk)."""
    graph_kw = engine_kw.pop("graph")
    fast, plain = (
        Engine(generate_graph(**graph_kw), traverser_policy="flexible", **engine_kw)  # type: ignore[arg-type]
        for _ in range(2)
    )
    assert isinstance(fast.traverser, FlexibleTraverser)
    plain.traverser.shortcuts = False
    plain.traverser.fresh = False  # no fresh-subtree templates either: the plain walk
    return fast, plain


class FlexibleDifferential(base.Differential):
    @initialize(
        policy=st.sampled_from(["low", "high", "first", "lonode", "hinodex", "locality"]),
        shape=st.sampled_from([*sorted(base.SHAPES), "small", "small"]),
        gpus=st.integers(1, 2),
        prune=st.sampled_from(["ALL:core,ALL:node", "ALL:core,ALL:node,ALL:gpu"]),
    )
    def build(self, policy: str, shape: str, gpus: int, prune: str) -> None:
        # small: few enough GPUs that random sessions use them all up
        racks, nodes = base.SHAPES[shape] if shape != "small" else (0, 4)
        graph = {"racks": racks, "nodes": nodes, "sockets": 2, "cores": 4, "gpus": gpus}
        self.fast, self.plain = _pair({"graph": graph, "policy": policy, "prune_filters": prune})
        self.nodes = sorted(p for p in self.fast.graph.by_path if p.rsplit("/", 1)[-1].startswith("node"))
        #: plain jobspecs made of one alternative of an xor_slot jobspec matched before
        self.variants: list[object] = []

    @rule(req=st.sampled_from(REQUESTS), op=st.sampled_from(base.OPS), repeat=st.integers(1, 6))
    def match(self, req: object, op: str, repeat: int) -> None:
        super().match(req, op, repeat)

    @rule(
        level=st.sampled_from(["socket", "top"]),
        n=st.integers(1, 3),
        alts=st.lists(
            st.fixed_dictionaries({}, optional={"core": st.integers(1, 4), "gpu": st.integers(1, 2)}).filter(
                bool
            ),
            min_size=1,
            max_size=3,
        ),
        kind=st.sampled_from(["slot", "xor_slot"]),
        op=st.sampled_from(base.OPS),
        keep=st.integers(0, 2),
    )
    def match_random_alternatives(
        self, level: str, n: int, alts: list[dict[str, int]], kind: str, op: str, keep: int
    ) -> None:
        def build(chosen: list[dict[str, int]], kind: str) -> object:
            if level == "top":
                return _top(*(_slot(f"s{i}", items, kind=kind, indent=2) for i, items in enumerate(chosen)))
            return _socket(n, *(_slot(f"s{i}", items, kind=kind) for i, items in enumerate(chosen)))

        super().match(build(alts, kind), op, 1)
        if kind == "xor_slot":
            # one alternative alone, as a plain slot: same structure as that variant
            self.variants.append(build([alts[keep % len(alts)]], "slot"))

    @rule(n=st.integers(1, 16), op=st.sampled_from(["allocate", "allocate_orelse_reserve"]))
    def take_gpus(self, n: int, op: str) -> None:
        # GPUs are the type that only some alternatives ask for: run them out
        super().match(_top(_slot("g", {"gpu": 1}, count=n, indent=2)), op, 1)

    @precondition(lambda self: bool(self.variants))
    @rule(op=st.sampled_from(base.OPS), repeat=st.integers(1, 3))
    def match_variant(self, op: str, repeat: int) -> None:
        super().match(self.variants.pop(), op, repeat)


FlexibleDifferential.TestCase.settings = settings(
    max_examples=20, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestFlexibleDifferential = FlexibleDifferential.TestCase


def _same(fast: Engine, plain: Engine, req: object, op: str = "allocate") -> object:
    a, b = fast.match(req, op=op), plain.match(req, op=op)
    assert (a.ok, a.at, a.errno, a.text, a.error) == (b.ok, b.at, b.errno, b.text, b.error)
    assert base.snapshot(fast) == base.snapshot(plain)
    return a


def test_alternatives_take_the_shortcuts() -> None:
    """The shortcuts stay on for a jobspec with alternatives: the root's children are memoized."""
    fast, plain = _pair({"graph": {"nodes": 8, "sockets": 2, "cores": 4, "gpus": 1}, "policy": "low"})
    req = ALTERNATIVES[1]
    assert has_alternatives(req.resources)  # type: ignore[attr-defined]
    _same(fast, plain, req)
    assert fast.traverser.shortcuts and fast.traverser._memo  # pass-through root, children memoized
    assert not plain.traverser._memo


def test_root_check_reads_a_true_lower_bound_of_alternatives() -> None:
    """socket[3] -> {core[1]} | {core[2], gpu[1]}: no free GPU left, the first alternative still fits.

    Fluxion's priming folds the alternatives by a running minimum, so the
    GPUs only the second one asks for stay in the root's counts (3); the
    root's aggregate check must not refuse on them.
    """
    fast, plain = _pair({"graph": {"nodes": 4, "sockets": 2, "cores": 4, "gpus": 1}, "policy": "low"})
    gpu = _top(_slot("g", {"gpu": 1}, indent=2))
    for _ in range(7):
        assert _same(fast, plain, gpu).ok  # type: ignore[attr-defined]
    tr = fast.traverser
    req = ALTERNATIVES[1]
    primed: dict[str, int] = {}
    tr.prime_jobspec(req.resources, primed, {})  # type: ignore[attr-defined]
    assert primed == {"core": 3, "gpu": 3}  # as Fluxion's dfu_flexible primes it
    assert tr.lower_bound(req.resources) == {"core": 3}  # type: ignore[attr-defined]
    got = _same(fast, plain, req)
    assert got.ok  # type: ignore[attr-defined]
    assert "gpu" not in got.text  # type: ignore[attr-defined]


def test_lower_bound_is_symmetric_in_the_alternatives() -> None:
    fast, _plain = _pair(
        {
            "graph": {"nodes": 2, "sockets": 2, "cores": 4, "gpus": 1},
            "policy": "low",
            "prune_filters": "ALL:core,ALL:gpu",
        }
    )
    tr = fast.traverser
    a = _socket(2, _slot("a", {"core": 1}), _slot("b", {"core": 2, "gpu": 1}))
    b = _socket(2, _slot("b", {"core": 2, "gpu": 1}), _slot("a", {"core": 1}))
    assert tr.lower_bound(a.resources) == tr.lower_bound(b.resources) == {"core": 2}  # type: ignore[attr-defined]
    # without alternatives it is the usual accumulation
    c = _socket(2, _slot("b", {"core": 2, "gpu": 1}, count=2))
    assert tr.lower_bound(c.resources) == {"core": 8, "gpu": 4}  # type: ignore[attr-defined]


def test_memo_keys_include_the_pruning_counts_of_xor_variants() -> None:
    """An xor_slot variant is primed with the whole jobspec's counts; a plain jobspec of its shape is not.

    With GPUs tracked per socket, ``socket -> {core} ^ {core, gpu}`` primes
    the socket with one GPU, so its first variant skips sockets without a
    free GPU; the plain ``socket -> {core}`` must not reuse those memoized
    evaluations.
    """
    fast, plain = _pair(
        {
            "graph": {"nodes": 8, "sockets": 2, "cores": 4, "gpus": 1},
            "policy": "low",
            "prune_filters": "ALL:core,ALL:node,ALL:gpu",
        }
    )
    gpu = _top(_slot("g", {"gpu": 1}, indent=2))
    xor = _socket(
        1, _slot("s0", {"core": 1}, kind="xor_slot"), _slot("s1", {"core": 1, "gpu": 1}, kind="xor_slot")
    )
    alone = _socket(1, _slot("s0", {"core": 1}))
    for req in (gpu, gpu, xor):
        assert _same(fast, plain, req).ok  # type: ignore[attr-defined]
    got = _same(fast, plain, alone)
    assert "node0" in got.text  # type: ignore[attr-defined]  # low: the first node, whose GPU is taken


@pytest.mark.parametrize("traverser", ["simple", "flexible"])
def test_skip_index_keeps_the_sibling_refusals_of_the_plain_walk(traverser: str) -> None:
    """``first`` on 70 nodes, most of them taken: a node request beside slot(s) at the top level.

    Every node the walk visits refuses the request ("siblings in jobspec
    request same resource type", once per node); the skip index of the
    dynamic exploration must not pass over full nodes, or the message differs.
    """
    fast, plain = (
        Engine(generate_graph(nodes=70, sockets=2, cores=4), policy="first", traverser_policy=traverser)
        for _ in range(2)
    )
    plain.traverser.shortcuts = False
    plain.traverser.fresh = False
    ten = _nodes(10, _slot("x", {"socket": 2}), exclusive=True)
    for _ in range(6):
        assert _same(fast, plain, ten).ok  # type: ignore[attr-defined]
    slots = [_slot("a", {"core": 1}, indent=2)]
    if traverser == "flexible":
        slots.append(_slot("b", {"core": 2}, indent=2))
    req = jobspec(
        "  - type: node\n    count: 1\n    with:\n      - type: core\n        count: 1\n" + "\n".join(slots)
    )
    for op in ("allocate", "allocate_with_satisfiability"):
        got = _same(fast, plain, req, op)
        assert not got.ok and got.error.count("siblings in jobspec request same resource type") >= 70  # type: ignore[attr-defined]
