"""``-F rv1_shorthand``: R_lite of rv1, ``scheduling`` JGF of jgf_shorthand (Fluxion's rv1_shorthand writer)."""

from __future__ import annotations

import json

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from fluxlite.writers import known_format
from tests.fluxlite.helpers import jobspec

EXCL_NODE = jobspec(
    "  - type: node\n    count: 1\n    exclusive: true\n    with:\n      - type: slot\n        count: 1\n"
    "        label: default\n        with:\n          - type: core\n            count: 2\n"
)
SHARED = jobspec(
    "  - type: node\n    count: 2\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: socket\n            count: 1\n            with:\n"
    "              - type: core\n                count: 2\n              - type: gpu\n                count: 1\n"
)
CORES = jobspec(
    "  - type: slot\n    count: 3\n    label: default\n    with:\n      - type: core\n        count: 1\n"
)


def _outputs(policy: str, js: object) -> dict[str, str]:
    out = {}
    for fmt in ("rv1", "rv1_shorthand", "jgf_shorthand"):
        eng = Engine(generate_graph(nodes=3, sockets=2, cores=4, gpus=1), policy=policy)
        res = eng.match(js, fmt=fmt)
        assert res.ok
        out[fmt] = res.text
    return out


def test_known() -> None:
    assert known_format("rv1_shorthand")


@pytest.mark.parametrize("policy", ["high", "low", "hinodex", "lonodex", "first"])
@pytest.mark.parametrize("js", [EXCL_NODE, SHARED, CORES], ids=["excl-node", "shared", "cores"])
def test_execution_of_rv1_and_scheduling_of_jgf_shorthand(policy: str, js: object) -> None:
    out = _outputs(policy, js)
    rv1 = json.loads(out["rv1"])
    short = json.loads(out["rv1_shorthand"])
    assert short["execution"] == rv1["execution"]
    assert short["scheduling"] == json.loads(out["jgf_shorthand"])
    # the cores are in R_lite; inside an exclusive node or socket (a slot's) they are not in the JGF
    assert "core" in json.dumps(short["execution"]["R_lite"])
    types = {n["metadata"]["type"] for n in short["scheduling"]["graph"]["nodes"]}
    if policy.endswith("nodex") or js is EXCL_NODE:
        assert types == {"cluster", "node"}
    elif js is SHARED:
        assert types == {"cluster", "node", "socket"}
    else:
        assert types == {"cluster", "node", "socket", "core"}
