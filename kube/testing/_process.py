"""The stand-in API server in its own process, as a real kube-apiserver would be.

In-process, the server's threads share the interpreter lock with the code under test, so a
benchmark would charge the server's work to the scheduler. :class:`ApiServerProcess` runs
``python -m kube.testing`` instead and offers the same methods as
:class:`~kube.testing.ApiServer` (``compact`` and ``request_counts`` travel over the
test-server-only ``/fluxlite-testing/`` endpoints; no Kubernetes client uses them).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.request

from kube.testing._server import _ClientSide

__all__ = ["ApiServerProcess"]


class ApiServerProcess(_ClientSide):
    """``python -m kube.testing`` as a child process; same interface as ``ApiServer``."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        controllers: bool = True,
        watch_cache_size: int = 1000,
        *,
        bookmark_interval: float = 30.0,
        start_timeout: float = 30.0,
    ) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError(f"the test API server binds loopback only, not {host!r}")
        self.host, self.port = host, port
        self.controllers, self.watch_cache_size = controllers, watch_cache_size
        self.bookmark_interval, self.start_timeout = bookmark_interval, start_timeout
        self.url = ""
        self.token = secrets.token_urlsafe(24)  # handed to the child in its environment, not its argv
        self._proc: subprocess.Popen[str] | None = None
        self._tls_dir: str | None = None

    def start(self) -> ApiServerProcess:
        """Start the child and wait until it prints its URL (RuntimeError if it does not)."""
        if self._proc is not None:
            raise RuntimeError("the API server is already running")
        cmd = [
            sys.executable, "-m", "kube.testing",
            "--host", self.host, "--port", str(self.port),
            "--watch-cache-size", str(self.watch_cache_size),
            "--bookmark-interval", str(self.bookmark_interval),
        ]  # fmt: skip
        if not self.controllers:
            cmd.append("--no-controllers")
        from kube.testing._tls import make_serving_cert

        served = make_serving_cert()
        self.ca_pem = served.ca_pem
        self._tls_dir = tempfile.mkdtemp(prefix="fluxlite-kube-tls-")
        cert, key = served.write(self._tls_dir)
        cmd += ["--tls-cert", str(cert), "--tls-key", str(key)]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "FLUXLITE_TESTING_TOKEN": self.token,
        }
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self._proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.start_timeout)
        url = line[0].strip() if line else ""
        if not url.startswith("https://"):
            code = self._proc.poll()
            self.stop()
            raise RuntimeError(f"python -m kube.testing did not start (exit code {code})")
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        """SIGTERM the child and wait for it (SIGKILL after 10 s). Idempotent."""
        proc, self._proc = self._proc, None
        if self._tls_dir is not None:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
            self._tls_dir = None
        self._drop_ca_file()
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def __enter__(self) -> ApiServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def compact(self) -> int:
        """Drop the child's watch history; returns its current resourceVersion."""
        request = urllib.request.Request(
            f"{self.url}/fluxlite-testing/compact", data=b"", method="POST", headers=self._auth()
        )
        with urllib.request.urlopen(request, timeout=10, context=self._ssl()) as resp:
            return int(json.loads(resp.read())["resourceVersion"])

    def request_counts(self) -> dict[str, int]:
        """Requests the child served so far, by verb and resource."""
        request = urllib.request.Request(f"{self.url}/fluxlite-testing/request-counts", headers=self._auth())
        with urllib.request.urlopen(request, timeout=10, context=self._ssl()) as resp:
            return json.loads(resp.read())

    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=(self.ca_pem or b"").decode())

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}
