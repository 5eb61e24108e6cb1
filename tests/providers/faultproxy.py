"""An HTTP proxy on loopback between the EC2 provider and moto's server that injects faults.

The provider's ``endpoint_url`` points at the proxy; the proxy forwards
each EC2 Query request to moto unchanged, unless a rule for its ``Action``
says otherwise::

    proxy = FaultProxy(moto.url).start()
    proxy.fail("RunInstances", "lost")              # every RunInstances: forwarded, answer replaced by a 500
    proxy.fail("TerminateInstances", "500", times=1)  # the next one only: 500, never forwarded
    proxy.clear()

Fault kinds (what EC2 and the network do to a caller):

``delay``     forward after ``delay`` seconds
``500``       answer ``500 InternalError``; the request never reaches moto
``throttle``  answer ``503 RequestLimitExceeded``; never forwarded
``capacity``  answer ``500 InsufficientInstanceCapacity``; never forwarded
``lost``      forward (moto carries it out), then answer ``500 InternalError``
              instead of moto's reply: the caller cannot tell what happened
``kill-before``  call ``on_kill`` (e.g. SIGKILL the caller's process), never forward
``kill-after``   forward, then call ``on_kill``: EC2 did it, the caller died waiting

``after=n`` lets the first ``n`` matching requests through before the rule
applies (a schedule can say "the 2nd RunInstances is lost").

``seen`` lists every request as ``(action, params, what was done)``.  The
proxy binds 127.0.0.1 on a free port and only ever talks to ``upstream``.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FAULTS", "FaultProxy"]

FAULTS = ("delay", "500", "throttle", "capacity", "lost", "kill-before", "kill-after")
_ERRORS = {
    "500": (500, "InternalError", "We encountered an internal error. Please try again."),
    "lost": (500, "InternalError", "We encountered an internal error. Please try again."),
    "throttle": (503, "RequestLimitExceeded", "Request limit exceeded."),
    "capacity": (
        500,
        "InsufficientInstanceCapacity",
        "We currently do not have sufficient capacity in the Availability Zone you requested.",
    ),
}
#: bounds on what the proxy reads from its one client (the provider under test)
_MAX_BODY = 1 << 20


@dataclass
class _Rule:
    kind: str
    times: int | None  # None: every request
    delay: float
    after: int = 0


def _error_xml(code: str, message: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
        f"<Code>{code}</Code><Message>{message}</Message></Error></Errors>"
        "<RequestID>fluxlite-fault-proxy</RequestID></Response>"
    ).encode()


class FaultProxy:
    """See the module docstring."""

    def __init__(self, upstream: str, port: int = 0) -> None:
        self.port = port
        u = urllib.parse.urlsplit(upstream)
        if u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the fault proxy forwards to loopback only, not {upstream}")
        self._up = (u.hostname, u.port or 80)
        self._lock = threading.Lock()
        self._rules: dict[str, list[_Rule]] = {}
        self.seen: list[tuple[str, dict[str, str], str]] = []
        self._srv: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        #: called by the kill-* faults (from the proxy's thread)
        self.on_kill: Any = None

    # ------------------------------------------------------------------ rules
    def fail(
        self, action: str, kind: str, *, times: int | None = None, delay: float = 0.0, after: int = 0
    ) -> FaultProxy:
        """Apply fault ``kind`` to ``times`` requests of ``action`` (all if None), after letting ``after`` pass."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r} (known: {', '.join(FAULTS)})")
        with self._lock:
            self._rules.setdefault(action, []).append(_Rule(kind, times, delay, after))
        return self

    def clear(self, action: str | None = None) -> None:
        with self._lock:
            if action is None:
                self._rules.clear()
            else:
                self._rules.pop(action, None)

    def count(self, action: str, outcome: str | None = None) -> int:
        with self._lock:
            return sum(1 for a, _, o in self.seen if a == action and (outcome is None or o == outcome))

    def params(self, action: str) -> list[dict[str, str]]:
        with self._lock:
            return [p for a, p, _ in self.seen if a == action]

    def _take(self, action: str) -> _Rule | None:
        with self._lock:
            rules = self._rules.get(action)
            if not rules:
                return None
            rule = rules[0]
            if rule.after > 0:
                rule.after -= 1
                return None
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    rules.pop(0)
            return rule

    # ------------------------------------------------------------------ server
    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                if n > _MAX_BODY:
                    self._reply(413, "text/plain", b"too large")
                    return
                body = self.rfile.read(n)
                params = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace")).items()}
                action = params.get("Action", "")
                rule = proxy._take(action)
                kind = rule.kind if rule is not None else "forward"
                with proxy._lock:
                    proxy.seen.append((action, params, kind))
                if rule is not None and rule.kind == "delay":
                    time.sleep(rule.delay)
                if kind == "kill-before" and proxy.on_kill is not None:
                    proxy.on_kill()
                    kind = "500"
                if kind in ("500", "throttle", "capacity"):
                    status, code, msg = _ERRORS[kind]
                    self._reply(status, "text/xml", _error_xml(code, msg))
                    return
                status, ctype, data = proxy._forward(self.command, self.path, dict(self.headers), body)
                if kind == "kill-after" and proxy.on_kill is not None:
                    proxy.on_kill()
                    kind = "lost"
                if kind == "lost":
                    status, code, msg = _ERRORS["lost"]
                    self._reply(status, "text/xml", _error_xml(code, msg))
                    return
                self._reply(status, ctype, data)

            def _reply(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._srv = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._srv.daemon_threads = True
        host, port = self._srv.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._srv.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        conn = http.client.HTTPConnection(*self._up, timeout=60)
        try:
            headers = {k: v for k, v in headers.items() if k.lower() not in ("connection", "keep-alive")}
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type", "text/xml"), resp.read()
        finally:
            conn.close()

    def stop(self) -> None:
        if self._srv is not None:
            self._srv.shutdown()
            self._srv.server_close()
            self._srv = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
