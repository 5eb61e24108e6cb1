"""jgf_shorthand and rv1_shorthand say when they left matched vertices out (Fluxion's ``"writer"`` key).

Derived from flux-sched's jgf_shorthand writer (match_writers.cpp: a vertex
emitted with ``excl_parent`` clears ``m_complete``; ``emit_json`` then adds
``"writer": get_uri()`` = ``"fluxion:jgf_shorthand"``) and its test t3040:
every node of the graph with 8 cores and 2 GPUs (here below one socket); under ``lonodex`` (whole
nodes) the cores and GPUs are left out and the key is there, under ``low``
they are written and it is not.
"""

from __future__ import annotations

import json

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec

T3040 = jobspec(  # t3040.yaml with the socket level of this graph
    "  - type: node\n    count: 3\n    with:\n      - type: socket\n        count: 1\n        with:\n"
    "          - type: slot\n            count: 1\n            label: default\n            with:\n"
    "              - type: core\n                count: 8\n              - type: gpu\n                count: 2\n"
)


def _engine(policy: str) -> Engine:
    return Engine(generate_graph(nodes=3, sockets=1, cores=8, gpus=2), policy=policy)


@pytest.mark.parametrize(("policy", "complete"), [("lonodex", False), ("low", True)])
def test_jgf_shorthand_writer_key(policy: str, complete: bool) -> None:
    eng = _engine(policy)
    r = eng.match(T3040, fmt="jgf_shorthand")
    doc = json.loads(r.text)
    types = {n["metadata"]["type"] for n in doc["graph"]["nodes"]}
    if complete:
        assert "writer" not in doc and {"core", "gpu"} <= types
        assert list(doc) == ["graph"]
    else:
        assert list(doc) == ["graph", "writer"] and doc["writer"] == "fluxion:jgf_shorthand"
        assert not types & {"core", "gpu"}
    # the next match starts complete again (the flag is per match)
    eng2 = _engine("low")
    assert "writer" not in json.loads(eng2.match(T3040, fmt="jgf_shorthand").text)


@pytest.mark.parametrize(("policy", "complete"), [("lonodex", False), ("low", True)])
def test_rv1_shorthand_scheduling_writer_key(policy: str, complete: bool) -> None:
    r = _engine(policy).match(T3040, fmt="rv1_shorthand")
    sched = json.loads(r.text)["scheduling"]
    assert ("writer" in sched) is (not complete)
    if not complete:
        assert sched["writer"] == "fluxion:jgf_shorthand"


def test_plain_jgf_never_has_the_key() -> None:
    r = _engine("lonodex").match(T3040, fmt="jgf")
    assert "writer" not in json.loads(r.text)
