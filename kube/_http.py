"""Keep-alive JSON POSTs for the scheduler's hot path (one Binding per pod), lean on CPU.

Through the official client a Binding costs the scheduler about 0.8 ms of CPU: the client's
``call_api`` -> ``RESTClientObject`` -> ``PoolManager.urlopen`` -> ``HTTPConnectionPool.urlopen``
-> ``http.client`` (whose response headers go through the ``email`` parser) stack, for a
request of a few hundred bytes.  :class:`JsonPoster` keeps what matters of that stack and
drops the rest:

* the request's URL and headers (``User-Agent``, default headers, cookie, the bearer token
  with its prefix and the configuration's ``refresh_api_key_hook``) come from the client's
  own ``ApiClient.param_serialize``, called for every request;
* the connection is one the client's own urllib3 pool opens (``connection_from_url`` then
  its ``_new_conn``), so TLS is exactly the client's: CA file or data, client certificate,
  ``verify_ssl``, ``assert_hostname``, ``tls_server_name``, socket options; a connection
  is kept per thread and reused while ``is_connected`` (urllib3's own staleness check);
* only the HTTP/1.1 framing is done here: one ``sendall`` per request, the response read
  as status line, headers (bounded: 64 KiB, 100 lines) and a body by ``Content-Length``,
  ``chunked`` or read-to-close (bounded: 16 MiB).

Used only with a plain ``urllib3.PoolManager`` (no HTTP or SOCKS proxy: those need
absolute-form requests or tunnels, so they keep the client's path); see
:meth:`JsonPoster.usable`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any
from urllib.parse import urlsplit

__all__ = ["HttpError", "JsonPoster", "Response"]

_MAX_HEAD = 64 * 1024
_MAX_HEADERS = 100
_MAX_BODY = 16 * 1024 * 1024


class HttpError(OSError):
    """The connection broke or the server answered something that is not HTTP/1.x."""


class Response:
    __slots__ = ("body", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], body: bytes) -> None:
        self.status, self.reason, self.headers, self.body = status, reason, headers, body


class _Conn:
    """One urllib3 connection (connected: TLS done and verified) and what was read past the last response."""

    __slots__ = ("buf", "conn", "key", "sock")

    def __init__(self, key: tuple[str, str], conn: Any) -> None:
        self.key, self.conn = key, conn
        conn.connect()
        self.sock = conn.sock
        self.buf = b""

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken connection
            self.conn.close()

    def _more(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise HttpError("the server closed the connection")
        return data

    def _line(self, limit: int) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2 :]
                return line
            if len(self.buf) > limit:
                raise HttpError("response line too long")
            self.buf += self._more()

    def _exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            self.buf += self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, head_only: bool) -> tuple[Response, bool]:
        """(response, keep the connection).  ``head_only``: a HEAD request (no body follows)."""
        while True:
            end = self.buf.find(b"\r\n\r\n")
            while end < 0:
                if len(self.buf) > _MAX_HEAD:
                    raise HttpError("response headers too long")
                self.buf += self._more()
                end = self.buf.find(b"\r\n\r\n")
            head, self.buf = self.buf[:end], self.buf[end + 4 :]
            lines = head.split(b"\r\n")
            if len(lines) > _MAX_HEADERS + 1:
                raise HttpError("too many response headers")
            version, _, rest = lines[0].partition(b" ")
            code, _, reason = rest.partition(b" ")
            if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
                raise HttpError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
            status = int(code)
            headers: dict[str, str] = {}
            for raw in lines[1:]:
                name, sep, value = raw.partition(b":")
                if not sep or not name or name != name.strip():
                    raise HttpError(f"malformed response header: {raw[:80]!r}")
                k = name.decode("latin-1").lower()
                v = value.strip().decode("latin-1")
                headers[k] = f"{headers[k]}, {v}" if k in headers else v
            if 100 <= status < 200:
                continue  # an interim answer (we send no Expect, but a server may): the real one follows
            break
        keep = version == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        if head_only or status in (204, 304):
            return Response(status, reason.decode("latin-1"), headers, b""), keep
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts, total = [], 0
            while True:
                size_line = self._line(1024).split(b";", 1)[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    raise HttpError(f"bad chunk size {size_line[:20]!r}") from None
                if size == 0:
                    while self._line(_MAX_HEAD):  # trailers, up to the empty line
                        pass
                    break
                total += size
                if total > _MAX_BODY:
                    raise HttpError("response body too large")
                parts.append(self._exactly(size))
                if self._exactly(2) != b"\r\n":
                    raise HttpError("malformed chunk")
            body = b"".join(parts)
        elif "content-length" in headers:
            try:
                n = int(headers["content-length"])
            except ValueError:
                raise HttpError("bad Content-Length") from None
            if not 0 <= n <= _MAX_BODY:
                raise HttpError("response body too large")
            body = self._exactly(n)
        else:  # delimited by the end of the connection
            while True:
                if len(self.buf) > _MAX_BODY:
                    raise HttpError("response body too large")
                data = self.sock.recv(65536)
                if not data:
                    break
                self.buf += data
            body, self.buf, keep = self.buf, b"", False
        return Response(status, reason.decode("latin-1"), headers, body), keep


class JsonPoster:
    """Small JSON requests over per-thread keep-alive connections of an ``ApiClient`` (see the module)."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[_Conn] = []

    @staticmethod
    def usable(api_client: Any) -> bool:
        """Does the client reach its server directly through a plain urllib3 pool (no proxy)?"""
        import urllib3

        pm = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
        return type(pm) is urllib3.PoolManager and hasattr(urllib3.HTTPConnectionPool, "_new_conn")

    def request(self, method: str, resource_path: str, path_params: dict[str, str], body: bytes) -> Response:
        """Send ``body`` (JSON) and read the answer; an :class:`HttpError` or ``OSError`` when no
        complete answer came (the request may or may not have been carried out)."""
        api = self.api_client
        _m, url, headers, _b, _p = api.param_serialize(
            method=method,
            resource_path=resource_path,
            path_params=path_params,
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        parts = urlsplit(url)
        target = parts.path + ("?" + parts.query if parts.query else "")
        head = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Accept-Encoding: identity"]
        for k, v in headers.items():
            k, v = str(k), str(v)
            if any(c in k or c in v for c in "\r\n\0") or k.lower() in ("host", "content-length"):
                raise ValueError(f"invalid request header {k[:40]!r}")
            head.append(f"{k}: {v}")
        head.append(f"Content-Length: {len(body)}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        c = self._conn((parts.scheme, parts.netloc), url)
        try:
            c.sock.sendall(data)
            resp, keep = c.read_response(method == "HEAD")
        except BaseException:
            self._drop(c)
            raise
        if not keep:
            self._drop(c)
        return resp

    def _conn(self, key: tuple[str, str], url: str) -> _Conn:
        c: _Conn | None = getattr(self._local, "conn", None)
        if c is not None and (c.key != key or c.buf or not c.conn.is_connected):
            self._drop(c)  # stale: the server closed it while idle (or it holds unread bytes)
            c = None
        if c is None:
            pool = self.api_client.rest_client.pool_manager.connection_from_url(url)
            c = _Conn(key, pool._new_conn())
            self._local.conn = c
            with self._lock:
                self._conns.append(c)
        return c

    def _drop(self, c: _Conn) -> None:
        c.close()
        if getattr(self._local, "conn", None) is c:
            self._local.conn = None
        with self._lock:
            if c in self._conns:
                self._conns.remove(c)

    def close(self) -> None:
        """Close every connection (of every thread)."""
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            c.close()
