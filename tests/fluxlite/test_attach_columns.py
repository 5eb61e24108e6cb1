"""The columnar attach (jgf.read_columns + attach_columns) leaves exactly the state the per-node reader leaves.

A MatchGrow hands every level a match writer's JGF (keys left out, edges
without metadata).  ``Engine.attach`` reads it column-wise; anything the
columnar path does not vouch for goes through ``parse_jgf`` +
``attach_document``, the reference here (forced by making
``read_columns`` give up).  Compared: the whole engine state, the handles,
the writer's text, the aggregates against a recount, and the errors.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

import jgf
import jgf._columns as columns
from fluxlite import api
from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import FluxliteError, GraphFormatError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import jgf as jgf_reader
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph


def _js(nodes: int = 0, sockets: int = 0, cores: int = 1) -> Any:
    inner = f"with: [{{type: core, count: {cores}}}]"
    if sockets:
        inner = f"with: [{{type: socket, count: {sockets}, {inner}}}]"
    slot = f"{{type: slot, count: 1, label: s, {inner}}}"
    res = f"[{{type: node, count: {nodes}, with: [{slot}]}}]" if nodes else f"[{slot}]"
    return parse_jobspec(
        f"version: 1\nresources: {res}\nattributes: {{system: {{duration: 3600}}}}\n"
        "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
    )


REQUESTS = {
    "4 nodes": _js(nodes=4, sockets=2, cores=4),
    "1 node": _js(nodes=1, sockets=2, cores=4),
    "1 socket": _js(sockets=1, cores=4),
    "3 cores": _js(cores=3),
}


@pytest.fixture(autouse=True)
def _columnar_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """These documents are small: take the columnar path anyway (Engine.attach skips it below 8 kB)."""
    monkeypatch.setattr(api, "ATTACH_COLUMNS_MIN_BYTES", 0)


@pytest.fixture(autouse=True, params=[16, -1], ids=["few existing cut out", "existing looked up"])
def _few_old(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test with both ways attach_columns finds the existing vertices: from the index side when
    they are few (each column is then cut around them), by a lookup per path otherwise."""
    monkeypatch.setattr(jgf_reader, "_FEW_OLD", request.param)


def _parent() -> Engine:
    return Engine(generate_graph(nodes=8, sockets=2, cores=4), policy="first")


def _child(parent: Engine) -> tuple[Engine, int]:
    lease = parent.allocate(_js(nodes=1, sockets=2, cores=4), fmt="jgf").text
    child = Engine(load_graph(lease.encode(), format="jgf"), policy="first")
    return child, child.allocate(_js(nodes=1, sockets=2, cores=4), fmt="jgf").jobid


def _attach_both(
    monkeypatch: pytest.MonkeyPatch, sub: bytes, **kw: Any
) -> tuple[tuple[Engine, list[int]], tuple[Engine, list[int]]]:
    """Attach ``sub`` to two identical children: column-wise, and through the per-node reader."""
    parent = _parent()
    out = []
    for columnar in (True, False):
        child, job = _child(_parent())
        with monkeypatch.context() as m:
            taken: list[bool] = []
            real = jgf_reader.attach_columns

            def spy(*a: Any, _real: Any = real, _taken: list[bool] = taken) -> Any:
                got = _real(*a)
                _taken.append(got is not None)
                return got

            m.setattr(jgf_reader, "attach_columns", spy)
            if not columnar:
                m.setattr(jgf, "read_columns", lambda _text: None)
            new = child.attach(sub, allocate_to=job, duration=3600, fmt="simple", **kw)
            assert taken == ([True] if columnar else []), "the columnar path was not the one taken"
        out.append((child, new))
    del parent
    return out[0], out[1]


@pytest.mark.parametrize("name", list(REQUESTS))
def test_a_match_writers_jgf_attaches_as_the_per_node_reader_does(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    parent = _parent()
    parent.allocate(_js(nodes=1, sockets=2, cores=4))  # the child's lease: the grow comes from elsewhere
    sub = parent.allocate(REQUESTS[name], fmt="jgf").text.encode()
    (a, new_a), (b, new_b) = _attach_both(monkeypatch, sub)
    assert new_a == new_b and new_a
    assert a.save_state() == b.save_state()
    assert a.last_text == b.last_text
    assert recount_errors(a) == []
    assert a.graph.version == b.graph.version


def test_reused_vertices_and_edges_between_them_as_the_per_node_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subgraph inside the child's own node (a socket it lacks) reuses the cluster and the node."""
    parent = _parent()
    node_doc = orjson.loads(parent.allocate(_js(nodes=1, sockets=2, cores=4), fmt="jgf").text)
    # the child gets the node with one socket's cores missing; the grow then brings them
    nodes = node_doc["graph"]["nodes"]
    drop = {n["id"] for n in nodes if n["metadata"]["paths"]["containment"].startswith(_socket1(nodes))}
    lease = copy.deepcopy(node_doc)
    lease["graph"]["nodes"] = [n for n in nodes if n["id"] not in drop]
    lease["graph"]["edges"] = [e for e in node_doc["graph"]["edges"] if e["target"] not in drop]
    # the grow: the cluster and the node (present in the child), socket1 and its cores (new)
    s1 = _socket1(nodes)
    keep = {n["id"] for n in nodes if n["metadata"]["paths"]["containment"].startswith(s1)}
    keep |= {n["id"] for n in nodes if n["metadata"]["type"] in ("cluster", "node")}
    grow = {
        "graph": {
            "nodes": [n for n in nodes if n["id"] in keep],
            "edges": [e for e in node_doc["graph"]["edges"] if e["source"] in keep and e["target"] in keep],
        }
    }
    results = []
    for columnar in (True, False):
        child = Engine(load_graph(orjson.dumps(lease), format="jgf"), policy="first")
        job = child.allocate(_js(cores=1), fmt="jgf").jobid
        with monkeypatch.context() as m:
            if not columnar:
                m.setattr(jgf, "read_columns", lambda _text: None)
            new = child.attach(orjson.dumps(grow), allocate_to=job, duration=3600, fmt="simple")
        assert len(new) == len(drop)
        assert recount_errors(child) == []
        results.append((new, child.save_state(), child.last_text))
    assert results[0] == results[1]


def _socket1(nodes: list[dict[str, Any]]) -> str:
    return next(
        n["metadata"]["paths"]["containment"]
        for n in nodes
        if n["metadata"]["type"] == "socket" and n["metadata"]["paths"]["containment"].endswith("socket1")
    )


def _sparse_doc() -> dict[str, Any]:
    """Keys left out in every way Fluxion's defaults cover, on a small tree."""
    nodes = [
        {"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}},
        {"id": "7", "metadata": {"type": "node", "name": "host42", "paths": {"containment": "/c0/host42"}}},
        {"id": "8", "metadata": {"type": "socket", "basename": "sock", "id": 3, "rank": 2,
                                 "paths": {"containment": "/c0/host42/sock3"}}},
        {"id": "9", "metadata": {"type": "memory", "size": 64, "unit": "GB", "exclusive": True, "status": 1,
                                 "properties": {"kind": "hbm"}, "paths": {"containment": "/c0/host42/memory9"}}},
        {"id": "10", "metadata": {"type": "core", "uniq_id": 77, "exclusive": False,
                                  "paths": {"containment": "/c0/host42/sock3/core77"}}},
    ]  # fmt: skip
    edges = [{"source": "0", "target": "7"}, {"source": "7", "target": "8"}, {"source": "7", "target": "9"},
             {"source": "8", "target": "10"}]  # fmt: skip
    return {"graph": {"nodes": nodes, "edges": edges}}


FIELDS = ("type", "basename", "name", "id", "uniq_id", "rank", "size", "unit", "status", "exclusive")


def test_sparse_metadata_gets_fluxions_defaults_column_wise() -> None:
    text = orjson.dumps(_sparse_doc())
    cols = jgf.read_columns(text)
    assert cols is not None
    ref = jgf.read(text)
    for f in FIELDS:
        assert getattr(cols, f) == [getattr(n, f) for n in ref.nodes], f
    assert cols.name[:2] == ["cluster0", "host42"] and cols.id[1] == 42  # a node's id from its name
    assert cols.properties == {3: {"kind": "hbm"}}
    assert cols.e_ss == ["containment"] * 4 and cols.e_rel == [None] * 4


@pytest.mark.parametrize(
    "change",
    [
        ("status", "down"),  # a word, not a number
        ("uniq_id", -1),  # Fluxion's unset marker: inferred from the id string
        ("size", -1),
        ("id", -2),
    ],
)
def test_values_off_the_simple_case_are_read_per_element_with_the_same_result(change: tuple[str, Any]) -> None:
    doc = _sparse_doc()
    doc["graph"]["nodes"][4]["metadata"][change[0]] = change[1]
    text = orjson.dumps(doc)
    cols = jgf.read_columns(text)
    ref = jgf.read(text)
    assert cols is not None
    for f in FIELDS:
        assert getattr(cols, f) == [getattr(n, f) for n in ref.nodes], f


def test_ids_that_c_stoll_reads_differently_from_int_fall_back() -> None:
    doc = _sparse_doc()
    doc["graph"]["nodes"][4]["id"] = "1_0"  # int() says 10, C stoll says 1
    for e in doc["graph"]["edges"]:
        if e["target"] == "10":
            e["target"] = "1_0"
    cols = jgf.read_columns(orjson.dumps(doc))
    assert cols is not None and cols.uniq_id[4] == 77  # given: no inference
    del doc["graph"]["nodes"][4]["metadata"]["uniq_id"]
    cols = jgf.read_columns(orjson.dumps(doc))
    assert cols is not None and cols.uniq_id[4] == 1 == jgf.read(orjson.dumps(doc)).nodes[4].uniq_id


def _bad_docs(child: Engine) -> dict[str, bytes]:
    g = child.graph
    node = next(v for v in g.vertices() if g.v_type[v] == "node")
    path = g.path(node)
    doc = _sparse_doc()
    out = {}
    d = copy.deepcopy(doc)  # an existing path with another rank
    d["graph"]["nodes"] = [
        {"id": "0", "metadata": {"type": "cluster", "rank": -1, "paths": {"containment": g.path(g.roots["containment"])}}},
        {"id": "1", "metadata": {"type": "node", "rank": 999, "paths": {"containment": path}}},
    ]  # fmt: skip
    d["graph"]["edges"] = [{"source": "0", "target": "1"}]
    out["rank clash"] = orjson.dumps(d)
    out["second root"] = orjson.dumps(doc)  # /c0 is a new root next to the child's cluster
    d = copy.deepcopy(doc)
    d["graph"]["nodes"][4]["metadata"]["paths"]["containment"] = "/c0/host42/sock3"
    out["repeated path"] = orjson.dumps(d)
    d = copy.deepcopy(doc)
    d["graph"]["edges"].append({"source": "0", "target": "nowhere"})
    out["dangling edge"] = orjson.dumps(d)
    return out


@pytest.mark.parametrize("case", ["rank clash", "second root", "repeated path", "dangling edge"])
def test_errors_are_the_per_node_readers_and_change_nothing(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    msgs = []
    for columnar in (True, False):
        child, job = _child(_parent())
        before = child.save_state()
        text = _bad_docs(child)[case]
        with monkeypatch.context() as m:
            if not columnar:
                m.setattr(jgf, "read_columns", lambda _text: None)
            with pytest.raises(FluxliteError) as exc:
                child.attach(text, allocate_to=job, duration=3600)
        assert child.save_state() == before
        msgs.append((type(exc.value), str(exc.value)))
    assert msgs[0] == msgs[1]
    assert issubclass(msgs[0][0], GraphFormatError)


def test_the_columnar_reader_is_still_exercised_with_tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    parent = _parent()
    sub = parent.allocate(REQUESTS["1 node"], fmt="jgf").text.encode()
    whole = jgf.read_columns(sub)
    monkeypatch.setattr(columns, "CHUNK", 97)
    pieces = jgf.read_columns(sub)
    assert whole is not None and pieces is not None
    for f in (*FIELDS, "paths", "e_src", "e_dst", "e_ss"):
        assert getattr(whole, f) == getattr(pieces, f), f


def test_small_documents_take_the_per_node_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ATTACH_COLUMNS_MIN_BYTES the per-node reader is as fast, so it is the one used."""
    monkeypatch.setattr(api, "ATTACH_COLUMNS_MIN_BYTES", 8 << 10)
    parent = _parent()
    parent.allocate(_js(nodes=1, sockets=2, cores=4))  # the child's lease: the grow comes from elsewhere
    sub = parent.allocate(REQUESTS["3 cores"], fmt="jgf").text.encode()
    assert len(sub) < 8 << 10
    child, job = _child(_parent())
    calls: list[bytes] = []
    monkeypatch.setattr(jgf, "read_columns", lambda text: calls.append(text))
    assert child.attach(sub, allocate_to=job, duration=3600) and calls == []
    assert recount_errors(child) == []


def test_units_are_dropped_as_the_per_node_reader_drops_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory vertex's ``"unit": "GB"`` is read and not kept, column-wise as per node (Fluxion's reader
    never sets it); the columnar path kept it, so a child's state depended on the size of the grow."""
    parent = Engine(generate_graph(nodes=4, sockets=1, cores=2, memory=2), policy="first")
    whole = parse_jobspec(
        "version: 1\nresources: [{type: node, count: 1, with: [{type: slot, count: 1, label: s, with: "
        "[{type: socket, count: 1, with: [{type: core, count: 2}, {type: memory, count: 2}]}]}]}]\n"
        "attributes: {system: {duration: 3600}}\ntasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
    )
    lease = parent.allocate(whole, fmt="jgf").text
    grow = parent.allocate(whole, fmt="jgf").text
    assert '"unit": "GB"' in grow
    units = []
    for min_bytes in (0, 1 << 30):  # columnar, then per node
        monkeypatch.setattr(api, "ATTACH_COLUMNS_MIN_BYTES", min_bytes)
        child = Engine(load_graph(lease, format="jgf"), policy="first")
        new = child.attach(grow)
        units.append(sorted({child.graph.v_unit[v] for v in new}))
    assert units == [[""], [""]]


def test_properties_of_new_vertices_keep_their_positions_past_the_existing_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Properties are numbered among the new vertices only (an existing vertex's are not read), in both
    ways of finding the existing ones; the existing cluster comes first here, so every new position moves."""
    parent = _parent()
    parent.allocate(_js(nodes=1, sockets=2, cores=4))
    doc = orjson.loads(parent.allocate(REQUESTS["1 node"], fmt="jgf").text)
    nodes = doc["graph"]["nodes"]
    nodes.sort(key=lambda n: n["metadata"]["type"] != "cluster")
    for k in (0, 1, len(nodes) - 1):
        nodes[k]["metadata"]["properties"] = {"k": str(k)}
    sub = orjson.dumps(doc)
    (a, new_a), (b, new_b) = _attach_both(monkeypatch, sub)
    assert new_a == new_b
    assert a.save_state() == b.save_state()
    assert sorted(a.graph.v_props.values(), key=str) == [{"k": "1"}, {"k": str(len(nodes) - 1)}]


def test_positions_finds_every_occurrence_in_order() -> None:
    assert jgf_reader._positions([3, 1, 3, 2, 3], 3) == [0, 2, 4]
    assert jgf_reader._positions([3, 1], 7) == []
