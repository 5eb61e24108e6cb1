"""A raw gRPC client for the security tests: the generated messages and a bare channel, nothing else.

Tokens are minted here with the standard library (the format of
``hierarchy/_identity.py``: ``v1.<payload>.<mac>``, HMAC-SHA256 under
``HMAC(site_key, "fluxlite-user-key|" + user)``), so no client-side check
of the project can hide what the server accepts.  Servers are real
``fluxlite instance serve`` processes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import orjson

from hierarchy._pb import fluxlite_instance_pb2 as pb
from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
from hierarchy._pb import fluxlite_queue_pb2 as qpb
from hierarchy._pb import fluxlite_queue_pb2_grpc as qpb_grpc

__all__ = ["Raw", "Server", "mint", "pb", "qpb"]

SITE_KEY = b"5" * 64
SECRET = b"s" * 64


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def user_key(user: str, site: bytes = SITE_KEY) -> bytes:
    return hmac.new(site, b"fluxlite-user-key|" + user.encode(), hashlib.sha256).digest()


def mint(
    user: str, instance: str, *, ttl: float = 60, site: bytes = SITE_KEY, nonce: str | None = None
) -> str:
    payload = _b64(
        orjson.dumps(
            {"u": user, "i": instance, "e": int(time.time() + ttl), "n": nonce or secrets.token_hex(12)}
        )
    )
    mac = hmac.new(user_key(user, site), payload.encode(), hashlib.sha256).digest()
    return f"v1.{payload}.{_b64(mac)}"


class Raw:
    """One channel; ``call(service, method, request, user=...)`` with the secret and a fresh token."""

    def __init__(self, target: str, instance: str = "root", secret: bytes = SECRET) -> None:
        self.target = target
        self.instance = instance
        self.secret = secret
        self.channel = grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)])
        self.inst = pb_grpc.InstanceStub(self.channel)
        self.queue = qpb_grpc.QueueStub(self.channel)

    def md(self, user: str | None, token: str | None = None) -> list[tuple[str, str]]:
        md = [("x-fluxlite-secret", self.secret.decode())]
        if token is not None:
            md.append(("x-fluxlite-user", token))
        elif user is not None:
            md.append(("x-fluxlite-user", mint(user, self.instance)))
        return md

    def call(self, stub: Any, method: str, request: Any, user: str | None = None, *, token: str | None = None,
             timeout: float = 20) -> Any:  # fmt: skip
        return getattr(stub, method)(request, metadata=self.md(user, token), timeout=timeout)

    def i(self, method: str, request: Any, user: str | None = None, **kw: Any) -> Any:
        return self.call(self.inst, method, request, user, **kw)

    def q(self, method: str, request: Any, user: str | None = None, **kw: Any) -> Any:
        return self.call(self.queue, method, request, user, **kw)

    def code(self, fn: Any, *args: Any, **kw: Any) -> grpc.StatusCode:
        """The status code of a call that must fail."""
        try:
            fn(*args, **kw)
        except grpc.RpcError as exc:
            return exc.code()
        raise AssertionError(f"{args[0] if args else fn} succeeded")

    def close(self) -> None:
        self.channel.close()


def jobspec(nodes: int | str = 1, sockets: int = 2, cores: int = 4) -> bytes:
    return (
        f"version: 1\nresources:\n  - type: node\n    count: {nodes}\n    with:\n      - type: slot\n"
        "        count: 1\n        label: default\n        with:\n          - type: socket\n"
        f"            count: {sockets}\n            with:\n              - type: core\n"
        f"                count: {cores}\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    ).encode()


class Server:
    """``fluxlite instance serve`` as a process in directory ``d`` (graph of ``nodes`` nodes)."""

    def __init__(self, d: Path, *, nodes: int = 8, name: str = "root", args: Sequence[str] = (),
                 identity: bool = True, listen: str | None = None, graph: bool = True) -> None:  # fmt: skip
        from tests.hierarchy.helpers import write_graph

        self.d = d
        self.name = name
        self.log = d / f"{name}.log"
        self.ready = d / f"{name}.ready"
        self.listen = listen or f"unix:{d}/{name}.sock"
        for f, data in (("secret", SECRET), ("site.key", SITE_KEY)):
            if not (d / f).exists():
                fd = os.open(d / f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, data + b"\n")
                os.close(fd)
        argv = [sys.executable, "-m", "fluxlite.cli.main", "instance", "serve", "--name", name,
                "--listen", self.listen, "--secret-file", str(d / "secret"), "--ready-file", str(self.ready)]  # fmt: skip
        if graph:
            argv += ["--jgf", str(write_graph(d / "g.json", nodes))]
        if identity:
            argv += ["--site-key", str(d / "site.key"), "--owner", "admin",
                     "--audit-log", str(d / f"{name}.audit.jsonl")]  # fmt: skip
        self.argv = [*argv, *args]
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""

    def start(self, timeout: float = 30.0) -> Server:
        if self.ready.exists():
            self.ready.unlink()
        with open(self.log, "ab") as lf:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT
            )
        end = time.monotonic() + timeout
        while not self.ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited {self.proc.returncode}: {self.log.read_text()[-1500:]}"
                )
            if time.monotonic() > end:
                raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-1500:]}")
            time.sleep(0.02)
        self.address = self.ready.read_text().strip()
        return self

    def run(self, timeout: float = 8.0) -> subprocess.CompletedProcess[str]:
        """Run to completion (for start-up refusals): the exit status and output."""
        return subprocess.run(self.argv, capture_output=True, text=True, timeout=timeout)

    def raw(self, instance: str | None = None) -> Raw:
        return Raw(self.address, instance or self.name)

    def rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def text_log(self) -> str:
        return self.log.read_text(errors="replace")

    def audit(self) -> list[dict[str, Any]]:
        p = self.d / f"{self.name}.audit.jsonl"
        return [orjson.loads(x) for x in p.read_text().splitlines()] if p.exists() else []
