"""``find`` with the shorthand writers, and the shorthand ``"writer"`` key over a session.

Derived from Fluxion's code: ``dfu_impl_t::dom_find_dfv`` emits every found
vertex and edge with ``excl_parent`` false, so a shorthand writer leaves
nothing out in a ``find``; ``jgf_shorthand_match_writers_t`` sets
``m_complete`` false when it leaves something out and never sets it back,
and resource-query keeps one writer for the session (matches and finds), so
every output after the first shorthand match that left something out
carries ``"writer": "fluxion:jgf_shorthand"``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.repl_helpers import Session, write_jobspec

URI = "fluxion:jgf_shorthand"


def graph_of(line: str, fmt: str) -> dict:
    doc = json.loads(line)
    return doc["scheduling"] if fmt == "rv1_shorthand" else doc


def whole_node(tmp: Path) -> Path:
    return write_jobspec(
        tmp / "node.yaml",
        "  - type: node\n    count: 1\n    exclusive: true\n    with:\n"
        "      - type: slot\n        count: 1\n        label: default\n        with:\n"
        "          - type: core\n            count: 2\n",
    )


@pytest.mark.parametrize("fmt", ["jgf_shorthand", "rv1_shorthand"])
def test_find_leaves_nothing_out_and_the_writer_key_sticks(fmt: str, tmp_path: Path) -> None:
    g = generate_graph(nodes=2, sockets=1, cores=2)
    s = Session(Engine(g), match_format=fmt)
    out, _so, err = s.run("find status=up")
    assert err == ""
    doc = graph_of(out.splitlines()[0], fmt)
    assert len(doc["graph"]["nodes"]) == len(g)  # everything, although find emits it all exclusive
    assert "writer" not in doc
    out, _so, err = s.run(f"match allocate {whole_node(tmp_path)}")
    doc = graph_of(out.splitlines()[0], fmt)
    assert doc["writer"] == URI  # the node's insides were left out
    for _ in range(2):  # and from then on, every output of the session says so
        out, _so, err = s.run("find status=up")
        doc = graph_of(out.splitlines()[0], fmt)
        assert len(doc["graph"]["nodes"]) == len(g) and doc["writer"] == URI
