"""Form B: the Fluence-compatible gRPC sidecar, over real gRPC on loopback and Unix sockets."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import orjson
import pytest

from fluxlite.check import recount_errors
from fluxlite.errors import InputError
from kube import KubeConfig, KubeCore, node_info
from kube._pb import fluxcli_pb2 as pb
from kube._pb import fluxcli_pb2_grpc as pb_grpc
from kube._pb import fluxlite_kube_pb2 as epb
from kube._pb import fluxlite_kube_pb2_grpc as epb_grpc
from kube.objects import node_object
from kube.sidecar import Sidecar

CFG = KubeConfig()
GiB = 2**30

#: Fluence's fluxcli.proto (flux-framework/flux-k8s src/fluence/fluxcli-grpc/fluxcli.proto):
#: message -> [(field, number, protobuf type)]
FLUENCE = {
    "PodSpec": [
        ("id", 1, "string"),
        ("container", 2, "string"),
        ("cpu", 3, "int32"),
        ("memory", 4, "int64"),
        ("gpu", 5, "int64"),
        ("storage", 6, "int64"),
        ("labels", 7, "string"),
    ],
    "MatchRequest": [("ps", 1, "message"), ("request", 2, "string"), ("count", 3, "int32")],
    "NodeAlloc": [("nodeID", 1, "string"), ("tasks", 2, "int32")],
    "MatchResponse": [("podID", 1, "string"), ("nodelist", 2, "message"), ("jobID", 3, "int64")],
    "CancelRequest": [("jobID", 2, "int64")],
    "CancelResponse": [("jobID", 1, "int64"), ("error", 2, "int32")],
    "NodeStatus": [
        ("cpuAvail", 1, "int32"),
        ("gpuAvail", 2, "int32"),
        ("storageAvail", 3, "int64"),
        ("memoryAvail", 4, "int64"),
        ("allowedPods", 5, "int64"),
        ("nodeIP", 6, "string"),
        ("replication", 7, "int32"),
    ],
    "JGFRequest": [("jgf", 1, "string")],
    "JGFResponse": [("jgf", 1, "string")],
}
_TYPES = {9: "string", 5: "int32", 3: "int64", 11: "message"}


@pytest.fixture
def sidecar() -> Iterator[tuple[Sidecar, grpc.Channel]]:
    core = KubeCore(
        CFG, [node_info(node_object(f"n{i}", cpu="4", memory="8Gi", gpus=1), CFG) for i in range(3)]
    )
    sc = Sidecar(core, "127.0.0.1:0").start()
    ch = grpc.insecure_channel(sc.address.target)
    try:
        yield sc, ch
    finally:
        ch.close()
        sc.stop()


def test_proto_matches_fluence_field_for_field() -> None:
    """Package, service, methods, message and field names, numbers and types are Fluence's."""
    fd = pb.DESCRIPTOR
    assert fd.package == "fluxcli"
    svc = fd.services_by_name["FluxcliService"]
    assert [(m.name, m.input_type.name, m.output_type.name) for m in svc.methods] == [
        ("Match", "MatchRequest", "MatchResponse"),
        ("Cancel", "CancelRequest", "CancelResponse"),
    ]
    assert set(fd.message_types_by_name) == set(FLUENCE)
    for msg, fields in FLUENCE.items():
        got = [(f.name, f.number, _TYPES[f.type]) for f in fd.message_types_by_name[msg].fields]
        assert got == fields, msg


def _spec(cpu: int = 1, memory: int = GiB, gpu: int = 0, pid: str = "grp") -> pb.PodSpec:
    return pb.PodSpec(id=pid, container=pid, cpu=cpu, memory=memory, gpu=gpu)


def test_match_places_a_group_and_cancel_frees_it(sidecar: tuple[Sidecar, grpc.Channel]) -> None:
    """Match(count) places count pods as one job; NodeAlloc lists nodes and pods there; Cancel frees all."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    r = stub.Match(pb.MatchRequest(ps=_spec(cpu=2), request="allocate", count=5))
    assert r.podID == "grp" and r.jobID > 0
    assert [(n.nodeID, n.tasks) for n in r.nodelist] == [("n0", 2), ("n1", 2), ("n2", 1)]
    assert sc.core.engine.jobs == {r.jobID: "allocated"}
    c = stub.Cancel(pb.CancelRequest(jobID=r.jobID))
    assert (c.jobID, c.error) == (r.jobID, 0)
    assert sc.core.engine.jobs == {} and recount_errors(sc.core.engine) == []


def test_errors_are_status_codes_and_change_nothing(sidecar: tuple[Sidecar, grpc.Channel]) -> None:
    """Busy: RESOURCE_EXHAUSTED; never: FAILED_PRECONDITION; unknown job: NOT_FOUND; all-or-nothing."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    with pytest.raises(grpc.RpcError) as e:
        stub.Match(pb.MatchRequest(ps=_spec(cpu=4), count=4))  # 3 nodes of 4 cores
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert sc.core.engine.jobs == {} and sc.core.pods == {}
    with pytest.raises(grpc.RpcError) as e:
        stub.Match(pb.MatchRequest(ps=_spec(gpu=2), count=1))  # one gpu per node
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as e:
        stub.Cancel(pb.CancelRequest(jobID=77))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as e:
        stub.Match(pb.MatchRequest(ps=_spec(), request="reserve-forever", count=1))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_grow_and_shrink_an_elastic_group(sidecar: tuple[Sidecar, grpc.Channel]) -> None:
    """Grow adds pods to the same job; Shrink frees exactly the named pods; the last one ends the job."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    el = epb_grpc.FluxliteElasticStub(ch)
    r = stub.Match(pb.MatchRequest(ps=_spec(), count=1))
    g = el.Grow(epb.GrowRequest(jobID=r.jobID, ps=_spec(), count=5))
    assert g.jobID == r.jobID and sum(n.tasks for n in g.nodelist) == 5
    assert list(sc.core.engine.jobs) == [r.jobID] and len(sc.core.pods) == 6
    with pytest.raises(grpc.RpcError) as e:
        el.Grow(epb.GrowRequest(jobID=r.jobID, ps=_spec(cpu=4), count=3))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and len(sc.core.pods) == 6
    s = el.Shrink(epb.ShrinkRequest(jobID=r.jobID, nodelist=[pb.NodeAlloc(nodeID="n0", tasks=2)]))
    assert (s.released, s.jobGone) == (2, False) and len(sc.core.pods) == 4
    with pytest.raises(grpc.RpcError) as e:
        el.Shrink(epb.ShrinkRequest(jobID=r.jobID, nodelist=[pb.NodeAlloc(nodeID="n2", tasks=9)]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and len(sc.core.pods) == 4
    rest = {}
    for p in sc.core.pods.values():
        rest[p.node] = rest.get(p.node, 0) + 1
    s = el.Shrink(
        epb.ShrinkRequest(jobID=r.jobID, nodelist=[pb.NodeAlloc(nodeID=n, tasks=k) for n, k in rest.items()])
    )
    assert (s.released, s.jobGone) == (4, True)
    assert sc.core.engine.jobs == {} and recount_errors(sc.core.engine) == []


def test_wire_bytes_as_a_go_client_sends_them(sidecar: tuple[Sidecar, grpc.Channel]) -> None:
    """A MatchRequest hand-encoded by field number (no generated code) is understood."""
    _sc, ch = sidecar
    ps = (
        b"\x0a\x03abc" + b"\x18\x02" + b"\x20" + bytes([0x80, 0x80, 0x80, 0x80, 0x04])
    )  # id, cpu=2, memory=1GiB
    req = b"\x0a" + bytes([len(ps)]) + ps + b"\x12\x08allocate" + b"\x18\x01"
    call = ch.unary_unary("/fluxcli.FluxcliService/Match")
    raw = call(req)
    r = pb.MatchResponse.FromString(raw)
    assert r.podID == "abc" and [(n.nodeID, n.tasks) for n in r.nodelist] == [("n0", 1)]


def test_unix_socket_and_the_loopback_rule(tmp_path: object) -> None:
    """A Unix socket works; a non-loopback TCP address without TLS is refused."""
    core = KubeCore(CFG, [node_info(node_object("n0"), CFG)])
    sock = f"unix:{tmp_path}/fluxcli.sock"
    sc = Sidecar(core, sock).start()
    try:
        with grpc.insecure_channel(sock) as ch:
            r = pb_grpc.FluxcliServiceStub(ch).Match(pb.MatchRequest(ps=_spec(), count=2))
            assert [(n.nodeID, n.tasks) for n in r.nodelist] == [("n0", 2)]
    finally:
        sc.stop()
    with pytest.raises(InputError, match="without TLS"):
        Sidecar(core, "0.0.0.0:4242")


def test_cli_sidecar_process_from_a_nodelist(tmp_path: Path) -> None:
    """``fluxlite kube sidecar --nodes FILE`` serves Fluence's Match as a real process; SIGTERM exits 0."""
    nodes = tmp_path / "nodes.json"
    nodes.write_bytes(
        orjson.dumps(
            {"kind": "NodeList", "items": [node_object(f"n{i}", cpu="2", memory="4Gi") for i in range(2)]}
        )
    )
    sock = tmp_path / "s.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fluxlite.cli.main", "kube", "sidecar", "--nodes", str(nodes),
         "--listen", f"unix:{sock}", "--log-level", "WARNING"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert "fluxcli.FluxcliService" in line and "2 nodes" in line
        with grpc.insecure_channel(f"unix:{sock}") as ch:
            r = pb_grpc.FluxcliServiceStub(ch).Match(pb.MatchRequest(ps=_spec(cpu=2), count=2), timeout=10)
            assert sorted(n.nodeID for n in r.nodelist) == ["n0", "n1"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "fluxlite.cli.main",
            "kube",
            "sidecar",
            "--nodes",
            str(nodes),
            "--listen",
            "10.1.2.3:4242",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 1 and "without TLS" in bad.stderr and "Traceback" not in bad.stderr
