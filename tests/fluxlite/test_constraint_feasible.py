"""Property constraints (RFC 31) with every placing operation: a node that matches and is free is found.

Regression: the node pre-check used the end of the graph's time window for
every operation but a plain allocate, so ``allocate_with_satisfiability``
(``Engine.allocate``) and ``allocate_orelse_reserve`` refused any
constrained request as unsatisfiable.
"""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.errors import BusyError, UnsatisfiableError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph


def _js(prop: str) -> object:
    return parse_jobspec(
        "version: 1\nresources:\n  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n"
        "        label: default\n        with:\n          - type: socket\n            count: 1\n"
        "            with:\n              - type: core\n                count: 2\n"
        f'attributes:\n  system:\n    duration: 3600\n    constraints:\n      properties: ["{prop}"]\n'
        "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
    )


def _engine() -> Engine:
    eng = Engine(generate_graph(nodes=3, sockets=1, cores=2))
    g = eng.graph
    v = g.vertex_by_path("/cluster0/node1")
    g.v_props[v] = {"fast": ""}
    return eng


@pytest.mark.parametrize("op", ["allocate", "allocate_with_satisfiability", "allocate_orelse_reserve"])
def test_constrained_request_finds_the_matching_node(op: str) -> None:
    eng = _engine()
    r = eng.match(_js("fast"), op=op)
    assert r.ok and r.at == 0 and "node1" in r.text
    # the one matching node is taken: busy now (allocate), reserved later (orelse_reserve), never ENODEV
    r2 = eng.match(_js("fast"), op=op)
    assert r2.satisfiable
    assert r2.ok == (op == "allocate_orelse_reserve") and (not r2.ok or r2.at == 3600)


def test_api_raises_busy_then_unsatisfiable_for_constraints() -> None:
    eng = _engine()
    eng.allocate(_js("fast"))
    with pytest.raises(BusyError):
        eng.allocate(_js("fast"))
    with pytest.raises(UnsatisfiableError):
        eng.allocate(_js("slow"))
    assert eng.satisfiable(_js("fast")) and not eng.satisfiable(_js("slow"))
