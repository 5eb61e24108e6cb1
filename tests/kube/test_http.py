"""kube._http.JsonPoster: the lean Binding transport, against a raw HTTP server and the stand-in API server."""

from __future__ import annotations

import socket
import threading

import pytest
from kubernetes import client

from kube._http import HttpError, JsonPoster


class _Raw:
    """A loopback TCP server answering each request with the next scripted bytes (None: close)."""

    def __init__(self, answers: list[bytes | None]) -> None:
        self.answers = list(answers)
        self.requests: list[bytes] = []
        self.accepted = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read_request(self, conn: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None
            buf += data
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = next(
            int(v)
            for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
            if k.lower() == b"content-length"
        )
        while len(rest) < n:
            rest += conn.recv(65536)
        return head + b"\r\n\r\n" + rest[:n], rest[n:]

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            buf = b""
            with conn:
                while self.answers:
                    got = self._read_request(conn, buf)
                    if got is None:
                        break
                    req, buf = got
                    self.requests.append(req)
                    answer = self.answers.pop(0)
                    if answer is None:
                        break
                    conn.sendall(answer)

    def close(self) -> None:
        self.sock.close()
        self.thread.join(timeout=5)


def _client(port: int, refresh=None) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.api_key = {"BearerToken": "tok"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.refresh_api_key_hook = refresh
    return client.ApiClient(cfg)


_OK = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
_PATH = "/api/v1/namespaces/{namespace}/pods/{name}/binding"


def test_keep_alive_headers_and_framings() -> None:
    chunked = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\n"
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + _OK
    refreshed = []
    srv = _Raw([_OK, chunked, interim, b"HTTP/1.1 409 Conflict\r\nContent-Length: 5\r\n\r\nnope!"])
    api = _client(srv.port, refresh=lambda cfg: refreshed.append(1))
    try:
        poster = JsonPoster(api)
        assert JsonPoster.usable(api)
        r = poster.request("POST", _PATH, {"namespace": "default", "name": "a b"}, b'{"x":1}')
        assert (r.status, r.body) == (201, b"{}")
        r = poster.request("POST", _PATH, {"namespace": "default", "name": "p2"}, b"{}")
        assert (r.status, r.body) == (201, b"abcde")
        assert poster.request("POST", _PATH, {"namespace": "default", "name": "p3"}, b"{}").status == 201
        r = poster.request("POST", _PATH, {"namespace": "default", "name": "p4"}, b"{}")
        assert (r.status, r.reason, r.body) == (409, "Conflict", b"nope!")
        assert srv.accepted == 1  # one keep-alive connection for all four
        head = srv.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
        assert head[0] == b"POST /api/v1/namespaces/default/pods/a%20b/binding HTTP/1.1"
        assert b"authorization: Bearer tok" in head
        assert b"Content-Type: application/json" in head and b"Content-Length: 7" in head
        assert any(h.startswith(b"User-Agent: ") for h in head)
        assert srv.requests[0].endswith(b'{"x":1}')
        assert len(refreshed) == 4  # the token refresh hook runs per request, as in the client
        poster.close()
    finally:
        srv.close()


def test_reconnects_after_close_and_reports_broken_answers() -> None:
    closing = b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    srv = _Raw(
        [
            closing,
            _OK,
            None,
            b"HTTP/1.1 2x1 Bad\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n",
        ]
    )
    poster = JsonPoster(_client(srv.port))
    try:
        params = {"namespace": "default", "name": "p"}
        assert poster.request("POST", _PATH, params, b"{}").status == 201
        assert poster.request("POST", _PATH, params, b"{}").status == 201  # a new connection
        with pytest.raises(HttpError, match="closed"):  # no answer at all
            poster.request("POST", _PATH, params, b"{}")
        with pytest.raises(HttpError, match="status line"):
            poster.request("POST", _PATH, params, b"{}")
        with pytest.raises(HttpError, match="too large"):
            poster.request("POST", _PATH, params, b"{}")
        assert srv.accepted == 4  # closing, keep-alive (answered, then dropped), bad status, too large
    finally:
        poster.close()
        srv.close()


def test_refuses_header_injection_and_proxies() -> None:
    api = _client(1)
    api.configuration.api_key = {"BearerToken": "tok\r\nX-Evil: 1"}
    with pytest.raises(ValueError, match="invalid request header"):
        JsonPoster(api).request("POST", _PATH, {"namespace": "d", "name": "p"}, b"{}")
    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:1"
    cfg.proxy = "http://127.0.0.1:3"
    assert not JsonPoster.usable(client.ApiClient(cfg))


def test_binding_over_tls_to_the_standin_verifies_like_the_client(tmp_path) -> None:
    import ssl

    from kubernetes.client.exceptions import ApiException

    from kube.objects import node_object, pod_object
    from kube.scheduler import ClusterApi
    from kube.testing import ApiServer
    from kube.testing._resources import resource
    from kube.testing._tls import make_serving_cert

    with ApiServer(controllers=False) as srv:
        api = srv.api_client()
        pods = resource("", "v1", "pods")
        srv.store.create(resource("", "v1", "nodes"), "", node_object("n0"))
        for name in ("a", "b"):
            srv.store.create(pods, "default", pod_object(name, cpu="1", memory="1Gi"))
        capi = ClusterApi(api)
        assert capi._poster is not None  # the lean path is the one in use
        capi.bind("default", "a", "n0", {"k": "v"})
        pod = srv.store.get(pods, "default", "a")
        assert pod["spec"]["nodeName"] == "n0" and pod["metadata"]["annotations"] == {"k": "v"}
        with pytest.raises(ApiException) as exc:  # already bound: the server's 409, as from the client
            capi.bind("default", "a", "n0", {})
        assert exc.value.status == 409 and "already assigned" in exc.value.body
        capi.close()
        # another CA: the handshake fails, as it does through the client's own pool
        other = tmp_path / "other-ca.crt"
        other.write_bytes(make_serving_cert().ca_pem)
        other_api = srv.api_client()
        other_api.configuration.ssl_ca_cert = str(other)
        wrong = ClusterApi(client.ApiClient(other_api.configuration))
        with pytest.raises(ssl.SSLCertVerificationError):
            wrong.bind("default", "b", "n0", {})
        wrong.close()
        # a wrong token: 401, and the pod stays unbound
        bad_api = srv.api_client()
        bad_api.configuration.api_key = {"BearerToken": "not-the-token"}
        bad = ClusterApi(bad_api)
        with pytest.raises(ApiException) as exc:
            bad.bind("default", "b", "n0", {})
        assert exc.value.status == 401
        bad.close()
        assert "nodeName" not in srv.store.get(pods, "default", "b")["spec"]
