"""HTTP front end of the stand-in API server: routing, verbs, watch streams, discovery.

Runs on :class:`http.server.ThreadingHTTPServer` (one thread per connection, HTTP/1.1
keep-alive), so a watch — a chunked response that stays open — never blocks other
requests. Paths, verbs, query parameters and status codes are those of kube-apiserver:

====================================================  ===========================================
``GET /api``, ``/apis``, ``/api/v1``, ``/apis/G/V``    discovery (APIVersions, APIGroupList, APIResourceList)
``GET /version``, ``/healthz``, ``/livez``, ``/readyz``  version info, ``ok``
``GET .../R``                                         list (``labelSelector``, ``fieldSelector``, ``limit``, ``continue``)
``GET .../R?watch=true``                              watch (``resourceVersion``, ``allowWatchBookmarks``,
                                                      ``timeoutSeconds``, ``sendInitialEvents``)
``POST .../R``                                        create (201)
``GET/PUT/PATCH/DELETE .../R/NAME``                   read, update, patch (merge, strategic, JSON patch), delete
``DELETE .../R``                                      delete collection
``.../R/NAME/status``, ``.../R/NAME/scale``           status and scale (autoscaling/v1 Scale) subresources
``POST .../pods/NAME/binding``, ``.../bindings``      bind a pod (201 with a Success Status)
``POST .../pods/NAME/eviction``                       evict a pod, honouring PodDisruptionBudgets (429)
``GET /openapi/v3``, ``/openapi/v3/G/V``, ``/openapi/v2``  OpenAPI (:mod:`kube.testing._openapi`)
====================================================  ===========================================

HTTPS with a per-server CA (:mod:`kube.testing._tls`; ``tls=False`` for plain HTTP) and a
bearer token (random per server, in the kubeconfig it writes): a wrong or missing token
is ``401`` (anonymous requests may read only health and version). ``Accept: ...;as=Table``
gets server-side Tables (:mod:`kube.testing._tables`); ``dryRun=All`` (query, or
``DeleteOptions.dryRun``) checks and answers writes without storing them;
``fieldValidation`` (Strict, Warn, Ignore) checks bodies against the OpenAPI schemas.

Known deviations from a real API server (none of them visible to a scheduler that uses
the API as documented):

* One token, one user: no authorization (RBAC) and no admission webhooks.
* JSON only (no protobuf, no CBOR; only ``/openapi/v2`` answers protobuf too, to a client
  that asks for it); no server-side apply (``apply-patch`` content types answer 415).
* ``managedFields`` and ``selfLink`` are absent; field validation reports unknown fields,
  not duplicate ones.
* ``limit``/``continue`` page over the current state, not over a snapshot at the first
  page's resourceVersion; ``resourceVersionMatch`` is accepted and ignored (every list is
  served from the latest state). A watch from a resourceVersion in the future starts at
  once instead of waiting for it.
* core/v1 and events.k8s.io/v1 Events are stored separately (the real server converts one
  into the other); an Event's ``count`` is whatever the client sends.
* Validation covers what a scheduler and a controller hit (names, pod containers, pod spec
  immutability, workload selector/template, Job restartPolicy, Event namespaces, Binding
  target), not every rule. An invalid Binding target is a 422 here (the real server
  answers 500 with the validation message).
* Namespace deletion removes the namespace and its contents at once (no ``Terminating``
  phase); garbage collection of dependents runs only with ``controllers=True``.
* Bookmarks are sent every ``bookmark_interval`` seconds (real: about a minute).
* Controllers (``controllers=True``) are reduced to what a scheduler observes: a
  Deployment rollout replaces the old ReplicaSet at once (no maxSurge/maxUnavailable
  pacing); StatefulSets have no volume claims, revisions or rolling updates of existing
  pods; Job pods carry no tracking finalizer and succeed only when a client sets their
  phase; the kubelet stand-in runs no containers and no probes, and admits pods on
  ``allocatable`` (cpu, memory, pods, extended resources) only.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import http.server
import os
import re
import secrets
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from kube.testing._patch import MalformedPatch, PatchError, json_patch, merge_patch, strategic_merge_patch
from kube.testing._resources import GROUPS, RESOURCES, Resource, discovery
from kube.testing._selectors import SelectorError, field_selector, label_selector
from kube.testing._store import ApiError, Store, WatchEvent, bad_request, expired
from kube.testing._tables import table, wants_table

__all__ = ["ApiServer"]

_NOT_FOUND = ApiError(404, "NotFound", "the server could not find the requested resource", {})
_UNAUTHORIZED = ApiError(401, "Unauthorized", "Unauthorized", {})
_METHOD_NOT_ALLOWED = ApiError(
    405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
)
_VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-fluxlite.testing",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _dump(obj: Any) -> bytes:
    return orjson.dumps(obj)


def _list_item(obj: dict) -> dict:
    """Items of a typed list carry no kind/apiVersion, as on the wire from a real server."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _same(obj: Any, old: Any = None) -> Any:
    return obj


def _views(res: Resource) -> tuple[Resource, Any, Any]:
    """(stored resource, view -> stored, stored -> view) of a resource served in a second version
    (autoscaling/v1 HPAs, stored as v2); the identity for every other resource."""
    if (res.group, res.version, res.plural) == ("autoscaling", "v1", "horizontalpodautoscalers"):
        from kube.testing._hpa import HPA, v1_to_v2, v2_to_v1

        return HPA, v1_to_v2, v2_to_v1
    return res, _same, _same


class _Route:
    __slots__ = ("name", "namespace", "res", "sub")

    def __init__(self, res: Resource, namespace: str | None, name: str | None, sub: str | None) -> None:
        self.res, self.namespace, self.name, self.sub = res, namespace, name, sub


def _route(parts: list[str]) -> _Route | dict | None:
    """Resolve a path (split on '/') to a resource route, a discovery document, or None (404)."""
    if parts[0] == "api":
        if len(parts) == 1:
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
            }
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) == 1:
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": g,
                        "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                        "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                    }
                    for g, vs in GROUPS.items()
                ],
            }
        if parts[1] not in GROUPS:
            return None
        if len(parts) == 2:
            vs = GROUPS[parts[1]]
            return {
                "kind": "APIGroup",
                "apiVersion": "v1",
                "name": parts[1],
                "versions": [{"groupVersion": f"{parts[1]}/{v}", "version": v} for v in vs],
                "preferredVersion": {"groupVersion": f"{parts[1]}/{vs[0]}", "version": vs[0]},
            }
        group, version, rest = parts[1], parts[2], parts[3:]
        if version not in GROUPS[group]:
            return None
    else:
        return None
    if group == "" and version != "v1":
        return None
    if not rest:
        return discovery(group, version)
    namespace = None
    if rest[0] == "namespaces" and len(rest) == 3 and rest[2] in ("status", "finalize"):
        if rest[2] == "finalize":
            return None
        return _Route(RESOURCES[("", "v1", "namespaces")], "", rest[1], "status")
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
        if group == "" and rest[0] == "bindings" and len(rest) == 1:
            return _Route(Resource("", "v1", "bindings", "Binding", True, "binding"), namespace, None, None)
        res = RESOURCES.get((group, version, rest[0]))
        if res is None or not res.namespaced:
            return None
    else:
        res = RESOURCES.get((group, version, rest[0]))
        if res is None or (res.namespaced and len(rest) > 1):
            return None
    if len(rest) > 3:
        return None
    sub = rest[2] if len(rest) == 3 else None
    if sub is not None and sub not in res.subresources:
        return None
    return _Route(res, namespace if res.namespaced else "", rest[1] if len(rest) > 1 else None, sub)


def _flag(query: dict[str, str], key: str) -> bool:
    return query.get(key, "").lower() in ("true", "1")


#: kube-apiserver's ``MaxRequestBodyBytes``: a longer body is 413 and is not read
MAX_BODY = 3 * 1024 * 1024
_DISCARD = 256 * 1024  # an unauthenticated caller's body discarded after the 401, at most
_MAX_HEADER_LINE = 65536  # http.client's limits, kept by the header reader below
_MAX_HEADERS = 100
_VERSION_RE = re.compile(r"HTTP/(\d{1,10})\.(\d{1,10})")
_date_cache: tuple[int, str] = (0, "")


class _TooLarge(Exception):
    pass


class _Headers(dict):
    """Request headers by lower-case name; a repeated header keeps its first value (as
    ``email.message.Message.get``), and a repeated framing or credential header is refused."""

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> Any:
        return dict.get(self, name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-standin"
    disable_nagle_algorithm = True  # small JSON answers must not wait for delayed ACKs
    api: ApiServer  # set on the subclass per server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The ``Date`` header, formatted once per second (not once per answer)."""
        global _date_cache
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        if _date_cache[0] != now:
            _date_cache = (now, super().date_time_string(now))
        return _date_cache[1]

    def parse_request(self) -> bool:
        """``http.server``'s request parsing with the headers read directly instead of through
        the ``email`` package (which was a third of the server's CPU per Binding): the same
        request-line checks (HTTP/0.9 requests are refused, as kube-apiserver refuses them), at
        most 100 header lines of at most 64 KiB each (else 431, as there), ``Connection`` and
        ``Expect: 100-continue`` as there."""
        self.command = None
        self.request_version = "HTTP/1.0"  # error answers carry a status line (no HTTP/0.9 here)
        self.close_connection = True
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = requestline
        words = requestline.split()
        if not words:
            return False
        if len(words) != 3:
            self.send_error(400, f"Bad request syntax ({requestline[:200]!r})")
            return False
        command, path, version = words
        m = _VERSION_RE.fullmatch(version)
        if m is None:
            self.send_error(400, f"Bad request version ({version[:40]!r})")
            return False
        number = int(m.group(1)), int(m.group(2))
        if number >= (2, 0):
            self.send_error(505, f"Invalid HTTP version ({version[5:40]})")
            return False
        if number >= (1, 1):
            self.close_connection = False
        self.request_version = version
        self.command, self.path = command, ("/" + path.lstrip("/") if path.startswith("//") else path)
        headers = _Headers()
        while True:
            line = self.rfile.readline(_MAX_HEADER_LINE + 1)
            if len(line) > _MAX_HEADER_LINE:
                self.send_error(431, "Line too long", "header line longer than 65536 bytes")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            if len(headers) >= _MAX_HEADERS:
                self.send_error(431, "Too many headers", f"got more than {_MAX_HEADERS} headers")
                return False
            name, sep, value = line.decode("iso-8859-1").partition(":")
            key = name.lower()
            if not sep or not key or key != key.strip():
                self.send_error(400, f"Bad header line ({line[:80]!r})")
                return False
            if key in headers:
                if key in ("content-length", "transfer-encoding", "authorization", "host"):
                    self.send_error(400, f"Repeated header {name[:40]!r}")
                    return False
                continue
            dict.__setitem__(headers, key, value.strip())
        self.headers = headers  # type: ignore[assignment]
        conntype = headers.get("connection", "").lower()
        if conntype == "close":
            self.close_connection = True
        elif conntype == "keep-alive":
            self.close_connection = False
        if headers.get("expect", "").lower() == "100-continue" and number >= (1, 1):
            return self.handle_expect_100()
        return True

    def setup(self) -> None:
        """The TLS handshake runs here, on the connection's own thread (not in accept)."""
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    # -- plumbing ----------------------------------------------------------------------------

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else _dump(body)
        self.send_response(code)
        for text in getattr(self, "_warnings", ()):
            self.send_header("Warning", '299 - "' + text.replace('"', "'")[:200] + '"')
        self._warnings = []
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        if self.close_connection:
            self.send_header("Connection", "close")
        self._headers_buffer.append(b"\r\n" + data)  # headers and body in one send
        self.flush_headers()

    def _error(self, err: ApiError) -> None:
        self._send(err.code, err.status())

    def _chunked(self) -> bool:
        return "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()

    def _read_body(self) -> None:
        """Read the whole request body (at most :data:`MAX_BODY` bytes, else :class:`_TooLarge`)
        before answering: an unread body would be taken for the next request on this keep-alive
        connection.  Only for an authenticated caller (see :meth:`_dispatch`)."""
        if self._chunked():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline(1024)
                    break
                total += size
                if total > MAX_BODY:
                    raise _TooLarge
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
            self._raw = b"".join(chunks)
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise _TooLarge
            self._raw = self.rfile.read(length) if length > 0 else b""

    def _has_body(self) -> bool:
        return bool(self._raw.strip())

    def _body(self) -> Any:
        if not self._raw:
            raise bad_request("the request body is empty")
        try:
            return orjson.loads(self._raw)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"the request body is not valid JSON: {exc}") from exc

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [p for p in url.path.split("/") if p]
        self.api._count(method, parts, query)
        self._raw = b""
        try:
            # who is asking, before reading what they send: an unauthenticated caller's body is
            # never read (the connection closes after the 401 instead)
            self._authenticate(method, parts)
        except ApiError as err:
            # as Go's net/http behind kube-apiserver: after the answer, a short unread body
            # (at most 256 KiB) is discarded so the connection can go on; a longer or chunked
            # one is never read and the connection closes
            try:
                length = -1 if self._chunked() else int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= _DISCARD:
                self.close_connection = True
            self._error(err)
            if length > 0 and not self.close_connection:
                self.rfile.read(length)
            return
        try:
            self._read_body()
        except _TooLarge:
            self.close_connection = True
            self._error(
                ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}", {})
            )
            return
        except (ValueError, OSError):
            self.close_connection = True
            return
        try:
            if method == "GET" and parts and parts[0] in ("healthz", "livez", "readyz") and len(parts) == 1:
                self._send(200, b"ok", "text/plain; charset=utf-8")
                return
            if method == "GET" and parts == ["version"]:
                self._send(200, _VERSION)
                return
            if not parts:
                if method != "GET":
                    raise _METHOD_NOT_ALLOWED
                self._send(
                    200,
                    {
                        "paths": [
                            "/api",
                            "/api/v1",
                            "/apis",
                            *[f"/apis/{g}/{v}" for g, vs in GROUPS.items() for v in vs],
                            "/healthz",
                            "/openapi/v2",
                            "/openapi/v3",
                            "/version",
                        ]
                    },
                )
                return
            if parts[0] == "openapi" and method == "GET":
                self._openapi(parts[1:])
                return
            if parts[0] == "fluxlite-testing" and len(parts) == 2:
                self._admin(method, parts[1])
                return
            route = _route(parts)
            if route is None:
                raise _NOT_FOUND
            if isinstance(route, dict):
                if method != "GET":
                    raise _METHOD_NOT_ALLOWED
                self._send(200, route)
                return
            dry = query.get("dryRun")
            if dry is None and method == "DELETE" and self._has_body():  # DeleteOptions.dryRun
                body = self._body()
                if isinstance(body, dict) and body.get("dryRun"):
                    dry = ",".join(map(str, body["dryRun"])) if isinstance(body["dryRun"], list) else "?"
            if dry is not None:
                if dry != "All":
                    raise bad_request(f'dryRun: Unsupported value: "{dry[:64]}": supported values: "All"')
                if method in ("POST", "PUT", "PATCH", "DELETE"):
                    with self.api.store.dry_run():
                        self._resource(method, route, query)
                    return
            self._resource(method, route, query)
        except ApiError as err:
            self._error(err)
        except MalformedPatch as exc:
            self._error(bad_request(str(exc)))
        except PatchError as exc:  # as the real server answers a JSON patch that does not apply
            self._error(ApiError(422, "Invalid", str(exc), {}))
        except (SelectorError, ValueError, TypeError, KeyError) as exc:
            self._error(bad_request(f"{type(exc).__name__}: {exc}"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug here: answer as the real server answers a panic
            self._error(ApiError(500, "InternalError", f"Internal error occurred: {exc!r}", {}))

    def _authenticate(self, method: str, parts: list[str]) -> None:
        """Bearer token authentication, as kube-apiserver's token authenticator: a wrong token
        is 401 everywhere; no token at all is the anonymous user, who may read only the
        health and version endpoints (``system:public-info-viewer``)."""
        header = self.headers.get("Authorization")
        if header is None:
            if method == "GET" and len(parts) == 1 and parts[0] in ("healthz", "livez", "readyz", "version"):
                return
            raise _UNAUTHORIZED
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), self.api.token.encode()
        ):
            raise _UNAUTHORIZED

    def _openapi(self, parts: list[str]) -> None:
        """``/openapi/v3`` (index), ``/openapi/v3/<group version>``, ``/openapi/v2`` (JSON only)."""
        from kube.testing import _openapi

        if parts == ["v3"]:
            self._send(200, _openapi.v3_index())
            return
        if parts[:1] == ["v3"]:
            doc = _openapi.v3_document("/".join(parts[1:]))
            if doc is None:
                raise _NOT_FOUND
            self._send(200, doc)
            return
        if parts == ["v2"]:
            accept = self.headers.get("Accept") or "*/*"
            if "protobuf" in accept and "application/json" not in accept:  # as kube-apiserver decides
                self._send(200, _openapi.v2_protobuf(), _openapi.V2_PROTOBUF)
                return
            if not any(t in accept for t in ("application/json", "*/*")):
                raise ApiError(
                    406, "NotAcceptable",
                    f"served: application/json, {_openapi.V2_PROTOBUF}; not {accept[:200]}", {},
                )  # fmt: skip
            self._send(200, _openapi.v2_document())
            return
        raise _NOT_FOUND

    def _admin(self, method: str, what: str) -> None:
        """Test-server-only controls for a server in another process (not part of the Kubernetes API)."""
        if (method, what) == ("POST", "compact"):
            self._send(200, {"resourceVersion": str(self.api.compact())})
        elif (method, what) == ("GET", "request-counts"):
            self._send(200, self.api.request_counts())
        else:
            raise _NOT_FOUND

    do_GET = lambda self: self._dispatch("GET")  # noqa: E731
    do_POST = lambda self: self._dispatch("POST")  # noqa: E731
    do_PUT = lambda self: self._dispatch("PUT")  # noqa: E731
    do_PATCH = lambda self: self._dispatch("PATCH")  # noqa: E731
    do_DELETE = lambda self: self._dispatch("DELETE")  # noqa: E731

    # -- verbs -------------------------------------------------------------------------------

    def _resource(self, method: str, route: _Route, query: dict[str, str]) -> None:
        store = self.api.store
        res, ns, name, sub = route.res, route.namespace, route.name, route.sub
        if res.plural == "bindings":
            if method != "POST":
                raise _METHOD_NOT_ALLOWED
            body = self._body()
            pod = (body.get("metadata") or {}).get("name") or ""
            store.bind(ns, pod, body)
            self._send(
                201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            )
            return
        stored, to_stored, view = _views(res)
        if name is None:
            if method == "GET":
                if _flag(query, "watch"):
                    self._watch(res, ns, query)
                else:
                    self._list(res, ns, query)
            elif method == "POST" and ns is not None:
                self._send(201, view(store.create(stored, ns, to_stored(self._checked(res, self._body(), query)))))
            elif method == "DELETE" and ns is not None:
                self._delete_collection(res, ns, query)
            else:
                raise _METHOD_NOT_ALLOWED
            return
        if sub == "binding":
            if method != "POST":
                raise _METHOD_NOT_ALLOWED
            store.bind(ns, name, self._body())
            self._send(
                201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            )
            return
        if sub == "eviction":
            if method != "POST":
                raise _METHOD_NOT_ALLOWED
            from kube.testing._eviction import evict

            evict(store, ns, name, self._body())
            self._send(
                201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            )
            return
        if sub == "scale":
            if method == "GET":
                self._send(200, store.get_scale(res, ns, name))
            elif method == "PUT":
                body = self._body()
                self._send(200, store.set_scale(res, ns, name, lambda _old: body))
            elif method == "PATCH":
                patch = self._patcher()
                self._send(200, store.set_scale(res, ns, name, patch))
            else:
                raise _METHOD_NOT_ALLOWED
            return
        if method == "GET":
            obj = store.get(stored, ns, name)
            if sub is None and self._table():
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                self._send(200, table(res.plural, [obj], meta, query.get("includeObject", "Metadata")))
            else:
                self._send(200, view(obj))
        elif method == "PUT":
            body = self._checked(res, self._body(), query)
            if stored is not res:
                body = to_stored(body, store.get(stored, ns, name))
            self._send(200, view(store.update(stored, ns, name, body, sub)))
        elif method == "PATCH":
            patch = self._patcher()
            self._send(200, view(store.mutate(
                stored, ns, name, lambda o: to_stored(self._checked(res, patch(view(o)), query), o), sub
            )))  # fmt: skip
        elif method == "DELETE" and sub is None:
            options = self._delete_options(query)
            if options.get("propagationPolicy") == "Orphan":
                self.api._orphan(store.get(stored, ns, name))
            self._send(200, view(store.delete(stored, ns, name, options)))
        else:
            raise _METHOD_NOT_ALLOWED

    def _checked(self, res: Resource, obj: Any, query: dict[str, str]) -> Any:
        """``fieldValidation``: Strict refuses fields the kind does not have (400, as the real
        server's strict decoding), Warn (the default) answers them in a ``Warning`` header."""
        mode = query.get("fieldValidation", "Warn")
        if mode not in ("Strict", "Warn", "Ignore"):
            raise bad_request(f"fieldValidation: Unsupported value {mode[:32]!r}: Strict, Warn, Ignore")
        if mode == "Ignore" or not isinstance(obj, dict):
            return obj
        from kube.testing._openapi import unknown_fields

        found = unknown_fields(res.group, res.version, res.kind, obj)
        if found and mode == "Strict":
            listed = ", ".join(f'unknown field "{f}"' for f in found[:20])
            raise bad_request(f"strict decoding error: {listed}")
        self._warnings = [f'unknown field "{f}"' for f in found[:20]]
        return obj

    def _delete_options(self, query: dict[str, str]) -> dict:
        options: dict = {}
        if self._has_body():
            options = self._body()
            if not isinstance(options, dict):
                raise bad_request("DeleteOptions must be a JSON object")
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if options.get("orphanDependents") is True:
            options["propagationPolicy"] = "Orphan"
        if options.get("propagationPolicy") not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request(f"propagationPolicy: Unsupported value: {options['propagationPolicy']!r}")
        return options

    def _patcher(self):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        patch = self._body()
        if ctype == "application/merge-patch+json":
            return lambda obj: merge_patch(obj, patch)
        if ctype == "application/strategic-merge-patch+json":
            return lambda obj: strategic_merge_patch(obj, patch)
        if ctype == "application/json-patch+json":
            return lambda obj: json_patch(obj, patch)
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {ctype or 'none'})",
        )

    def _selector(self, res: Resource, query: dict[str, str]):
        by_label = label_selector(query.get("labelSelector"))
        by_field = field_selector(query.get("fieldSelector"), res.field_labels)
        return lambda obj: by_label(obj) and by_field(obj)

    def _list(self, res: Resource, ns: str | None, query: dict[str, str]) -> None:
        items, rv = self.api.store.list(res, ns or None, self._selector(res, query))
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        start = 0
        if query.get("continue"):
            try:
                token = orjson.loads(base64.urlsafe_b64decode(query["continue"].encode()))
                start_key = (token["ns"], token["name"])
            except Exception as exc:
                raise bad_request("continue key is not valid: invalid continue token") from exc
            start = next(
                (
                    i
                    for i, o in enumerate(items)
                    if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start_key
                ),
                len(items),
            )
        limit = int(query.get("limit") or 0)
        page = items[start : start + limit] if limit > 0 else items[start:]
        if limit > 0 and start + limit < len(items):
            last = page[-1]["metadata"]
            meta["continue"] = base64.urlsafe_b64encode(
                _dump({"rv": rv, "ns": last.get("namespace", ""), "name": last["name"]})
            ).decode()
            meta["remainingItemCount"] = len(items) - start - limit
        if self._table():
            self._send(200, table(res.plural, page, meta, query.get("includeObject", "Metadata")))
            return
        self._send(
            200,
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": meta,
                "items": [_list_item(_views(res)[2](o)) for o in page],
            },
        )

    def _table(self) -> bool:
        return wants_table(self.headers.get("Accept"))

    def _delete_collection(self, res: Resource, ns: str, query: dict[str, str]) -> None:
        store = self.api.store
        options = self._delete_options(query)
        items, _ = store.list(res, ns or None, self._selector(res, query))
        deleted = []
        for obj in items:
            with contextlib.suppress(ApiError):
                deleted.append(
                    store.delete(res, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], options)
                )
        self._send(
            200,
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(store.rv)},
                "items": [_list_item(o) for o in deleted],
            },
        )

    # -- watch -------------------------------------------------------------------------------

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, res: Resource, ns: str | None, query: dict[str, str]) -> None:
        store, api = self.api.store, self.api
        wake = store.watch_cond(res)  # notified by writes of this resource only
        match = self._selector(res, query)
        self._as_table = self._table()
        self._table_cols = True
        timeout = float(query.get("timeoutSeconds") or api.max_watch_seconds)
        deadline = time.monotonic() + min(timeout, api.max_watch_seconds)
        bookmarks = _flag(query, "allowWatchBookmarks")
        rv_text = query.get("resourceVersion", "")
        initial: list[bytes] = []
        error: ApiError | None = None
        with store.cond:
            if rv_text in ("", "0") or _flag(query, "sendInitialEvents"):
                items, last = store.list(res, ns or None, match)
                initial = [_dump({"type": "ADDED", "object": self._shown(res, o)}) for o in items]
                if _flag(query, "sendInitialEvents"):
                    initial.append(_dump(self._bookmark(res, last, initial_end=True)))
            else:
                try:
                    last = int(rv_text)
                except ValueError:
                    raise bad_request(
                        f"resourceVersion: Invalid value: {rv_text!r}: must be an integer"
                    ) from None
                try:
                    backlog = store.events_since(res, last)
                except ApiError as err:
                    error = err
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.close_connection = True
        try:
            if error is not None:
                self._chunk(_dump({"type": "ERROR", "object": error.status()}) + b"\n")
                return
            for line in initial:
                self._chunk(line + b"\n")
            if not initial:
                for event in backlog:
                    line = self._event_line(event, ns, match, res)
                    if line:
                        self._chunk(line)
                    last = event.rv
            next_bookmark = time.monotonic() + api.bookmark_interval
            while not api._stopping.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                with store.cond:
                    try:
                        events = store.events_since(res, last, open_watch=True)
                    except ApiError:
                        events = None
                    if events == []:
                        wake.wait(min(deadline, next_bookmark) - now if bookmarks else deadline - now)
                        stopping = api._stopping.is_set()
                        events = [] if stopping else store.events_since(res, last, open_watch=True)
                    current = store.rv
                if events is None:
                    self._chunk(_dump({"type": "ERROR", "object": expired(last, current).status()}) + b"\n")
                    return
                lines = []
                for event in events:
                    line = self._event_line(event, ns, match, res)
                    if line:
                        lines.append(line)
                    last = event.rv
                if lines:  # what happened meanwhile goes out in one chunk (one write, one flush)
                    self._chunk(b"".join(lines))
                if bookmarks and time.monotonic() >= next_bookmark:
                    self._chunk(_dump(self._bookmark(res, max(last, current))) + b"\n")
                    last = max(last, current)
                    next_bookmark = time.monotonic() + api.bookmark_interval
        except ApiError as err:  # the history window moved past us while waiting
            with contextlib.suppress(OSError):
                self._chunk(_dump({"type": "ERROR", "object": err.status()}) + b"\n")
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

    @staticmethod
    def _bookmark(res: Resource, rv: int, initial_end: bool = False) -> dict:
        meta: dict[str, Any] = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {
            "type": "BOOKMARK",
            "object": {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta},
        }

    def _shown(self, res: Resource, obj: dict) -> dict:
        """A watch event's object: itself, or a one-row Table when the watcher asked for Tables
        (the column definitions ride on the first one only, as from kube-apiserver)."""
        if not getattr(self, "_as_table", False):
            return _views(res)[2](obj)
        cols, self._table_cols = self._table_cols, False
        meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        return table(res.plural, [obj], meta, columns=cols)

    def _event_line(
        self, event: WatchEvent, ns: str | None, match, res: Resource | None = None
    ) -> bytes | None:
        """The event as this watcher sees it: an object leaving its selector is DELETED for it."""
        if ns and event.namespace != ns:
            return None
        now = match(event.obj)
        if event.type == "MODIFIED":
            before = event.prev is not None and match(event.prev)
            if now and before:
                kind, obj = "MODIFIED", event.obj
            elif now:
                kind, obj = "ADDED", event.obj
            elif before:
                obj = dict(event.prev)
                obj["metadata"] = {
                    **event.prev["metadata"],
                    "resourceVersion": event.obj["metadata"]["resourceVersion"],
                }
                kind = "DELETED"
            else:
                return None
        elif now:
            kind, obj = event.type, event.obj
        else:
            return None
        return _dump({"type": kind, "object": self._shown(res, obj) if res is not None else obj}) + b"\n"


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its keep-alive connection is normal, not an error to print."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError | ssl.SSLError | OSError):
            return
        super().handle_error(request, client_address)


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


class _ClientSide:
    """What a caller needs of a running server, in-process or not: its URL as a kubeconfig
    or as a configured client."""

    url: str
    token: str
    #: the CA (PEM) that signed the server's certificate; None for a plain-HTTP server
    ca_pem: bytes | None = None
    _ca_file: str | None = None

    def write_kubeconfig(self, path: str | Path, *, token: str | None = None) -> Path:
        """Write a kubeconfig for :attr:`url` (context ``fluxlite-test``, the server's bearer token),
        readable by its owner only."""
        import yaml

        if not self.url:
            raise RuntimeError("start() the API server before writing its kubeconfig")
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fluxlite-test", "cluster": self._cluster_entry()}],
            "users": [{"name": "fluxlite-test", "user": {"token": self.token if token is None else token}}],
            "contexts": [
                {
                    "name": "fluxlite-test",
                    "context": {"cluster": "fluxlite-test", "user": "fluxlite-test", "namespace": "default"},
                }
            ],
            "current-context": "fluxlite-test",
            "preferences": {},
        }
        path = Path(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(yaml.safe_dump(config, sort_keys=False))
        return path

    def _cluster_entry(self) -> dict[str, str]:
        entry = {"server": self.url}
        if self.ca_pem:
            entry["certificate-authority-data"] = base64.b64encode(self.ca_pem).decode()
        return entry

    def _ca_path(self) -> str:
        """The CA as a file (the official client wants a path), in a private directory removed at stop."""
        if self._ca_file is None:
            d = tempfile.mkdtemp(prefix="fluxlite-kube-ca-")
            self._ca_file = str(Path(d, "ca.crt"))
            Path(self._ca_file).write_bytes(self.ca_pem or b"")
        return self._ca_file

    def _drop_ca_file(self) -> None:
        if self._ca_file is not None:
            shutil.rmtree(Path(self._ca_file).parent, ignore_errors=True)
            self._ca_file = None

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` configured for this server."""
        from kubernetes import client

        if not self.url:
            raise RuntimeError("start() the API server before asking for a client")
        configuration = client.Configuration()
        configuration.host = self.url
        configuration.api_key = {"BearerToken": self.token}
        if self.ca_pem:
            configuration.ssl_ca_cert = self._ca_path()
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        return client.ApiClient(configuration)


class ApiServer(_ClientSide):
    """A Kubernetes-API-compatible server on loopback (see :mod:`kube.testing`).

    *controllers* runs the workload controllers (ReplicaSet, Deployment, StatefulSet, Job),
    the garbage collector, node lifecycle taints and a kubelet stand-in (bound pods are
    admitted, then Running and Ready; terminating pods are removed) in a background thread
    (see :mod:`kube.testing._controller`). *watch_cache_size* is the number of watch events kept per resource
    type; a watch from an older resourceVersion gets ``410 Gone``. *bookmark_interval*
    (seconds) spaces BOOKMARK events on watches that allow them; *max_watch_seconds* caps a
    watch without ``timeoutSeconds`` (the real server's is 30 to 60 minutes).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        controllers: bool = True,
        watch_cache_size: int = 1000,
        *,
        bookmark_interval: float = 30.0,
        max_watch_seconds: float = 1800.0,
        token: str | None = None,
        tls: bool = True,
        serving_cert: Any = None,
    ) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError(f"the test API server binds loopback only, not {host!r}")
        #: the bearer token every request must carry (random unless given)
        self.token = token or secrets.token_urlsafe(24)
        self.tls = tls
        self._serving_cert = serving_cert
        self.host, self.port = host, port
        self.controllers = controllers
        self.watch_cache_size = watch_cache_size
        self.bookmark_interval = bookmark_interval
        self.max_watch_seconds = max_watch_seconds
        self.store = Store(watch_cache_size)
        self.url = ""
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._controller = None
        self._counts: dict[str, int] = {}
        self._counts_lock = threading.Lock()

    def start(self) -> ApiServer:
        """Listen and serve in a background thread; sets :attr:`url` and :attr:`port`."""
        if self._httpd is not None:
            raise RuntimeError("the API server is already running")
        if self._stopping.is_set():
            raise RuntimeError("a stopped API server cannot be started again; create a new one")
        handler = type("Handler", (_Handler,), {"api": self})
        server_class = _HTTPServer6 if ":" in self.host else _HTTPServer
        self._httpd = server_class((self.host, self.port), handler)
        self.port = self._httpd.server_address[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.tls:
            from kube.testing._tls import make_serving_cert

            cert = self._serving_cert or make_serving_cert()
            self.ca_pem = cert.ca_pem
            self._httpd.socket = cert.server_context().wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self.url = f"{'https' if self.tls else 'http'}://{host}:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="kube-apiserver", daemon=True
        )
        self._thread.start()
        if self.controllers:
            from kube.testing._controller import Controllers

            self._controller = Controllers(self.store, self._stopping)
            self._controller.start()
        return self

    def stop(self) -> None:
        """Stop serving: end open watches, stop the controllers, close the socket. Idempotent."""
        self._stopping.set()
        self.store.wake_all()
        if self._controller is not None:
            self._controller.join()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self._drop_ca_file()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def compact(self) -> int:
        """Drop all watch history (as etcd compaction does); returns the current resourceVersion."""
        return self.store.compact()

    def request_counts(self) -> dict[str, int]:
        """Requests served so far by verb and resource, e.g. ``{"create pods/binding": 100,
        "watch pods": 2, "list nodes": 1}`` (for benchmarks that count API calls)."""
        with self._counts_lock:
            return dict(self._counts)

    def _count(self, method: str, parts: list[str], query: dict[str, str]) -> None:
        route = _route(parts) if parts and parts[0] in ("api", "apis") else None
        if isinstance(route, _Route):
            named = route.name is not None
            verb = {
                "GET": "get" if named else ("watch" if _flag(query, "watch") else "list"),
                "POST": "create",
                "PUT": "update",
                "PATCH": "patch",
                "DELETE": "delete" if named else "deletecollection",
            }.get(method, method.lower())
            if route.res.plural == "bindings":
                what = "pods/binding"
            else:
                what = route.res.qualified + (f"/{route.sub}" if route.sub else "")
            key = f"{verb} {what}"
        else:
            key = f"{method} {'/' + '/'.join(parts)}"
        with self._counts_lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def _orphan(self, owner: dict) -> None:
        """propagationPolicy=Orphan: drop the owner's references from its dependents."""
        uid = owner["metadata"]["uid"]
        store = self.store
        with store.cond:
            for res in RESOURCES.values():
                items, _ = store.list(res, None)
                for obj in items:
                    refs = obj["metadata"].get("ownerReferences") or []
                    if any(r.get("uid") == uid for r in refs):
                        kept = [r for r in refs if r.get("uid") != uid]

                        def drop(o: dict, kept: list = kept) -> dict:
                            if kept:
                                o["metadata"]["ownerReferences"] = kept
                            else:
                                o["metadata"].pop("ownerReferences", None)
                            return o

                        store.mutate(res, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], drop)
