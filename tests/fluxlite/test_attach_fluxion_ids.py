"""Attaching to a GRUG-loaded graph keeps the document's uniq ids in what the writers write.

A GRUG load numbers vertices as Fluxion's reader does (``FluxionIds``: the
store keeps its own order, the writers translate), and Fluxion's JGF reader
gives an attached vertex the document's ``uniq_id``.  So a node removed and
attached again from the JGF a writer gave for it must write exactly as before:
the same ids, no id written twice.  (The ids were translated a second time,
so the re-attached vertices wrote ids of other vertices.)  Both attach paths
are checked: the per-node reader and the columnar one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest

from fluxlite import api
from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph


def _nodes(n: int) -> Any:
    return parse_jobspec(
        f"version: 1\nresources: [{{type: node, count: {n}, with: [{{type: slot, count: 1, label: s, "
        "with: [{type: socket, count: 2, with: [{type: core, count: 4}]}]}]}]\n"
        "attributes: {system: {duration: 3600}}\ntasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
    )


def _graph_jgf(eng: Engine) -> tuple[list[bytes], list[bytes]]:
    """The whole graph as the jgf writer writes it: its nodes and its edges, each in a canonical order."""
    doc = orjson.loads(eng.find_text("status=up", fmt="jgf"))
    nodes = sorted(orjson.dumps(n, option=orjson.OPT_SORT_KEYS) for n in doc["graph"]["nodes"])
    edges = sorted(orjson.dumps(e, option=orjson.OPT_SORT_KEYS) for e in doc["graph"]["edges"])
    return nodes, edges


@pytest.mark.parametrize("columnar", [False, True])
@pytest.mark.parametrize("count", [1, 3])
def test_a_node_removed_and_attached_again_writes_as_before(
    columnar: bool, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "ATTACH_COLUMNS_MIN_BYTES", 0 if columnar else 1 << 40)
    eng = Engine(generate_graph(nodes=6, sockets=2, cores=4), policy="first")
    assert eng.graph.fluxion_ids is not None  # a GRUG load: the writers translate ids
    before = _graph_jgf(eng)
    ids = [orjson.loads(n)["id"] for n in before[0]]
    assert len(set(ids)) == len(ids)
    # the nodes' own JGF, as a MatchGrow hands it down, then the nodes removed
    sub = eng.allocate(_nodes(count), fmt="jgf")
    eng.cancel(sub.jobid)
    doc = orjson.loads(sub.text)
    paths = [n["metadata"]["paths"]["containment"] for n in doc["graph"]["nodes"] if n["metadata"]["type"] == "node"]
    for p in paths:
        eng.remove_subgraph(path=p)
    new = eng.attach(sub.text)
    assert len(new) == sum(1 for n in doc["graph"]["nodes"] if n["metadata"]["type"] != "cluster")
    after = _graph_jgf(eng)
    ids = [orjson.loads(n)["id"] for n in after[0]]
    assert [k for k, c in Counter(ids).items() if c > 1] == []
    assert after == before
    # and a match on the attached nodes writes their document's ids
    got = eng.allocate(_nodes(6), fmt="jgf")
    written = {n["id"] for n in orjson.loads(got.text)["graph"]["nodes"]}
    assert {n["id"] for n in doc["graph"]["nodes"]} <= written
    assert recount_errors(eng) == []


def test_ids_outside_the_loads_numbering_are_kept() -> None:
    """A document id the load never gave is written as it is (no translation either way)."""
    eng = Engine(generate_graph(nodes=2, sockets=2, cores=4), policy="first")
    fids = eng.graph.fluxion_ids
    assert fids is not None
    n = len(fids.uniq)
    assert fids.store_uniqs([n, n + 7, -3]) == [n, n + 7, -3]
    # every id of the load maps back to the store id that writes it
    assert list(map(fids.uniq_of, fids.store_uniqs(list(range(n))))) == list(range(n))
