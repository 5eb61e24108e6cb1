"""Authentication, lease tokens, foreign resources and listen-address rules, against real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from fluxlite.errors import InputError
from hierarchy import (
    ForeignResourcesError,
    InstanceClient,
    NotAuthorizedError,
    parse_address,
    read_secret_file,
    write_secret_file,
)
from hierarchy._address import check_listen
from hierarchy._pb import fluxlite_instance_pb2 as pb
from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
from tests.hierarchy.helpers import Tree, chain, nodes_jobspec, short_tmpdir, start


@pytest.fixture(scope="module")
def root() -> Iterator[Tree]:
    """A lone root instance with 8 nodes."""
    with short_tmpdir() as d:
        t = start(d, chain(d, [8]), child_grace=30.0)
        yield t
        t.close()


def test_call_without_secret_is_refused(root: Tree) -> None:
    """A call carrying no secret gets UNAUTHENTICATED from the server interceptor."""
    with grpc.insecure_channel(root.address("root")) as ch:
        stub = pb_grpc.InstanceStub(ch)
        with pytest.raises(grpc.RpcError) as err:
            stub.Health(pb.HealthRequest(), timeout=5)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            stub.MatchAllocate(pb.MatchAllocateRequest(jobspec=nodes_jobspec(1).encode()), timeout=5)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_wrong_secret_is_refused(root: Tree) -> None:
    """A client with another tree's secret is refused (NotAuthorizedError) and nothing is allocated."""
    before = root.client("root").stat()["free"]
    with (
        InstanceClient(root.address("root"), b"x" * 64, timeout=5) as bad,
        pytest.raises(NotAuthorizedError, match="secret"),
    ):
        bad.match_allocate(nodes_jobspec(1))
    assert root.client("root").stat()["free"] == before


def test_lease_needs_its_token(root: Tree) -> None:
    """Growing or shrinking a child's lease without its token is refused."""
    c = root.client("root")
    lease = c.match_allocate(nodes_jobspec(1), lease=True, child_name="a")
    with pytest.raises(NotAuthorizedError, match="lease token"):
        c.match_grow(lease.jobid, nodes_jobspec(1))
    with pytest.raises(NotAuthorizedError, match="lease token"):
        c.shrink(lease.jobid, jgf=lease.jgf, lease_token="0" * 32)
    with pytest.raises(NotAuthorizedError):
        c.heartbeat(lease.jobid, lease_token="nope")
    c.release(lease.jobid, lease_token=lease.lease_token)


def test_shrink_of_foreign_resources_is_refused(root: Tree) -> None:
    """Child B cannot release child A's resources, neither through A's job nor through its own."""
    c = root.client("root")
    a = c.match_allocate(nodes_jobspec(1), lease=True, child_name="a")
    b = c.match_allocate(nodes_jobspec(1), lease=True, child_name="b")
    before = c.info()
    with pytest.raises(NotAuthorizedError):
        c.shrink(a.jobid, jgf=a.jgf, lease_token=b.lease_token)
    with pytest.raises(ForeignResourcesError, match="does not hold"):
        c.shrink(b.jobid, jgf=a.jgf, lease_token=b.lease_token)
    node_a = next(p for p in _paths(a.jgf) if p.count("/") == 2)
    with pytest.raises(ForeignResourcesError):
        c.shrink(b.jobid, paths=[node_a], lease_token=b.lease_token)
    with pytest.raises(ForeignResourcesError, match="not in the graph"):
        c.shrink(b.jobid, paths=["/cluster0/node99"], lease_token=b.lease_token)
    after = c.info()
    assert after["free"] == before["free"] and after["jobs"] == before["jobs"]
    c.release(a.jobid, lease_token=a.lease_token)
    c.release(b.jobid, lease_token=b.lease_token)
    assert c.info(recount=True)["recount_errors"] == []


def _paths(jgf: bytes) -> list[str]:
    import orjson

    return [n["metadata"]["paths"]["containment"] for n in orjson.loads(jgf)["graph"]["nodes"]]


def test_non_loopback_listen_without_tls_is_refused() -> None:
    """`instance serve --listen 0.0.0.0:0` exits non-zero with one line, before binding anything."""
    with short_tmpdir() as d:
        write_secret_file(d / "secret")
        chain(d, [2])
        for addr in ("0.0.0.0:0", "[::]:0", "10.1.2.3:0"):
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "fluxlite.cli.main",
                    "instance",
                    "serve",
                    "--jgf",
                    str(d / "g.json"),
                    "--listen",
                    addr,
                    "--secret-file",
                    str(d / "secret"),
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert r.returncode != 0
            assert "refusing to listen" in r.stderr and "Traceback" not in r.stderr
            assert len(r.stderr.strip().splitlines()) == 1


def test_listen_rules() -> None:
    """Unix sockets and loopback TCP are allowed; other TCP needs TLS."""
    from hierarchy import TlsConfig

    check_listen(parse_address("unix:/tmp/x.sock"), None)
    check_listen(parse_address("127.0.0.1:0"), None)
    check_listen(parse_address("[::1]:0"), None)
    check_listen(parse_address("localhost:5000"), None)
    with pytest.raises(InputError, match="without TLS"):
        check_listen(parse_address("192.168.1.1:5000"), None)
    check_listen(parse_address("192.168.1.1:5000"), TlsConfig(Path("c.pem"), Path("k.pem")))
    with pytest.raises(InputError, match="port"):
        parse_address("127.0.0.1:http")
    with pytest.raises(InputError, match="limit"):
        parse_address("unix:/" + "x" * 200)


def test_secret_file_is_private() -> None:
    """The secret file is created 0600, and a file readable by others is refused."""
    with short_tmpdir() as d:
        s = write_secret_file(d / "secret")
        assert os.stat(d / "secret").st_mode & 0o777 == 0o600
        assert read_secret_file(d / "secret") == s.encode()
        with pytest.raises(InputError, match=r"exists|cannot create"):
            write_secret_file(d / "secret")
        os.chmod(d / "secret", 0o644)
        with pytest.raises(InputError, match="chmod 600"):
            read_secret_file(d / "secret")
