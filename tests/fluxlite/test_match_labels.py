"""Jobspec labels reach the JGF output as ``ephemeral`` vertex data (Fluxion's dom_dfv + jgf writer)."""

from __future__ import annotations

import json
from collections import Counter

from fluxlite.api import Engine
from fluxlite.match.labels import labels_by_type
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec

LABELED = jobspec(
    "  - type: node\n    count: 2\n    label: alpha\n    with:\n"
    "      - type: socket\n        count: 1\n        label: bravo\n        with:\n"
    "          - type: slot\n            count: 3\n            label: default\n            with:\n"
    "              - type: core\n                count: 1\n                label: charlie\n"
)
# socket requested twice with two labels, core with and without one: no single label is right
CONFLICT = jobspec(
    "  - type: node\n    count: 1\n    label: n\n    with:\n"
    "      - type: socket\n        count: 1\n        label: left\n        with:\n"
    "          - type: core\n            count: 1\n            label: c\n"
    "      - type: gpu\n        count: 1\n        with:\n"
    "          - type: socket\n            count: 1\n            label: right\n            with:\n"
    "              - type: slot\n                count: 1\n                label: default\n"
    "                with:\n                  - type: core\n                    count: 1\n"
)


def labels(text: str) -> Counter:
    doc = json.loads(text)
    return Counter(
        (n["metadata"]["type"], n["metadata"].get("ephemeral", {}).get("label"))
        for n in doc["graph"]["nodes"]
    )


def test_each_matched_vertex_carries_the_label_of_its_request() -> None:
    eng = Engine(generate_graph(nodes=4, sockets=2, cores=4), policy="low")
    res = eng.match(LABELED, fmt="jgf")
    assert res.ok
    assert labels(res.text) == {
        ("cluster", None): 1,
        ("node", "alpha"): 2,
        ("socket", "bravo"): 2,
        ("core", "charlie"): 6,
    }
    # the next match starts clean: an unlabeled request prints no labels
    res2 = eng.match(
        jobspec(
            "  - type: slot\n    count: 1\n    label: default\n    with:\n"
            "      - type: core\n        count: 1\n"
        ),
        fmt="jgf",
    )
    assert res2.ok and all(lab is None for _t, lab in labels(res2.text))


def test_labels_in_rv1_and_not_in_simple() -> None:
    eng = Engine(generate_graph(nodes=2, sockets=2, cores=4), policy="high")
    rv1 = json.loads(eng.match(LABELED, fmt="rv1").text)
    got = Counter(
        n["metadata"].get("ephemeral", {}).get("label") for n in rv1["scheduling"]["graph"]["nodes"]
    )
    assert got == {None: 1, "alpha": 2, "bravo": 2, "charlie": 6}
    assert "charlie" not in eng.match(LABELED, fmt="simple").text


def test_a_type_with_two_labels_gets_none() -> None:
    assert labels_by_type(CONFLICT.resources) == {"node": "n"}
    assert labels_by_type(LABELED.resources) == {"node": "alpha", "socket": "bravo", "core": "charlie"}
