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
    """Match(count) places count pods as one job; one NodeAlloc per pod (default form); Cancel frees all."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    r = stub.Match(pb.MatchRequest(ps=_spec(cpu=2), request="allocate", count=5))
    assert r.podID == "grp" and r.jobID > 0
    assert [(n.nodeID, n.tasks) for n in r.nodelist] == [("n0", 1)] * 2 + [("n1", 1)] * 2 + [("n2", 1)]
    assert sc.core.engine.jobs == {r.jobID: "allocated"}
    c = stub.Cancel(pb.CancelRequest(jobID=r.jobID))
    assert (c.jobID, c.error) == (r.jobID, 0)
    assert sc.core.engine.jobs == {} and recount_errors(sc.core.engine) == []


def test_errors_are_status_codes_and_change_nothing(sidecar: tuple[Sidecar, grpc.Channel]) -> None:
    """Busy: RESOURCE_EXHAUSTED; never: FAILED_PRECONDITION; unknown job: NOT_FOUND; all-or-nothing."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    held = stub.Match(pb.MatchRequest(ps=_spec(cpu=1), count=1))
    with pytest.raises(grpc.RpcError) as e:
        stub.Match(pb.MatchRequest(ps=_spec(cpu=4), count=3))  # 3 nodes of 4 cores, one core taken
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert list(sc.core.engine.jobs) == [held.jobID] and len(sc.core.pods) == 1
    stub.Cancel(pb.CancelRequest(jobID=held.jobID))
    with pytest.raises(grpc.RpcError) as e:
        stub.Match(pb.MatchRequest(ps=_spec(cpu=4), count=4))  # more than the cluster could ever hold
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
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
    with pytest.raises(grpc.RpcError) as e:  # no count field on the wire: proto3's 0, refused
        call(b"\x0a" + bytes([len(ps)]) + ps + b"\x12\x08allocate")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_unix_socket_and_the_loopback_rule(tmp_path: object) -> None:
    """A Unix socket works; a non-loopback TCP address without TLS is refused."""
    core = KubeCore(CFG, [node_info(node_object("n0"), CFG)])
    sock = f"unix:{tmp_path}/fluxcli.sock"
    sc = Sidecar(core, sock).start()
    try:
        with grpc.insecure_channel(sock) as ch:
            r = pb_grpc.FluxcliServiceStub(ch).Match(pb.MatchRequest(ps=_spec(), count=2))
            assert [(n.nodeID, n.tasks) for n in r.nodelist] == [("n0", 1), ("n0", 1)]
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


def test_count_zero_is_invalid_argument(sidecar: tuple[Sidecar, grpc.Channel]) -> None:
    """``count: 0`` (and a negative count) is refused with INVALID_ARGUMENT, for Match and Grow alike."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    for n in (0, -3):
        with pytest.raises(grpc.RpcError) as e:
            stub.Match(pb.MatchRequest(ps=_spec(), request="allocate", count=n))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "count" in e.value.details()
    r = stub.Match(pb.MatchRequest(ps=_spec(), count=1))
    with pytest.raises(grpc.RpcError) as e:
        epb_grpc.FluxliteElasticStub(ch).Grow(epb.GrowRequest(jobID=r.jobID, ps=_spec(), count=0))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(sc.core.pods) == 1 and list(sc.core.engine.jobs) == [r.jobID]


def test_huge_count_is_refused_before_allocating_and_without_the_lock(
    sidecar: tuple[Sidecar, grpc.Channel],
) -> None:
    """A count the cluster could never hold is FAILED_PRECONDITION at once, even while the lock is held."""
    sc, ch = sidecar
    stub = pb_grpc.FluxcliServiceStub(ch)
    sc.service.lock.acquire()  # another Match is busy: the bound must not need the lock
    try:
        for n in (2**31 - 1, 5_000_000, 13):  # 3 nodes of 4 cores: 12 one-core pods at most
            with pytest.raises(grpc.RpcError) as e:
                stub.Match(pb.MatchRequest(ps=_spec(), count=n), timeout=5)
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION, e.value.details()
            assert "at most 12" in e.value.details()
    finally:
        sc.service.lock.release()
    assert sc.core.engine.jobs == {} and sc.core.pods == {}
    r = stub.Match(pb.MatchRequest(ps=_spec(), count=12), timeout=10)
    assert sum(n.tasks for n in r.nodelist) == 12


def test_per_pod_nodelist_is_the_default_and_per_node_on_request() -> None:
    """Default: one nodelist entry per pod (``nodelist[i]`` is pod i's node, as Fluence's plugin reads it);
    ``nodelist="per-node"``: one entry per node with the pods there (Fluence's server)."""
    core = KubeCore(CFG, [node_info(node_object(f"n{i}", cpu="4", memory="8Gi"), CFG) for i in range(2)])
    for form, want in (
        (None, [("n0", 1)] * 4 + [("n1", 1)]),
        ("per-pod", [("n0", 1)] * 4 + [("n1", 1)]),
        ("per-node", [("n0", 4), ("n1", 1)]),
    ):
        kw = {} if form is None else {"nodelist": form}
        sc = Sidecar(core, "127.0.0.1:0", **kw).start()
        try:
            with grpc.insecure_channel(sc.address.target) as ch:
                r = pb_grpc.FluxcliServiceStub(ch).Match(pb.MatchRequest(ps=_spec(), count=5))
                assert [(n.nodeID, n.tasks) for n in r.nodelist] == want, form
                pb_grpc.FluxcliServiceStub(ch).Cancel(pb.CancelRequest(jobID=r.jobID))
        finally:
            sc.stop()
    with pytest.raises(InputError, match="nodelist"):
        Sidecar(core, "127.0.0.1:0", nodelist="per-rack")


def test_sidecar_from_a_kubeconfig_accounts_running_pods(tmp_path: Path) -> None:
    """``sidecar --kubeconfig`` subtracts the pods already bound to nodes (terminal ones excepted)."""
    testing = pytest.importorskip("kube.testing")
    from kubernetes import client

    from kube.objects import pod_object

    srv = testing.ApiServer(host="127.0.0.1", port=0, controllers=False).start()
    try:
        v1 = client.CoreV1Api(srv.api_client())
        for i in range(2):
            v1.create_node(node_object(f"n{i}", cpu="4", memory="8Gi"))
        v1.create_namespaced_pod("default", pod_object("busy", cpu="3", scheduler="other", node_name="n0"))
        v1.create_namespaced_pod("default", pod_object("gone", cpu="4", scheduler="other", node_name="n1"))
        v1.patch_namespaced_pod_status("gone", "default", {"status": {"phase": "Succeeded"}})
        kc = srv.write_kubeconfig(tmp_path / "kc")
        sock = tmp_path / "s.sock"
        proc = subprocess.Popen(
            [sys.executable, "-m", "fluxlite.cli.main", "kube", "sidecar", "--kubeconfig", str(kc),
             "--listen", f"unix:{sock}", "--log-level", "WARNING"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().decode()
            assert "1 running pod accounted" in line, line
            with grpc.insecure_channel(f"unix:{sock}") as ch:
                stub = pb_grpc.FluxcliServiceStub(ch)
                with pytest.raises(grpc.RpcError) as e:  # 8 cores exist, 3 are taken by "busy"
                    stub.Match(pb.MatchRequest(ps=_spec(cpu=2), count=3), timeout=10)
                assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                r = stub.Match(pb.MatchRequest(ps=_spec(cpu=1), count=5), timeout=10)
                assert sum(n.tasks for n in r.nodelist if n.nodeID == "n0") == 1
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
    finally:
        srv.stop()
