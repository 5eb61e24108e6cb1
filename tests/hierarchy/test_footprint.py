"""A match's footprint for the per-user limits: the columnar reading gives the per-node reader's answer."""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.errors import FluxliteError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import read_vertices
from fluxlite.readers.generate import generate_graph
from hierarchy.instance.access import _footprint_of


def _reference(doc: bytes | str, dom: str) -> tuple[set[str], int]:
    nodes: set[str] = set()
    cores = 0
    for node in read_vertices(doc, source="grow"):
        if node.type == "core":
            cores += 1
        elif node.type == "node":
            nodes.add(node.paths.get(dom) or next(iter(node.paths.values()), ""))
    return nodes, cores


def _docs() -> list[str]:
    eng = Engine(generate_graph(nodes=6, sockets=2, cores=4, memory=2), policy="first")
    out = []
    for res in (
        "[{type: node, count: 2, with: [{type: slot, count: 1, label: s, with: [{type: socket, count: 2, "
        "with: [{type: core, count: 3}]}]}]}]",
        "[{type: slot, count: 1, label: s, with: [{type: socket, count: 1, with: [{type: core, count: 2}]}]}]",
        "[{type: slot, count: 2, label: s, with: [{type: core, count: 1}, {type: memory, count: 1}]}]",
    ):
        js = parse_jobspec(
            f"version: 1\nresources: {res}\nattributes: {{system: {{duration: 3600}}}}\n"
            "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
        )
        out.append(eng.allocate(js, fmt="jgf").text)
    return out


def test_the_footprint_of_match_documents_is_the_per_node_readers() -> None:
    docs = _docs()
    for doc in docs:
        got = _footprint_of(doc, "containment", "grow")
        assert got == _reference(doc, "containment")
        assert got == _reference(doc.encode(), "containment") == _footprint_of(doc.encode(), "containment", "grow")
    assert any(n for n, _ in map(lambda d: _footprint_of(d, "containment", "grow"), docs))
    # another subsystem named: the node's first path, as before
    assert _footprint_of(docs[0], "power", "grow") == _reference(docs[0], "power")


def test_documents_off_the_columnar_path_give_the_same_answer_or_error() -> None:
    doc = _docs()[0]
    # a second subsystem on one node: the per-node reader answers
    two = doc.replace('"paths": {"containment": "', '"paths": {"power": "/p0", "containment": "', 1)
    assert two != doc
    assert _footprint_of(two, "containment", "grow") == _reference(two, "containment")
    assert _footprint_of(two, "power", "grow") == _reference(two, "power")
    # a malformed one: the per-node reader's error
    bad = doc.replace('"type": "core"', '"type": 7', 1)
    with pytest.raises(FluxliteError) as want:
        _reference(bad, "containment")
    with pytest.raises(FluxliteError) as got:
        _footprint_of(bad, "containment", "grow")
    assert str(got.value) == str(want.value)
