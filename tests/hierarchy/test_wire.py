"""The columns wire form between instances (hierarchy._wire): exactness, bounds, negotiation.

* the codec: a match's columns payload decodes to exactly the columns its JGF reads as;
* the engine: attaching the payload leaves exactly the state attaching the JGF leaves, over
  random grow / shrink / cancel sessions (and a wrong column is caught by the comparison);
* the instance: a level fed columns by its parent ends in the state of a level fed JGF;
* bounds: every malformed message is a WireError and changes nothing, also from a raw gRPC
  parent, and random corruptions never raise anything else;
* negotiation: a caller that does not ask (every older peer) gets JGF, over real gRPC.
"""

from __future__ import annotations

import os
import random
import re
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import fields
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

import jgf
from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import FluxliteError, StateError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy import Instance, InstanceClient, WireError, as_jgf, is_columns
from hierarchy import _wire as wire
from hierarchy._launch import owner_credential
from hierarchy._pb import fluxlite_instance_pb2 as pb
from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
from hierarchy.base import MatchOutcome
from jgf._columns import _root_positions
from tests.fluxlite.test_attach_equivalence import _js, _spec, fingerprint, same
from tests.hierarchy.helpers import (
    CORES,
    chain,
    nodes_jobspec,
    saved_records,
    short_tmpdir,
    socket_jobspec,
    start,
)
from tests.hierarchy.test_instance import Direct

#: one core of one node, whole node path (a lease, a one-node grow)
WHOLE = (
    "[{type: node, count: 1, with: [{type: slot, count: 1, label: s, with: "
    "[{type: socket, count: 1, with: [{type: core, count: 1}]}]}]}]"
)
GRUG = Path(__file__).resolve().parents[2] / "examples" / "hierarchy" / "cluster.graphml"


def _cols_equal(a: jgf.Columns, b: jgf.Columns) -> None:
    for f in fields(a):
        if f.name != "strings":
            assert getattr(a, f.name) == getattr(b, f.name), f.name


def _parent(seed: int) -> tuple[Engine, JgfColumnsWriter, dict[str, int]]:
    rng = random.Random(seed)
    shape = {
        "nodes": rng.randint(6, 10),
        "sockets": rng.randint(1, 2),
        "cores": rng.randint(2, 4),
        "memory": rng.choice([0, 2]),
        "gpus": rng.choice([0, 1]),
    }
    if seed % 3 == 2:  # Fluxion's GRUG ids and ranks (the writer translates them)
        eng = Engine.from_file(GRUG, format="grug", policy="first")
        shape = {"nodes": 8, "sockets": 2, "cores": 16, "memory": 0, "gpus": 0}
    else:
        eng = Engine(generate_graph(**shape), policy=rng.choice(["first", "low", "high"]))
    g = eng.graph
    if seed % 3 == 1:  # properties, names and basenames off the defaults
        for v in rng.sample(range(len(g.v_type)), 5):
            g.set_property(v, "color", rng.choice(["red", "blue"]))
            g.set_property(v, "a-key", "x")
        for v in rng.sample(range(1, len(g.v_type)), 3):
            g.v_name[v] = f"renamed-{v}"
        for v in rng.sample(range(1, len(g.v_type)), 6):  # a basename off the type, the default name
            g.v_basename[v] = g.v_basename[v] + "x"
            g.v_name[v] = f"{g.v_basename[v]}{g.v_id[v]}"
    w = JgfColumnsWriter()
    eng.set_writer("jgf", w)
    return eng, w, shape


@pytest.mark.parametrize("seed", range(6))
def test_payload_decodes_to_the_columns_of_the_same_jgf(seed: int) -> None:
    """decode(encode(match)) == read_columns(match's JGF), field by field; as_jgf reads back the same."""
    eng, w, shape = _parent(seed)
    rng = random.Random(seed)
    checked = 0
    for _ in range(12):
        try:
            r = eng.allocate(_js(rng, rng.random() < 0.6, shape), fmt="jgf")
        except FluxliteError:
            continue
        payload = wire.encode(eng.graph, w.emitted)
        assert payload is not None and is_columns(payload)
        want = jgf.read_columns(r.text)
        assert want is not None
        got = wire.decode(payload)
        _cols_equal(got, want)
        if seed % 3 != 1:  # the match writer's layout: as_jgf writes the parent's text byte for byte
            assert as_jgf(payload) == r.text.encode()
        back = jgf.read_columns(as_jgf(payload))
        assert back is not None
        _cols_equal(back, want)
        assert wire.counts(payload) == (len(want), len(want.e_src)) == w.counts
        checked += 1
    assert checked >= 4


@pytest.mark.parametrize("seed", range(4))
def test_roots_are_the_paths_with_one_slash(seed: int) -> None:
    """The roots, the paths whose only "/" is the first (a multi-line regex over the joined text gave
    them before): the JGF column reader's (``jgf._columns._root_positions``, over the list) and
    decode's (``_wire._root_lines``, over the joined text), for none, one and several roots among
    deeper paths."""
    rng = random.Random(seed)
    names = ["", "a", "cluster0", "node12", "x-y", "socket0", "n\u00e9ud\u2603", "\ud800"]
    for _ in range(40):
        paths = [
            "/"
            + "/".join(rng.choice(names[1:]) if d else rng.choice(names) for d in range(rng.randint(1, 4)))
        ]
        paths += [
            "/" + "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(0, 30))
        ]
        rng.shuffle(paths)
        text = "\n".join(paths)
        want = [text.count("\n", 0, m.start()) for m in re.finditer(r"^/[^/\n]*$", text, re.M)]
        assert _root_positions(paths) == want
        assert wire._root_lines(text) == want  # (decode's: the joined text's slashes and newlines)
        assert want == [k for k, q in enumerate(paths) if q.count("/") == 1]


def _child(lease: bytes) -> tuple[Engine, int]:
    eng = Engine(load_graph(lease, format="jgf"), policy="first")
    return eng, eng.allocate(
        _spec("[{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]")
    ).jobid


@pytest.mark.parametrize("seed", range(4))
def test_attaching_the_payload_leaves_the_state_the_jgf_leaves(seed: int) -> None:
    """Two children run the same session, one attaching JGF, one the columns: same state every step."""
    eng, w, shape = _parent(seed)
    rng = random.Random(10 + seed)
    whole = WHOLE
    lease = eng.allocate(_spec(whole), fmt="jgf").text.encode()
    (a, job), (b, _) = _child(lease), _child(lease)
    grown: list[tuple[int, list[int]]] = []
    attached = 0
    for _step in range(12):
        if grown and rng.random() < 0.35:
            pjob, new = grown.pop(rng.randrange(len(grown)))
            newset = set(new)
            tops = [a.graph.path(v, a.dom) for v in new if a.graph.parent(v, a.dom) not in newset]
            for e in (a, b):
                e.shrink(job, paths=tops)
                for p in tops:
                    e.remove_subgraph(path=p)
            eng.cancel(pjob)
        else:
            try:
                r = eng.allocate(_js(rng, rng.random() < 0.7, shape), fmt="jgf")
            except FluxliteError:
                continue
            payload = wire.encode(eng.graph, w.emitted)
            assert payload is not None
            at = rng.choice([0, 10])
            outs: list[Any] = []
            for e, doc in ((a, r.text.encode()), (b, wire.decode(payload))):
                try:
                    outs.append(e.attach(doc, allocate_to=job, at=at, duration=3600))
                except FluxliteError as exc:
                    outs.append(type(exc))
            assert outs[0] == outs[1]
            if isinstance(outs[0], list) and outs[0]:
                grown.append((r.jobid, outs[0]))
                attached += 1
            else:
                eng.cancel(r.jobid)
        same(a, b)
        assert recount_errors(b) == []
    assert attached >= 3


def test_a_wrong_column_fails_the_comparison() -> None:
    """The comparison above sees a one-value difference in what the columns attach (a deliberate bug)."""
    eng, w, _shape = _parent(0)
    whole = WHOLE
    lease = eng.allocate(_spec(whole), fmt="jgf").text.encode()
    r = eng.allocate(_spec(whole), fmt="jgf")
    payload = wire.encode(eng.graph, w.emitted)
    assert payload is not None
    for bug in ("id", "exclusive", "size"):
        (a, job), (b, _) = _child(lease), _child(lease)
        cols = wire.decode(payload)
        col = getattr(cols, bug)
        k = next(i for i, t in enumerate(cols.type) if t == "core")
        col[k] = (not col[k]) if bug == "exclusive" else col[k] + 1
        a.attach(r.text.encode(), allocate_to=job, duration=3600)
        b.attach(cols, allocate_to=job, duration=3600)
        with pytest.raises(AssertionError):
            same(a, b)


# ---------------------------------------------------------------- bounds


def _valid(version: int = wire.VERSION) -> tuple[bytes, Engine, int]:
    """A one-node grow's payload (of ``version``) from a 4-node parent, and a child (1 node, one job)
    it attaches to."""
    eng, w, _ = _parent(0)
    whole = WHOLE
    lease = eng.allocate(_spec(whole), fmt="jgf").text.encode()
    eng.allocate(_spec(whole), fmt="jgf")
    payload = wire.encode(eng.graph, w.emitted, version)
    assert payload is not None and wire.payload_version(payload) == version
    child, job = _child(lease)
    return payload, child, job


def _msg(payload: bytes) -> Any:
    return pb.ResourceColumns.FromString(payload[len(wire.MAGIC) :])


def _bytes(m: Any, head: bytes = wire.MAGIC) -> bytes:
    """``m`` under the header of ``head`` (a payload of the version it came from)."""
    return head[: len(wire.MAGIC)] + m.SerializeToString()


def _ints(xs: list[int]) -> bytes:
    return b"".join(x.to_bytes(8, "little", signed=True) for x in xs)


def _set(m: Any, col: Any, values: bytes) -> None:
    """Column ``col`` of ``m`` to 8-byte ``values`` (version 2: width 8 said)."""
    col.values = values
    if m.version >= 2:
        col.width = 8


MUTATIONS: dict[str, Callable[[Any], None]] = {
    "version off its header": lambda m: setattr(m, "version", 1 if m.version == 2 else 2),
    "unknown version": lambda m: setattr(m, "version", 3),
    "no nodes": lambda m: setattr(m, "nodes", 0),
    "too many nodes": lambda m: setattr(m, "nodes", wire.MAX_NODES + 1),
    "more nodes than columns": lambda m: setattr(m, "nodes", m.nodes + 1),
    "too many edges": lambda m: setattr(m, "edges", wire.MAX_EDGES + 1),
    "more edges than columns": lambda m: setattr(m, "edges", m.edges + 1),
    "type index": lambda m: (m.type.ClearField("values"), setattr(m.type, "value", len(m.strings))),
    "negative type index": lambda m: (m.type.ClearField("values"), setattr(m.type, "value", -1)),
    "basename index": lambda m: (m.basename.ClearField("values"), setattr(m.basename, "value", -2)),
    "short column": lambda m: _set(m, m.id, _ints(list(range(m.nodes - 1)))),
    "ragged column": lambda m: _set(m, m.id, b"\x00" * (8 * m.nodes - 3)),
    "name of a node not sent": lambda m: m.names.add(node=m.nodes, name="x"),
    "two names for a node": lambda m: (m.names.add(node=0, name="x"), m.names.add(node=0, name="y")),
    "long name": lambda m: m.names.add(node=0, name="x" * (wire.MAX_STRING + 1)),
    "repeated uniq id": lambda m: (m.uniq_id.ClearField("values"), setattr(m.uniq_id, "value", 7)),
    "negative uniq id": lambda m: _set(m, m.uniq_id, _ints([-5, *list(range(1, m.nodes))])),
    "unset id marker": lambda m: (m.id.ClearField("values"), setattr(m.id, "value", -2)),
    "negative size value": lambda m: (m.size.ClearField("values"), setattr(m.size, "value", -1)),
    "status 2": lambda m: setattr(m.status, "value", 2),
    "exclusive 2": lambda m: (m.exclusive.ClearField("values"), setattr(m.exclusive, "value", 2)),
    "one path too few": lambda m: setattr(m, "paths", m.paths.rsplit("\n", 1)[0]),
    "relative path": lambda m: setattr(m, "paths", "x" + m.paths),
    "relative inner path": lambda m: setattr(m, "paths", m.paths.replace("\n/", "\nx", 1)),
    "long path": lambda m: setattr(m, "paths", m.paths.replace("\n", "/" + "p" * wire.MAX_PATH + "\n", 1)),
    "subsystem index": lambda m: setattr(m, "subsystem", len(m.strings)),
    "edge to a node not sent": lambda m: (m.target.ClearField("values"), setattr(m.target, "value", m.nodes)),
    "negative edge source": lambda m: _set(m, m.source, _ints([-1, *list(range(1, m.edges))])),
    "large edge target": lambda m: _set(m, m.target, _ints([*list(range(1, m.edges)), m.nodes])),
    "negative size": lambda m: _set(m, m.size, _ints([1] * (m.nodes - 1) + [-(1 << 40)])),
    "exclusive 7": lambda m: _set(m, m.exclusive, _ints([0] * (m.nodes - 1) + [7])),
    "edge subsystem index": lambda m: (
        m.edge_subsystem.ClearField("values"),
        setattr(m.edge_subsystem, "value", len(m.strings)),
    ),
    "long table string": lambda m: m.strings.append("s" * (wire.MAX_STRING + 1)),
    "too many table strings": lambda m: m.strings.extend(f"s{i}" for i in range(wire.MAX_STRINGS)),
    "empty type": lambda m: (m.strings.append(""), m.type.ClearField("values"), setattr(m.type, "value", len(m.strings) - 1)),
    "empty edge subsystem": lambda m: (
        m.strings.append(""),
        m.edge_subsystem.ClearField("values"),
        setattr(m.edge_subsystem, "value", len(m.strings) - 1),
    ),
    "properties keys without values": lambda m: m.properties.add(node=0, keys=["a", "b"], values=["1"]),
    "properties of a node not sent": lambda m: m.properties.add(node=m.nodes, keys=["a"], values=["1"]),
    "a property key twice": lambda m: m.properties.add(node=0, keys=["a", "a"], values=["1", "2"]),
}  # fmt: skip


#: what only one version refuses (version -> case -> mutation)
WIDTH_MUTATIONS: dict[int, dict[str, Callable[[Any], None]]] = {
    1: {"a width in version 1": lambda m: setattr(m.id, "width", 8)},
    2: {
        "width 3": lambda m: setattr(m.id, "width", 3),
        "width 16": lambda m: setattr(m.uniq_id, "width", 16),
        "width and values disagree": lambda m: setattr(m.id, "width", 2 if m.id.width != 2 else 4),
        "a width without values": lambda m: setattr(m.size, "width", 1),
        "an edge width of 0 edges": lambda m: (setattr(m, "edges", 0), m.ClearField("source"),
                                               m.ClearField("target"), setattr(m.target, "width", 2)),
        "negative uniq id at width 1": lambda m: (setattr(m.uniq_id, "width", 1),
                                                  setattr(m.uniq_id, "values", bytes([0xFB]) + bytes(m.nodes - 1))),
        "exclusive 2 at width 1": lambda m: (setattr(m.exclusive, "width", 1),
                                             setattr(m.exclusive, "values", bytes(m.nodes - 1) + b"\x02")),
    },
}  # fmt: skip
CASES = [(v, c) for v in (1, 2) for c in (*sorted(MUTATIONS), *sorted(WIDTH_MUTATIONS[v]))]


@pytest.mark.parametrize(("version", "case"), CASES)
def test_malformed_messages_are_refused_and_change_nothing(version: int, case: str) -> None:
    payload, child, job = _valid(version)
    m = _msg(payload)
    (MUTATIONS.get(case) or WIDTH_MUTATIONS[version][case])(m)
    bad = _bytes(m, payload)
    before = fingerprint(child)
    with pytest.raises(WireError, match="columns payload"):
        child.attach(wire.decode(bad), allocate_to=job, duration=3600)
    assert fingerprint(child) == before


@pytest.mark.parametrize("version", [1, 2])
def test_garbage_and_missing_header_are_refused(version: int) -> None:
    payload, _, _ = _valid(version)
    head = payload[: len(wire.MAGIC)]
    other = wire.MAGICS[3 - version]  # (the message under the other version's header)
    for bad in (
        b"",
        b"{}",
        payload[len(wire.MAGIC) :],
        head + b"\xff\xff\xff",
        payload[:-7],
        other + payload[len(head) :],
    ):
        with pytest.raises(WireError):
            wire.decode(bad)
        with pytest.raises(WireError):
            as_jgf(bad) if is_columns(bad) else wire.decode(bad)


@pytest.mark.parametrize("version", [1, 2])
def test_random_corruption_is_a_fluxlite_error_or_an_exact_attach(version: int) -> None:
    """Bytes flipped at random: decoding and attaching raise nothing but FluxliteErrors; a failure changes nothing."""
    payload, child, job = _valid(version)
    saved = child.save_state()
    rng = random.Random(7)
    refused = 0
    for _ in range(300):
        b = bytearray(payload)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(wire.MAGIC), len(b))
            b[k] = rng.randrange(256)
        before = fingerprint(child)
        try:
            cols = wire.decode(bytes(b))
            new = child.attach(cols, allocate_to=job, duration=3600)
        except FluxliteError:
            refused += 1
            after = fingerprint(child)
            # (the out-edge order cache may have lost the entry of a vertex whose edges the rolled-back
            # attach touched: rebuilt when next asked; an entry it keeps must be what it was)
            built, kept = after["outedges"]
            assert built == before["outedges"][0] and kept.items() <= before["outedges"][1].items()
            after["outedges"] = before["outedges"]
            assert after == before  # the span-id counter included
            continue
        # accepted (a corruption that still describes a subgraph, perhaps with its paths in another
        # subsystem): consistent, and the next one starts from the graph before it
        assert new and recount_errors(child) == []
        child = Engine.restore_state(saved)
    assert refused > 100


def test_an_attach_rolled_back_forgets_the_subsystem_it_brought() -> None:
    """A subgraph whose paths are in a subsystem the graph does not know, under a root it does not
    have, is attached and then fails its allocation: rolled back, the graph knows no new subsystem
    (else the level could no longer answer in the columns form, which needs one subsystem)."""
    payload, child, job = _valid()
    cols = wire.decode(payload)
    ((_, ps),) = cols.paths.items()
    cols.paths = {"other": [p.replace("/cluster0", "/clusterX") for p in ps]}
    cols.roots = [(k, "other") for k, _ in cols.roots]
    before = fingerprint(child)
    with pytest.raises(FluxliteError, match="could not be recorded"):
        child.attach(cols, allocate_to=job, duration=3600)
    assert sorted(child.graph.paths) == sorted(child.graph.out) == ["containment"]
    assert fingerprint(child) == before


# ---------------------------------------------------------------- instances


class DirectColumns(Direct):
    """A Parent in this process that asks for the columns form, as an instance's gRPC client does
    (``version``: the newest it reads)."""

    version = wire.VERSION

    def match_grow(self, jobid: int, jobspec: bytes, **kw: Any) -> MatchOutcome:
        kw.pop("timeout", None)
        return self.inst.match_grow(jobid, jobspec, accept_columns=self.version, **kw)


class DirectColumnsV1(DirectColumns):
    """A Parent in this process that reads version 1 only (an instance from before version 2)."""

    version = 1


def test_each_caller_gets_a_version_it_reads() -> None:
    """root -> mid -> child lease: a grow the root matches is encoded in the version its caller
    reads; one mid got from above is passed on to a child that reads its version and written as
    JGF for one that does not; and each ends in the state a JGF grow leaves."""
    for mid_reads, child_reads, want in ((2, 2, 2), (2, 1, 0), (1, 1, 1), (1, 2, 1), (2, 0, 0)):
        root = _root()
        parent = DirectColumns(root) if mid_reads == 2 else DirectColumnsV1(root)
        mid = Instance.from_parent(parent, nodes_jobspec(1).encode(), name="mid")
        lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
        out = mid.match_grow(
            lease.jobid, nodes_jobspec(1).encode(), lease_token=lease.lease_token, accept_columns=child_reads
        )
        assert [t.outcome for t in out.timings] == ["parent", "local"]
        assert wire.payload_version(out.jgf) == want, (mid_reads, child_reads)
        assert mid.info(recount=True)["recount_errors"] == []
        assert mid.info(lease.jobid)["holds"]["socket"] == 2 * 2  # (two nodes)
        jgf.read_columns(as_jgf(out.jgf))  # (what the child attaches reads)


def _root(nodes: int = 8) -> Instance:
    return Instance(Engine(generate_graph(nodes=nodes, sockets=2, cores=CORES), policy="first"), name="root")


@pytest.mark.parametrize("defer", [True, False])
def test_a_level_fed_columns_ends_in_the_state_of_a_level_fed_jgf(defer: bool) -> None:
    """root -> mid -> a client job at mid, twice: JGF between root and mid, and columns; same mid and root."""
    mids = []
    outs: list[list[bytes]] = [[], []]
    for k, kind in enumerate((Direct, DirectColumns)):
        root = _root()
        mid = Instance.from_parent(kind(root), nodes_jobspec(1).encode(), name="mid", defer_attach=defer)
        lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
        for step, n in enumerate([1, 2, 1]):
            out = mid.match_grow(
                lease.jobid, nodes_jobspec(n).encode(), request_id=f"g{step}", lease_token=lease.lease_token,
                accept_columns=kind is DirectColumns,
            )  # fmt: skip
            assert is_columns(out.jgf) == (kind is DirectColumns)
            outs[k].append(as_jgf(out.jgf))
            assert (out.vertices, out.edges) == wire.counts(out.jgf)
        # a retry of the first grow is answered from the request table, in the form the caller reads
        again = mid.match_grow(
            lease.jobid, nodes_jobspec(1).encode(), request_id="g0", lease_token=lease.lease_token
        )
        assert again.replayed and not is_columns(again.jgf) and again.jgf == outs[k][0]
        mid.shrink(lease.jobid, jgf=outs[k][1], lease_token=lease.lease_token)
        assert mid.info(recount=True)["recount_errors"] == []
        assert root.info(recount=True)["recount_errors"] == []
        mids.append((root, mid))
    for x, y in zip(*outs):
        _cols_equal(jgf.read_columns(x), jgf.read_columns(y))
    (r1, m1), (r2, m2) = mids
    same(m1.engine, m2.engine)
    same(r1.engine, r2.engine)
    assert m1.info()["origins"] == m2.info()["origins"]


def _record_policy(inst: Instance) -> list[int]:
    """The scheduling policy of each thread that runs ``inst``'s deferred attach (recorded as it starts)."""
    policies: list[int] = []
    finish = inst._finish_received

    def spy(*a: Any) -> None:
        policies.append(os.sched_getscheduler(threading.get_native_id()))
        finish(*a)

    inst._finish_received = spy  # type: ignore[method-assign]
    return policies


def test_a_childs_deferred_attach_runs_at_idle_priority() -> None:
    """A level attaches for its child's lease after answering, at idle CPU priority (the grow goes on
    below it meanwhile)."""
    mid = Instance.from_parent(DirectColumns(_root()), nodes_jobspec(1).encode(), name="mid")
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    policies = _record_policy(mid)
    out = mid.match_grow(
        lease.jobid, nodes_jobspec(1).encode(), lease_token=lease.lease_token, accept_columns=True,
        after_reply=lambda start: start(),
    )  # fmt: skip
    assert out.timings[0].deferred
    assert mid.info()["last_deferred"]["attach_update_s"] > 0
    assert policies == [os.SCHED_IDLE]


def test_a_childs_deferred_attach_waits_for_quiet_and_any_call_starts_it() -> None:
    """The attach for a remote child's lease waits up to ``idle_wait`` for the grow below to finish
    (the instance stays locked meanwhile); a call that needs the instance starts it at once (it waits
    for the attach, never for the rest of the wait), and without a call it starts when the wait is
    over.  A caller in process has it start at once."""
    import time

    for wait, call in ((30.0, True), (0.3, False)):
        mid = Instance.from_parent(DirectColumns(_root()), nodes_jobspec(1).encode(), name="mid", idle_wait=wait)
        lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
        policies = _record_policy(mid)
        t0 = time.monotonic()
        out = mid.match_grow(
            lease.jobid, nodes_jobspec(1).encode(), lease_token=lease.lease_token, accept_columns=True,
            after_reply=lambda start: start(), request_id="g",
        )  # fmt: skip
        assert out.timings[0].deferred
        key = next(k for k in mid.requests if k.endswith(":g"))
        time.sleep(0.1)
        assert mid.requests[key]["state"] == "received" and policies == []  # still waiting, locked
        if call:
            assert mid.info()["last_deferred"]["attach_update_s"] > 0  # (Info wants the lock)
            assert time.monotonic() - t0 < 10
        else:
            deadline = time.monotonic() + 20
            while mid.requests[key]["state"] != "done" and time.monotonic() < deadline:
                time.sleep(0.02)
            assert time.monotonic() - t0 >= wait
        assert mid.requests[key]["state"] == "done" and policies == [os.SCHED_IDLE]
        assert mid.info(recount=True)["recount_errors"] == []
    # a caller in this process (no after_reply) has the attach start at once, whatever the wait
    mid = Instance.from_parent(DirectColumns(_root()), nodes_jobspec(1).encode(), name="mid", idle_wait=30.0)
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    t0 = time.monotonic()
    mid.match_grow(lease.jobid, nodes_jobspec(1).encode(), lease_token=lease.lease_token, request_id="h")
    key = next(k for k in mid.requests if k.endswith(":h"))
    while mid.requests[key]["state"] != "done" and time.monotonic() - t0 < 20:
        time.sleep(0.01)
    assert time.monotonic() - t0 < 10


def test_the_instance_lock_tells_a_waiting_holder_that_a_turn_is_wanted() -> None:
    """``TurnLock``: a plain lock (a timed acquire fails while it is held) whose holder can wait until
    another thread wants it (at once when one does, after the timeout when none does)."""
    import time

    from hierarchy.instance.core import TurnLock

    lock = TurnLock()
    assert lock.acquire() and lock.locked()
    assert not lock.acquire(blocking=False) and not lock.acquire(timeout=0.05)
    t0 = time.monotonic()
    assert not lock.wait_wanted(0.2)  # nobody wants it
    assert time.monotonic() - t0 >= 0.2
    got: list[bool] = []
    th = threading.Thread(target=lambda: got.append(lock.acquire(timeout=30)))
    th.start()
    t0 = time.monotonic()
    assert lock.wait_wanted(30)
    assert time.monotonic() - t0 < 10
    lock.release()
    th.join(10)
    assert got == [True] and lock.locked()
    lock.release()
    with lock:
        assert lock.locked()
    assert not lock.locked()


def test_a_remote_grow_of_a_levels_own_job_is_answered_before_its_attach() -> None:
    """root -> mid -> a client job at mid, as a remote caller asks (``after_reply``): with columns from
    above, mid answers before attaching (the answer is the text a level that attached first gives)
    and nothing at mid changes until the attach runs, after which mid and root are in the state of
    that other level.  JGF from above, or a caller in process, attaches first."""
    twins = []
    for defer in (False, True):
        root = _root()
        mid = Instance.from_parent(
            DirectColumns(root), nodes_jobspec(1).encode(), name="mid", defer_attach=defer
        )
        job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
        started: list[Callable[[], None]] = []
        before = fingerprint(mid.engine)
        out = mid.match_grow(job, nodes_jobspec(2).encode(), request_id="g", after_reply=started.append)
        assert [t.outcome for t in out.timings] == ["parent", "local"]
        assert out.timings[0].deferred == defer and len(started) == int(defer)
        if defer:
            now = fingerprint(mid.engine)
            now["outedges"] = before["outedges"]  # a lazy order cache the local match attempt fills
            assert now == before  # answered; nothing attached yet (the lock is still held)
            assert mid.requests["grow:1::g"]["state"] == "received"
            policies = _record_policy(mid)
            started[0]()  # the RPC ended: the attach starts (a thread, at normal priority: the caller's
            # next call waits for it, no grow goes on below)
            assert mid.info()["last_deferred"]["attach_update_s"] > 0  # (Info waits for it)
            assert policies == [os.SCHED_OTHER]
            assert mid.requests["grow:1::g"]["state"] == "done"
        assert not is_columns(out.jgf)
        assert mid.info(recount=True)["recount_errors"] == []
        twins.append((root, mid, out.jgf))
    (r1, m1, a1), (r2, m2, a2) = twins
    assert a1 == a2
    same(m1.engine, m2.engine)
    same(r1.engine, r2.engine)
    assert m1.info()["origins"] == m2.info()["origins"]
    # a retry is answered from the request table, the same text
    again = m2.match_grow(1, nodes_jobspec(2).encode(), request_id="g", after_reply=lambda start: start())
    assert again.replayed and again.jgf == a2
    # JGF from above, and a caller in process: the attach comes first
    for parent, hook in ((Direct, lambda start: start()), (DirectColumns, None)):
        root = _root()
        mid = Instance.from_parent(parent(root), nodes_jobspec(1).encode(), name="mid")
        job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
        out = mid.match_grow(job, nodes_jobspec(2).encode(), request_id="g", after_reply=hook)
        assert out.timings[0].outcome == "parent" and not out.timings[0].deferred
        assert out.timings[0].attach_update_s > 0
        assert mid.info(job)["holds"]["socket"] == 3 * 2


class _Starts:
    """An ``after_reply`` like the servicer's: the call starts work at the RPC's end, ``handed`` once
    the answer is handed to gRPC; records which one the instance chose."""

    def __init__(self) -> None:
        self.chosen: list[str] = []
        #: whether each start offered its work to run on the caller's thread (``run``)
        self.inline: list[bool] = []

    def __call__(self, start: Callable[[], None]) -> None:
        self.chosen.append("end")
        self.inline.append(getattr(start, "run", None) is not None)
        start()

    def handed(self, start: Callable[[], None]) -> None:
        self.chosen.append("handed")
        self.inline.append(getattr(start, "run", None) is not None)
        start()


def test_an_own_jobs_attach_starts_when_the_answer_is_handed_over_a_childs_at_the_end() -> None:
    """The attach the caller's next call waits for (the level's own job) starts as soon as the
    answer is handed over (``handed``, where the caller offers it); a child's, whose grow goes on
    below, once the RPC has ended.  A caller without ``handed`` starts both at the end.  Only the
    own job's work offers to run on the caller's thread: a child's runs at idle priority, which
    would stay with the thread."""
    mid = Instance.from_parent(DirectColumns(_root()), nodes_jobspec(2).encode(), name="mid")
    own = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    starts = _Starts()
    out = mid.match_grow(own, nodes_jobspec(1).encode(), request_id="own", after_reply=starts)
    assert out.timings[0].deferred and starts.chosen == ["handed"]
    out = mid.match_grow(
        lease.jobid, nodes_jobspec(1).encode(), lease_token=lease.lease_token, accept_columns=True,
        request_id="child", after_reply=starts,
    )  # fmt: skip
    assert out.timings[0].deferred and starts.chosen == ["handed", "end"] and starts.inline == [True, False]
    plain: list[Callable[[], None]] = []
    out = mid.match_grow(own, nodes_jobspec(1).encode(), request_id="own2", after_reply=plain.append)
    assert out.timings[0].deferred and len(plain) == 1
    plain[0]()
    assert mid.info(own)["holds"]["socket"] == 3 * 2  # (Info waits for the attach)
    assert mid.info(recount=True)["recount_errors"] == []


# ---------------------------------------------------------------- over gRPC


class FakeParent(pb_grpc.InstanceServicer):
    """A raw gRPC parent answering MatchGrow with whatever the test sets (an old parent: JGF only)."""

    def __init__(self) -> None:
        self.reply = pb.MatchReply()
        self.asked: list[bool] = []

    def MatchGrow(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.asked.append(request.accept_columns)
        return self.reply

    def Shrink(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.ShrinkReply()

    def Health(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.HealthReply(status="SERVING", instance="root", depth=0)


@pytest.fixture
def fake_parent() -> Iterator[tuple[FakeParent, str]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    fake = FakeParent()
    pb_grpc.add_InstanceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield fake, f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


def _child_instance(address: str, lease: bytes, accept: bool) -> tuple[Instance, int]:
    client = InstanceClient(address, "s" * 32, timeout=5.0, instance_name="root", accept_columns=accept)
    inst = Instance(Engine(load_graph(lease, format="jgf"), policy="first"), name="mid", parent=client,
                    parent_jobid=1, parent_token="t" * 32)  # fmt: skip
    job = inst.match_allocate(socket_jobspec(1).encode()).jobid
    return inst, job


def _lease_and_grow(version: int = wire.VERSION) -> tuple[bytes, bytes, bytes]:
    """The lease JGF of a child (1 node of 4) and a 1-node grow as JGF and as columns (of ``version``)."""
    eng = Engine(generate_graph(nodes=4, sockets=2, cores=CORES), policy="first")
    w = JgfColumnsWriter()
    eng.set_writer("jgf", w)
    spec = parse_jobspec(nodes_jobspec(1))
    lease = eng.allocate(spec, fmt="jgf").text.encode()
    r = eng.allocate(spec, fmt="jgf")
    payload = wire.encode(eng.graph, w.emitted, version)
    assert payload is not None
    return lease, r.text.encode(), payload


def test_a_child_of_an_old_parent_gets_and_attaches_jgf(fake_parent: tuple[FakeParent, str]) -> None:
    """The parent ignores accept_columns (an older instance) and answers JGF: the child attaches it."""
    fake, address = fake_parent
    lease, text, _ = _lease_and_grow()
    fake.reply = pb.MatchReply(jobid=1, jgf=text, vertices=1, edges=1)
    inst, job = _child_instance(address, lease, accept=True)
    out = inst.match_grow(job, nodes_jobspec(1).encode(), request_id="r1")
    assert fake.asked == [True] and not is_columns(out.jgf)
    assert [t.outcome for t in out.timings] == ["parent"]
    assert inst.info(recount=True)["recount_errors"] == []


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("remote", [False, True])
def test_columns_from_a_raw_parent_attach_and_bad_ones_change_nothing(
    fake_parent: tuple[FakeParent, str], remote: bool, version: int
) -> None:
    """Corrupted columns from above: a clear error and nothing attached.  ``remote``: the grow is a
    remote caller's (``after_reply``), which a payload that decodes answers before its attach; one
    that does not decode is attached first, so its error is still the caller's.  ``version``: of
    the columns (1: a parent from before version 2, which does not say the version)."""
    fake, address = fake_parent
    lease, text, payload = _lease_and_grow(version)
    said = version if version > 1 else 0
    good = payload[len(wire.MAGIC) :]
    inst, job = _child_instance(address, lease, accept=True)
    after_reply = (lambda start: start()) if remote else None
    rng = random.Random(3)
    early = 0
    for k in range(40):  # corrupted replies: a clear error, nothing attached, no request left pending
        b = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        fake.reply = pb.MatchReply(jobid=1, columns=bytes(b), columns_version=said, vertices=1, edges=1)
        before = fingerprint(inst.engine)
        failed = inst.counters["deferred_attach_failed"]
        try:
            out = inst.match_grow(
                job, nodes_jobspec(1).encode(), request_id=f"bad{k}", after_reply=after_reply
            )
        except (WireError, StateError) as exc:
            assert not isinstance(exc, WireError) or not remote or "columns payload" in str(exc)
            after = fingerprint(inst.engine)
            after["outedges"] = before["outedges"]  # a lazy order cache the local match attempt fills
            assert after == before
            continue
        assert out.timings[0].deferred == remote
        early += remote
        inst.info()  # (waits for an attach after the answer)
        if (
            inst.counters["deferred_attach_failed"] > failed
        ):  # read, but did not attach: logged, nothing attached
            after = fingerprint(inst.engine)
            after["outedges"] = before["outedges"]
            assert after == before
            continue
        inst.shrink(job, jgf=as_jgf(out.jgf))  # a corruption that still reads: give it back
    assert (early > 0) == remote  # (seed 3: some corruptions still decode and attach)
    # columns said to be of a version nobody wrote: refused at the client, nothing attached
    fake.reply = pb.MatchReply(jobid=1, columns=good, columns_version=9, vertices=1, edges=1)
    before = fingerprint(inst.engine)
    with pytest.raises(WireError, match="version 9"):
        inst.match_grow(job, nodes_jobspec(1).encode(), request_id="v9", after_reply=after_reply)
    after = fingerprint(inst.engine)
    after["outedges"] = before["outedges"]
    assert after == before and "grow:1::v9" not in inst.requests
    fake.reply = pb.MatchReply(jobid=1, columns=good, columns_version=said, vertices=1, edges=1)
    out = inst.match_grow(job, nodes_jobspec(1).encode(), request_id="good", after_reply=after_reply)
    assert out.timings[0].deferred == remote
    assert not is_columns(out.jgf)  # the in-process caller did not ask for columns
    _cols_equal(jgf.read_columns(out.jgf), jgf.read_columns(text))
    assert inst.info(recount=True)["recount_errors"] == []
    # a client that did not ask gets columns from a misbehaving parent as JGF
    plain = InstanceClient(address, "s" * 32, timeout=5.0, instance_name="root", wire_columns=False)
    got = plain.match_grow(1, nodes_jobspec(1).encode())
    assert orjson.loads(got.jgf)["graph"]["nodes"] and fake.asked[-1] is False
    plain.close()
    # a user's client (the default) asks for the columns and hands its caller their JGF, written
    # here, as the instance would have written it; corrupted columns are its caller's WireError
    user = InstanceClient(address, "s" * 32, timeout=5.0, instance_name="root")
    try:
        got = user.match_grow(1, nodes_jobspec(1).encode())
        assert fake.asked[-1] is True and got.jgf == as_jgf(payload) and not is_columns(got.jgf)
        fake.reply = pb.MatchReply(jobid=1, columns=good[: len(good) // 2], columns_version=said)
        with pytest.raises(WireError):
            user.match_grow(1, nodes_jobspec(1).encode())
    finally:
        user.close()
    inst.parent.close()


@pytest.mark.parametrize("mode", ["columns", "jgf"])
def test_real_instances_negotiate_the_form(mode: str) -> None:
    """root -> leaf as processes over gRPC: the leaf asks for columns (default) or not (``--wire jgf``, an
    older child); grows through the root end in the same state either way, and the root answers columns
    only when asked.  A client of the root gets JGF unless it asks too."""
    with short_tmpdir() as d:
        t = start(d, chain(d, [6, 1]), transport="unix", extra_args=["--wire", mode])
        try:
            leaf = t.client("mid")
            job = leaf.match_allocate(nodes_jobspec(1)).jobid  # the leaf is full: grows go to the root
            got = [leaf.match_grow(job, nodes_jobspec(n)) for n in (1, 2)]
            assert all(
                not is_columns(g.jgf) and [x.outcome for x in g.timings] == ["parent", "local"] for g in got
            )
            counters = t.client("root").stat()["counters"]
            assert counters.get("grow_answered_columns", 0) == (2 if mode == "columns" else 0)
            leaf.shrink(job, jgf=got[1].jgf)
            for name in ("root", "mid"):
                assert t.info(name)["recount_errors"] == []
            paths = sorted(
                n["metadata"]["paths"]["containment"] for n in orjson.loads(got[0].jgf)["graph"]["nodes"]
            )
            assert len(paths) == 1 + 1 + 2 + 2 * CORES  # cluster, node, sockets, cores
            # a client of the root: JGF by default, columns when it asks
            rj = t.client("root").match_allocate(socket_jobspec(1)).jobid
            for accept in (False, True):
                c = InstanceClient(
                    t.address("root"), t.secret, credential=owner_credential(d), accept_columns=accept
                )
                try:
                    out = c.match_grow(rj, nodes_jobspec(1))
                finally:
                    c.close()
                assert is_columns(out.jgf) == accept
                assert wire.payload_version(out.jgf) == (wire.VERSION if accept else 0)
                assert (out.vertices, out.edges) == wire.counts(out.jgf)
            # the request as each kind of caller sends it: one from before version 2 (accept_columns
            # alone) gets version 1, one that reads a newer version gets this instance's newest
            c = InstanceClient(t.address("root"), t.secret, credential=owner_credential(d))
            try:
                for said, want in ((0, 1), (1, 1), (9, wire.VERSION)):  # (three sockets are free)
                    req = pb.MatchGrowRequest(jobid=rj, jobspec=socket_jobspec(1).encode(), request_id=f"v{said}",
                                              accept_columns=True, columns_version=said)  # fmt: skip
                    reply, _ = c._call("MatchGrow", req, None)
                    assert reply.columns and not reply.jgf and (reply.columns_version or 1) == want
                    cols = wire.decode(wire.MAGICS[want] + reply.columns)
                    assert len(cols.type) == reply.vertices and len(cols.e_src) == reply.edges
            finally:
                c.close()
        finally:
            t.close()


def test_a_columns_answer_is_kept_as_received_in_its_payload_file(tmp_path: Path) -> None:
    """A subgraph received as columns but not attached yet (crash) is kept as it came, in the payload
    file its record names, and attached when the state is restored, as one received as JGF is."""
    root = _root()
    mid = Instance.from_parent(
        DirectColumns(root), nodes_jobspec(1).encode(), name="mid", state_path=tmp_path / "mid.state"
    )
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    out = mid.match_grow(
        lease.jobid, nodes_jobspec(1).encode(), request_id="r1", lease_token=lease.lease_token,
        accept_columns=True, after_reply=lambda start: None,  # the process dies before the deferred attach
    )  # fmt: skip
    assert is_columns(out.jgf) and out.timings[0].deferred
    (rec,) = [r for r in saved_records(tmp_path / "mid.state") if r["key"].startswith("grow:")]
    assert rec["state"] == "received" and rec["jgf"] == out.jgf
    back = Instance.restore(tmp_path / "mid.state", parent=DirectColumns(root))
    assert back.info(lease.jobid)["holds"] == {"core": 2 * 2 * CORES, "socket": 4}
    assert back.info(recount=True)["recount_errors"] == []


def test_an_own_job_answered_before_its_attach_is_attached_after_a_crash(tmp_path: Path) -> None:
    """A remote caller's grow of the level's own job, answered and recorded but not attached (crash):
    the state file holds it as received, and the restored level attaches it; a retry is answered from
    the request table with the same text."""
    root = _root()
    mid = Instance.from_parent(
        DirectColumns(root), nodes_jobspec(1).encode(), name="mid", state_path=tmp_path / "mid.state"
    )
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    out = mid.match_grow(
        job,
        nodes_jobspec(1).encode(),
        request_id="r1",
        after_reply=lambda start: None,  # dies first
    )
    assert out.timings[0].deferred and not is_columns(out.jgf)
    (rec,) = [r for r in saved_records(tmp_path / "mid.state") if r["key"].startswith("grow:")]
    assert rec["state"] == "received" and is_columns(rec["jgf"]) and as_jgf(rec["jgf"]) == out.jgf
    back = Instance.restore(tmp_path / "mid.state", parent=DirectColumns(root))
    assert back.info(job)["holds"] == {"core": 2 * 2 * CORES, "socket": 4}
    assert back.info(recount=True)["recount_errors"] == []
    again = back.match_grow(job, nodes_jobspec(1).encode(), request_id="r1")
    assert again.replayed and again.jgf == out.jgf


# ---------------------------------------------------------------- the lazy JGF (columns written from the match)


@pytest.mark.parametrize("seed", range(3))
def test_a_lazy_match_renders_the_text_an_eager_match_writes(seed: int) -> None:
    """Two engines run the same session, one writer eager, one lazy (records only, text on demand):
    the lazy one emits "" and the same records, and its rendered text is the eager text byte for byte."""
    (ea, wa, shape), (eb, wb, _) = _parent(seed), _parent(seed)
    wb.lazy = True
    rng = random.Random(20 + seed)
    jobs: list[int] = []
    checked = 0
    for _ in range(10):
        if jobs and rng.random() < 0.3:
            j = jobs.pop(rng.randrange(len(jobs)))
            ea.cancel(j)
            eb.cancel(j)
            continue
        js = _js(rng, rng.random() < 0.6, shape)
        outs: list[Any] = []
        for e in (ea, eb):
            try:
                outs.append(e.allocate(js, fmt="jgf"))
            except FluxliteError as exc:
                outs.append(type(exc))
        if not isinstance(outs[0], type):
            a, b = outs
            assert b.text == "\n" and b.jobid == a.jobid and wb.counts == wa.counts
            assert wb.emitted == wa.emitted and wb.extra == {}
            assert wb.render(eb.graph) + "\n" == a.text
            assert wa.render(ea.graph) + "\n" == a.text  # (an eager writer's records render the same)
            jobs.append(a.jobid)
            checked += 1
        else:
            assert outs[0] == outs[1]
    assert checked >= 3


def test_lazy_render_keeps_agfilter_ephemeral_and_the_emit_errors() -> None:
    """What only the text carries (agfilter, ephemeral) is rendered as the eager writer writes it,
    and a lazy writer refuses what the eager one refuses (nodes without edges), keeping its records."""
    eng, _, _ = _parent(1)
    g = eng.graph
    eager, lazy = JgfColumnsWriter(), JgfColumnsWriter()
    lazy.lazy = True
    calls = [
        (0, 1, None, True, None),
        (1, 4, {"core": "2"}, False, None),
        (2, 1, None, True, {"note": "x y"}),
        (3, 2, {"memory": "8"}, True, {"k": "v"}),
    ]
    for w in (eager, lazy):
        for vid, need, ag, x, eph in calls:
            w.emit_vtx("", g, vid, need, ag, x, eph)
        with pytest.raises(FluxliteError) as err:
            w.take_text()
        assert "both vertices and edges" in str(err.value)
        for eid in range(3):
            w.emit_edg("", g, eid)
    text = eager.take_text()
    assert lazy.take_text() == "" and lazy.emitted == eager.emitted
    assert set(lazy.extra) == {1, 2, 3}
    assert text is not None and lazy.render(g) == text
    nodes = orjson.loads(text)["graph"]["nodes"]
    assert nodes[1]["metadata"]["agfilter"] == {"core": "2"} and nodes[2]["metadata"]["ephemeral"] == {
        "note": "x y"
    }


def _grow_twice(accept: bool, tmp: Path, no_encode: bool = False) -> tuple[Instance, list[bytes]]:
    """A root with a state file answers three grows (a client job) in the form asked for."""
    root = Instance(
        Engine(generate_graph(nodes=8, sockets=2, cores=CORES), policy="first"),
        name="root",
        state_path=tmp / f"root-{accept}.state",
    )
    job = root.match_allocate(nodes_jobspec(1).encode()).jobid
    outs = []
    for step, n in enumerate([1, 2, 1]):
        out = root.match_grow(job, nodes_jobspec(n).encode(), request_id=f"g{step}", accept_columns=accept)
        assert is_columns(out.jgf) == (accept and not no_encode)
        outs.append(out.jgf)
    return root, outs


def test_a_root_answering_columns_keeps_the_jgf_of_an_eager_answer(tmp_path: Path, monkeypatch: Any) -> None:
    """A root answering columns writes no JGF while it matches; its answers (as JGF), its state file's
    records and replies to retries are the eager root's byte for byte; a match the form cannot encode is
    answered with the JGF rendered from the same records, also byte for byte."""
    eager, want = _grow_twice(False, tmp_path)
    lazy, got = _grow_twice(True, tmp_path)
    assert [as_jgf(x) for x in got] == want
    assert lazy.counters["grow_answered_columns"] == 3

    def records(inst: Instance) -> list[Any]:
        # (the lazy root keeps the columns it answered with, the eager one the JGF: the same resources)
        return [{**r, "jgf": as_jgf(r["jgf"])} if "jgf" in r else r for r in saved_records(inst.state_path)]

    assert records(lazy) == records(eager)
    job = next(iter(lazy.jobs))
    again = lazy.match_grow(job, nodes_jobspec(1).encode(), request_id="g0")
    assert again.replayed and again.jgf == want[0]
    same(lazy.engine, eager.engine)
    monkeypatch.setattr("hierarchy.instance.grow.encode", lambda g, emitted, version: None)
    (tmp_path / "fallback").mkdir()
    fallback, out = _grow_twice(True, tmp_path / "fallback", True)
    assert out == want and fallback.counters["grow_answered_jgf"] == 3
    assert records(fallback) == records(eager)


def test_cached_rows_follow_graph_changes() -> None:
    """The encoder's per-vertex rows (the graph's ``wire_vcache``) are dropped with the vertex's text:
    after a property is set, a path changed and a node replaced by one named otherwise on the same
    (reused) handles, every match still decodes to exactly the columns of its own JGF, and to what an
    empty cache gives."""
    eng = Engine(generate_graph(nodes=4, sockets=2, cores=CORES), policy="first")
    w = JgfColumnsWriter()
    eng.set_writer("jgf", w)
    g = eng.graph
    # the store's own uniq ids: Fluxion's numbering of a generated graph repeats ids once a node is
    # removed and attached again (the jgf writer's text then repeats them too; the form refuses it)
    g.fluxion_ids = None
    every = parse_jobspec(nodes_jobspec(4))

    def check() -> list[int]:
        r = eng.allocate(every, fmt="jgf")
        payload = wire.encode(g, w.emitted)
        assert payload is not None and len(g.wire_vcache) > 1
        got = wire.decode(payload)
        _cols_equal(got, jgf.read_columns(r.text))
        g.wire_vcache.clear()
        again = wire.encode(g, w.emitted)
        assert again is not None
        _cols_equal(got, wire.decode(again))
        eng.cancel(r.jobid)
        return list(w.emitted[0])

    vids = check()
    core = next(v for v in vids if g.v_type[v] == "core")
    g.set_property(core, "color", "red")
    check()
    sock = next(v for v in vids if g.v_type[v] == "socket")
    g.set_path(sock, "containment", g.path(sock) + "b")
    check()
    node = next(v for v in vids if g.v_type[v] == "node")
    path = g.path(node)
    sub = eng.allocate(parse_jobspec(nodes_jobspec(1)), fmt="jgf", hosts=[g.v_name[node]])
    doc = orjson.loads(sub.text)
    eng.cancel(sub.jobid)
    for nd in doc["graph"]["nodes"]:
        md = nd["metadata"]
        if md["type"] != "cluster":
            md["name"] = "renamed-" + md["paths"]["containment"].rsplit("/", 1)[1]
            md["properties"] = {"zone": "b"}
    old = set(eng.remove_subgraph(path=path))
    new = eng.attach(orjson.dumps(doc))
    assert old & set(new)  # the handles were reused: a stale row would show
    vids = check()
    assert any(g.v_name[v].startswith("renamed-") for v in vids)


def test_a_level_with_a_state_file_converts_nothing_for_it(tmp_path: Path, monkeypatch: Any) -> None:
    """A level with a state file, fed columns, answering a JGF client: its saves keep each payload as
    received (no JGF written for the state file), so the only conversions are the client's answers, one
    each; the payload files are exactly the ones the state names, and the restored level answers a
    retry with the same text."""
    calls = [0]
    real = wire.columns_jgf

    def counting(*a: Any, **k: Any) -> Any:
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr("hierarchy._wire.columns_jgf", counting)
    monkeypatch.setattr("hierarchy.instance.origins.columns_jgf", counting)
    root = _root()
    mid = Instance.from_parent(
        DirectColumns(root), nodes_jobspec(1).encode(), name="mid", state_path=tmp_path / "mid.state"
    )
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    outs = [mid.match_grow(job, nodes_jobspec(1).encode(), request_id=f"r{k}").jgf for k in range(4)]
    assert calls[0] == 4 and not any(map(is_columns, outs))
    recs = [r for r in saved_records(tmp_path / "mid.state") if r["key"].startswith("grow:")]
    assert all(map(is_columns, (r["jgf"] for r in recs)))
    assert sorted(as_jgf(r["jgf"]) for r in recs) == sorted(outs)
    named = {
        r["jgf_ref"]
        for r in orjson.loads((tmp_path / "mid.state").read_bytes())["requests"]
        if "jgf_ref" in r
    }
    assert set(os.listdir(tmp_path / "mid.state.payloads")) == named
    assert mid.info(recount=True)["recount_errors"] == []
    back = Instance.restore(tmp_path / "mid.state", parent=DirectColumns(root))
    assert back.match_grow(job, nodes_jobspec(1).encode(), request_id="r2").jgf == outs[2]


def _col_ints(col: Any) -> list[int]:
    """The entries of a column sent one per entry, at its width (version 1: 8 bytes)."""
    w = col.width or 8
    return [
        int.from_bytes(col.values[k : k + w], "little", signed=True) for k in range(0, len(col.values), w)
    ]


def _plain_strs(col: Any, n: int, strings: list[str]) -> list[str]:
    """A string column read the plain way: an index per node (the constant one repeated)."""
    if not col.values:
        return [strings[col.value]] * n
    return [strings[x] for x in _col_ints(col)]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("case", ["as sent", "one value", "a value each", "newline in a type", "one node"])
def test_string_columns_and_default_names_as_read_plainly(case: str, version: int) -> None:
    """decode's string columns (one lookup for a column sent as one value, an itemgetter else) and its
    default names (joined and split at newlines, per node when a table string holds a newline) are
    those an index per node and ``basename + str(id)`` give."""
    payload, _child_eng, _job = _valid(version)
    m = _msg(payload)
    n = m.nodes
    strings = list(m.strings)
    if case == "one value":
        for col in (m.type, m.unit, m.edge_subsystem):
            first = _col_ints(col)[0] if col.values else col.value
            col.Clear()
            col.value = first
    elif case in ("a value each", "newline in a type"):
        if case == "newline in a type":
            m.strings.append("co\nre")
            strings.append("co\nre")
        k = len(strings) - 1 if case == "newline in a type" else strings.index("core")
        for col in (m.type, m.unit, m.edge_subsystem):
            size = n if col is not m.edge_subsystem else m.edges
            idx = [k if j % 2 else (col.value if not col.values else k) for j in range(size)]
            _set(m, col, _ints(idx))
    elif case == "one node":
        m.nodes, m.edges = 1, 0
        m.paths = m.paths.split("\n")[0]
        for col in (m.type, m.basename, m.id, m.uniq_id, m.rank, m.size, m.unit, m.status, m.exclusive):
            if col.values:
                col.values = col.values[: col.width or 8]
        for col in (m.source, m.target, m.edge_subsystem):
            col.Clear()
        del m.names[:]
        del m.properties[:]
    cols = wire.decode(_bytes(m, payload))
    n = m.nodes
    assert cols.type == _plain_strs(m.type, n, strings)
    assert cols.unit == _plain_strs(m.unit, n, strings)
    assert cols.e_ss == (_plain_strs(m.edge_subsystem, m.edges, strings) if m.edges else [])
    named = {nm.node for nm in m.names}
    assert [x for k, x in enumerate(cols.name) if k not in named] == [
        b + str(i) for k, (b, i) in enumerate(zip(cols.basename, cols.id)) if k not in named
    ]
    if case == "newline in a type":
        assert any("\n" in x for x in cols.name)


_ENCODE_IN_A_PROCESS = """
import sys
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy import _wire
eng = Engine(generate_graph(racks=2, nodes=2, sockets=2, cores=int(sys.argv[2])), policy="first")
w = JgfColumnsWriter()
eng.set_writer("jgf", w)
eng.allocate(parse_jobspec(sys.argv[1]), fmt="jgf")
for version in (1, 2):
    print(_wire.encode(eng.graph, w.emitted, version).hex())
"""


def test_a_match_encodes_to_the_same_bytes_in_every_process(tmp_path: Path) -> None:
    """The string table's order does not follow the process's string hash: the same match is the same
    payload under any PYTHONHASHSEED (and decodes to its JGF's columns, as every payload does)."""
    import subprocess
    import sys

    spec = nodes_jobspec(3)  # (across both racks: cluster, racks, nodes, sockets, cores)
    outs = []
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        got = subprocess.run([sys.executable, "-c", _ENCODE_IN_A_PROCESS, spec, str(CORES)], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=120, check=True)  # fmt: skip
        outs.append(got.stdout.split())
    assert len(outs[0]) == 2 and all(o == outs[0] for o in outs)
    for version, text in zip((1, 2), outs[0], strict=True):
        cols = wire.decode(bytes.fromhex(text))
        assert wire.payload_version(bytes.fromhex(text)) == version
        assert len(set(cols.type)) >= 5 and cols.strings  # (several strings: an order to get wrong)
