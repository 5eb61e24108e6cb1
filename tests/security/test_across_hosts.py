"""A tree across three "hosts": network namespaces this test creates, mutual TLS with a CA it makes.

Three namespaces joined by a bridge in a fourth (nothing is added to the
machine's own network namespace; every address is 192.0.2.0/24, TEST-NET-1,
inside them), one instance per namespace over TCP with mutual TLS (each
certificate names its host's address).  Checked from a client inside the
third namespace: grow and shrink across the hosts; a peer whose certificate
comes from another CA, or names another host, is refused; plaintext TCP to
a non-loopback address is refused by server and client; kill -9 of the
middle host's instance and a restart from its state file are survived.
Everything is torn down afterwards, also on failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hierarchy.helpers import nodes_jobspec, short_tmpdir, wait_for, write_graph

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("openssl") is None,
    reason="needs root, ip (iproute2) and openssl to make network namespaces and certificates",
)

HOSTS = ("root", "mid", "leaf")
NET = "192.0.2"


def _sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=30)


class Net:
    """The namespaces, the bridge and the veth pairs; ``close`` removes all of them."""

    def __init__(self) -> None:
        tag = f"fl{os.getpid() % 100000}"
        self.switch = f"{tag}sw"
        self.ns = {h: f"{tag}{h}" for h in HOSTS}
        self.ip = {h: f"{NET}.{i + 1}" for i, h in enumerate(HOSTS)}
        self.made: list[str] = []

    def open(self) -> Net:
        for ns in (self.switch, *self.ns.values()):
            _sh("ip", "netns", "add", ns)
            self.made.append(ns)
        _sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        _sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        for i, h in enumerate(HOSTS):
            ns = self.ns[h]
            _sh("ip", "link", "add", "name", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}",
                "netns", self.switch)  # fmt: skip
            _sh("ip", "-n", self.switch, "link", "set", f"p{i}", "master", "br0")
            _sh("ip", "-n", self.switch, "link", "set", f"p{i}", "up")
            _sh("ip", "-n", ns, "addr", "add", f"{self.ip[h]}/24", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        return self

    def close(self) -> None:
        for ns in reversed(self.made):
            _sh("ip", "netns", "del", ns, check=False)
        self.made.clear()


def _openssl(d: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)


def _ca(d: Path, name: str) -> None:
    _openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1", "-subj", f"/CN={name}")  # fmt: skip


def _cert(d: Path, ca: str, name: str, ip: str) -> None:
    _openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={ip}")  # fmt: skip
    (d / f"{name}.ext").write_text(f"subjectAltName=IP:{ip}\n")
    _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile", f"{name}.ext")  # fmt: skip
    os.chmod(d / f"{name}.key", 0o600)


DRIVER = textwrap.dedent(
    """
    import json, sys, threading
    from concurrent import futures
    from pathlib import Path
    import grpc
    from hierarchy import InstanceClient, TlsConfig
    from hierarchy._identity import read_user_key_file
    from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
    from hierarchy._service import InstanceServicer
    from fluxlite.errors import FluxliteError

    d = Path(sys.argv[1]); step = sys.argv[2]; addr = json.loads((d / "addr.json").read_text())
    tls = TlsConfig(d / "leaf-host.pem", d / "leaf-host.key", d / "ca.pem")
    cred = read_user_key_file(d / "alice.key")
    secret = (d / "secret").read_bytes().strip()
    out = {}

    def refused(fn):
        try:
            fn()
        except FluxliteError as exc:
            return type(exc).__name__
        return None

    def client(a, t=tls, timeout=10):
        return InstanceClient(a, secret, tls=t, credential=cred, timeout=timeout)

    js = (d / "n1.yaml").read_bytes()
    if step == "grow":
        with client(addr["leaf"]) as c:
            job = c.match_allocate((d / "n2.yaml").read_bytes())  # the whole leaf
            g = c.match_grow(job.jobid, js, request_id="across")  # the leaf is full: climbs to the root
            out["outcomes"] = [t.outcome for t in g.timings]
            s = c.shrink(job.jobid, jgf=g.jgf)
            out["returned"] = s.returned
            out["job"] = job.jobid
        # a client certificate from another CA: the root refuses the handshake
        rogue = TlsConfig(d / "rogue-host.pem", d / "rogue-host.key", d / "ca.pem")
        with client(addr["root"], rogue, timeout=3) as c:
            out["rogue_ca"] = refused(c.stat)
        # a server whose certificate (from the right CA) names another host: the client refuses it
        srv = grpc.server(futures.ThreadPoolExecutor(2))
        pb_grpc.add_InstanceServicer_to_server(pb_grpc.InstanceServicer(), srv)
        wrong = TlsConfig(d / "root-host.pem", d / "root-host.key", None)
        port = srv.add_secure_port(addr["leaf"].rsplit(":", 1)[0] + ":0", wrong.server_credentials())
        srv.start()
        with client(addr["leaf"].rsplit(":", 1)[0] + f":{port}", timeout=3) as c:
            out["wrong_host"] = refused(c.health)
        srv.stop(0)
        # plaintext to another host: the client refuses before connecting
        out["plaintext"] = refused(lambda: client(addr["root"], None))
    else:
        with client(addr["leaf"]) as c:
            g = c.match_grow(int(sys.argv[3]), js, request_id="after-restart")
            out["outcomes"] = [t.outcome for t in g.timings]
        with client(addr["root"]) as c:
            out["recount"] = c.info(recount=True)["recount_errors"]
    print(json.dumps(out))
    """
)


@pytest.fixture
def net() -> Iterator[Net]:
    n = Net()
    try:
        yield n.open()
    finally:
        n.close()


def test_tree_across_three_hosts_with_mutual_tls(net: Net) -> None:
    from hierarchy._identity import read_key_file, write_user_key_file
    from hierarchy._launch import ensure_identity

    with short_tmpdir() as d:
        _ca(d, "ca")
        _ca(d, "rogue")
        for h in HOSTS:
            _cert(d, "ca", f"{h}-host", net.ip[h])
        _cert(d, "rogue", "rogue-host", net.ip["leaf"])
        (d / "secret").write_text("s" * 64 + "\n")
        os.chmod(d / "secret", 0o600)
        site_key, owner_key, _ = ensure_identity(d)
        write_user_key_file(d / "alice.key", read_key_file(site_key), "alice")
        write_graph(d / "g.json", 8)
        (d / "n1.yaml").write_text(nodes_jobspec(1))
        (d / "n2.yaml").write_text(nodes_jobspec(2))
        (d / "driver.py").write_text(DRIVER)
        procs: dict[str, subprocess.Popen[bytes]] = {}
        addr: dict[str, str] = {}

        def serve(h: str, parent: str | None) -> None:
            ready = d / f"{h}.addr"
            ready.unlink(missing_ok=True)
            argv = ["ip", "netns", "exec", net.ns[h], sys.executable, "-m", "fluxlite.cli.main", "instance", "serve",
                    "--name", h, "--listen", addr.get(h, f"{net.ip[h]}:0"), "--secret-file", str(d / "secret"),
                    "--ready-file", str(ready), "--site-key", str(site_key), "--user-key", str(owner_key),
                    "--state", str(d / f"{h}.state"), "--child-grace", "20", "--heartbeat", "0.5",
                    "--tls-cert", str(d / f"{h}-host.pem"), "--tls-key", str(d / f"{h}-host.key"),
                    "--tls-ca", str(d / "ca.pem")]  # fmt: skip
            if parent is None:
                argv += ["--jgf", str(d / "g.json")]
            elif not (d / f"{h}.state").exists():
                argv += ["--from-parent", addr[parent], "--jobspec", str(d / "n2.yaml")]
            log = open(d / f"{h}.log", "ab")  # noqa: SIM115 - closed with the process below
            procs[h] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            log.close()
            wait_for(lambda: ready.exists() or procs[h].poll() is not None, 60, f"{h} to start")
            assert procs[h].poll() is None, (d / f"{h}.log").read_text()[-2000:]
            addr[h] = ready.read_text().strip()

        def drive(*args: str) -> dict:
            (d / "addr.json").write_text(json.dumps(addr))
            r = subprocess.run(["ip", "netns", "exec", net.ns["leaf"], sys.executable, str(d / "driver.py"),
                                str(d), *args], capture_output=True, text=True, timeout=120)  # fmt: skip
            assert r.returncode == 0, r.stderr[-3000:]
            return json.loads(r.stdout.strip().splitlines()[-1])

        try:
            # plaintext TCP to a non-loopback address: the server refuses to listen
            r = _sh("ip", "netns", "exec", net.ns["root"], sys.executable, "-m", "fluxlite.cli.main", "instance",
                    "serve", "--jgf", str(d / "g.json"), "--listen", f"{net.ip['root']}:0",
                    "--secret-file", str(d / "secret"), check=False)  # fmt: skip
            assert r.returncode != 0 and "without TLS" in r.stderr
            serve("root", None)
            serve("mid", "root")
            serve("leaf", "mid")
            assert all(a.startswith(f"{NET}.") for a in addr.values()), addr
            out = drive("grow")
            assert out["outcomes"] == ["parent", "parent", "local"]  # leaf -> mid -> root, over TLS
            assert out["returned"] > 0
            assert out["rogue_ca"] == "InstanceUnavailableError"  # handshake refused
            assert out["wrong_host"] == "InstanceUnavailableError"  # certificate names another host
            assert out["plaintext"] == "InputError"
            # kill -9 of the middle host's instance, restart from its state: the tree goes on
            procs["mid"].kill()
            procs["mid"].wait(timeout=10)
            serve("mid", "root")
            after = drive("after", str(out["job"]))
            assert after["outcomes"][-1] == "local" and after["outcomes"][0] == "parent"
            assert after["recount"] == []
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=10)
