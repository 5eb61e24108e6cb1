"""``update allocate jgf`` under another dominant subsystem than the file's edges (Fluxion's t3023 case).

Fluxion prints an update by walking the dominant subsystem's edges that the
JGF file marks.  A file written under ``-S CA`` holds containment edges
only, so a session started with ``-S PA`` allocates what it lists and
prints no R for it; the same file under ``-S CA`` prints the allocation.
"""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.readers import load_graph
from tests.conftest import RESOURCE, need
from tests.fluxlite.helpers import jobspec, snapshot

POWER = RESOURCE / "grugs" / "power.graphml"
NODE_CORE = jobspec(
    "  - type: slot\n    count: 2\n    label: default\n    with:\n      - type: node\n        count: 1\n"
    "        with:\n          - type: socket\n            count: 1\n            with:\n"
    "              - type: core\n                count: 1\n"
)


@pytest.fixture(scope="module")
def ca_jgf() -> str:
    need(POWER)
    eng = Engine(load_graph(POWER), policy="high")
    res = eng.match(NODE_CORE, fmt="jgf")
    assert res.ok and '"subsystem"' not in res.text
    return res.text


@pytest.mark.parametrize(("subsystems", "prints"), [(("power",), False), (("containment",), True)])
def test_update_prints_only_what_the_dominant_walk_reaches(
    ca_jgf: str, subsystems: tuple[str, ...], prints: bool
) -> None:
    eng = Engine(load_graph(POWER), policy="high", subsystems=subsystems)
    before = snapshot(eng)
    res = eng.update_allocate(7, ca_jgf, format="jgf", at=0, duration=3600, fmt="simple")
    assert res.ok and eng.jobs == {7: "allocated"}
    assert bool(res.text) is prints
    if prints:
        assert "node71[1:x]" in res.text or "core" in res.text
    # printed or not, the resources are held
    assert snapshot(eng) != before
    eng.cancel(7)
    assert snapshot(eng) == before


def test_update_reads_the_document_once(ca_jgf: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The vertices and the dominant-edge check come from one JSON parse of the file."""
    import orjson

    calls: list[int] = []
    real = orjson.loads

    def counting(data: object) -> object:
        calls.append(len(data))  # type: ignore[arg-type]
        return real(data)  # type: ignore[arg-type]

    eng = Engine(load_graph(POWER), policy="high", subsystems=("power",))
    monkeypatch.setattr(orjson, "loads", counting)
    res = eng.update_allocate(7, ca_jgf, format="jgf", at=0, duration=3600, fmt="simple")
    assert res.ok and res.text == ""
    assert calls == [len(ca_jgf)]


def test_legacy_edge_form_counts_as_containment() -> None:
    """Fluxion's update reader reads only metadata.subsystem (default containment): an edge in the
    older ``metadata.name = {power: ...}`` form is a containment edge for the dominant-walk check."""
    from fluxlite.readers.jgf import read_update_vertices

    doc = (
        '{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}}],'
        ' "edges": [{"source": "0", "target": "1", "metadata": {"name": {"power": "supplies_to"}}}]}}'
    )
    nodes, has = read_update_vertices(doc, "containment")
    assert [n.type for n in nodes] == ["cluster"] and has is True
    assert read_update_vertices(doc, "power")[1] is False
