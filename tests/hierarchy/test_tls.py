"""TLS (mutual, with a private CA) between instances and clients, on loopback only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hierarchy import InstanceClient, InstanceUnavailableError, TlsConfig, read_secret_file, write_secret_file
from tests.hierarchy.helpers import nodes_jobspec, short_tmpdir, write_graph

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _pki(d: Path) -> TlsConfig:
    """A CA and one certificate for 127.0.0.1 signed by it (used by servers and clients alike)."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=fluxlite-test-ca",
        cwd=d,
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "node.key",
        "-out",
        "node.csr",
        "-subj",
        "/CN=localhost",
        cwd=d,
    )
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(
        "x509",
        "-req",
        "-in",
        "node.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "node.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        cwd=d,
    )
    return TlsConfig(d / "node.pem", d / "node.key", d / "ca.pem")


def _serve(d: Path, name: str, tls: TlsConfig, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    ready = d / f"{name}.addr"
    cmd = [
        sys.executable, "-m", "fluxlite.cli.main", "instance", "serve", "--name", name,
        "--listen", "127.0.0.1:0", "--secret-file", str(d / "secret"), "--ready-file", str(ready),
        "--tls-cert", str(tls.cert), "--tls-key", str(tls.key), "--tls-ca", str(tls.ca), *extra,
    ]  # fmt: skip
    with open(d / f"{name}.log", "wb") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, process_group=0)
    end = time.monotonic() + 60
    while not ready.exists():
        assert p.poll() is None, (d / f"{name}.log").read_text()
        assert time.monotonic() < end
        time.sleep(0.02)
    return p, ready.read_text().strip()


def test_tls_tree_and_plaintext_client_refused() -> None:
    """A root and a child talk over mutual TLS; a client without TLS cannot reach them."""
    with short_tmpdir() as d:
        tls = _pki(d)
        write_secret_file(d / "secret")
        write_graph(d / "g.json", 4)
        (d / "n1.yaml").write_text(nodes_jobspec(1))
        procs = []
        try:
            root, raddr = _serve(d, "root", tls, "--jgf", str(d / "g.json"))
            procs.append(root)
            child, caddr = _serve(d, "child", tls, "--from-parent", raddr, "--jobspec", str(d / "n1.yaml"))
            procs.append(child)
            secret = read_secret_file(d / "secret")
            with InstanceClient(caddr, secret, tls=tls, timeout=10) as c:
                job = c.match_allocate(nodes_jobspec(1)).jobid
                g = c.match_grow(job, nodes_jobspec(1))
                assert [t.outcome for t in g.timings] == ["parent", "local"]
            with InstanceClient(raddr, secret, timeout=3) as plain, pytest.raises(InstanceUnavailableError):
                plain.health()
            no_cert = TlsConfig(ca=tls.ca)  # trusts the server, presents no client certificate
            with (
                InstanceClient(raddr, secret, tls=no_cert, timeout=3) as anon,
                pytest.raises(InstanceUnavailableError),
            ):
                anon.health()
        finally:
            for p in reversed(procs):
                p.terminate()
                p.wait(timeout=20)


def test_queue_client_over_tls_and_raw_clients_refused() -> None:
    """The queue service on a TLS instance: QueueClient(tls=...) submits and lists; plaintext, a client
    without a certificate, and a raw TLS client without the secret are refused; plaintext to another
    host is refused before connecting."""
    import grpc

    from fluxlite.errors import InputError
    from hierarchy import NotAuthorizedError
    from hierarchy._pb import fluxlite_queue_pb2 as qpb
    from hierarchy._pb import fluxlite_queue_pb2_grpc as qpb_grpc
    from hierarchy._queue_client import QueueClient

    with short_tmpdir() as d:
        tls = _pki(d)
        write_secret_file(d / "secret")
        write_graph(d / "g.json", 2)
        proc, addr = _serve(d, "q", tls, "--jgf", str(d / "g.json"), "--queue", "easy")
        try:
            secret = read_secret_file(d / "secret")
            with QueueClient(addr, secret, tls=tls, timeout=10) as q:
                job = q.submit(1, 60)
                assert job["state"] == "running" and len(job["paths"]) == 1
                assert q.jobs()[job["jobid"]]["state"] == "running"
                assert q.complete(job["jobid"])["state"] == "done"
            with QueueClient(addr, secret, timeout=3) as plain, pytest.raises(InstanceUnavailableError):
                plain.jobs()
            with (
                QueueClient(addr, secret, tls=TlsConfig(ca=tls.ca), timeout=3) as anon,
                pytest.raises(InstanceUnavailableError),
            ):
                anon.jobs()
            with QueueClient(addr, b"not-the-secret", tls=tls, timeout=5) as bad, pytest.raises(NotAuthorizedError):
                bad.submit(1, 60)
            # a raw gRPC client with a good certificate and no secret: refused before the request is read
            with grpc.secure_channel(addr, tls.channel_credentials()) as ch:
                with pytest.raises(grpc.RpcError) as e:
                    qpb_grpc.QueueStub(ch).Submit(qpb.SubmitRequest(size=1, walltime=60), timeout=5)
                assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with QueueClient(addr, secret, tls=tls, timeout=10) as q:
                assert [j["state"] for j in q.jobs().values()] == ["done"]  # nothing was submitted
            with pytest.raises(InputError, match="plaintext"):
                QueueClient("192.0.2.1:5000", secret)  # another host, no TLS: refused, nothing sent
        finally:
            proc.terminate()
            proc.wait(timeout=20)
