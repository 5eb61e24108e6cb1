"""An API-compatible Kubernetes API server on loopback, for tests and benchmarks.

No real kube-apiserver can be installed on these machines, so the shim's tests and
``fluxlite bench kube`` run against this stand-in. It speaks the real REST API over real
HTTP (the official ``kubernetes`` client talks to it unchanged) with the same JSON shapes,
status codes and semantics, for the part of the API a scheduler uses:

* core/v1 ``nodes`` (cluster-scoped, ``status`` subresource), ``pods`` (``binding`` and
  ``status`` subresources), ``events``, ``namespaces``; events.k8s.io/v1 ``events``;
  apps/v1 ``replicasets`` (``scale`` subresource), ``deployments``, ``statefulsets``;
  batch/v1 ``jobs``.
* verbs get, list (``labelSelector``, ``fieldSelector``, ``limit``/``continue``), watch
  (chunked JSON lines, ``resourceVersion``, bookmarks, ``timeoutSeconds``, ``410 Gone``
  after :meth:`ApiServer.compact`), create (``generateName``), update (optimistic
  concurrency on ``resourceVersion``), patch (merge, strategic merge, JSON patch) and delete.
* errors are ``Status`` objects with the real reasons and codes (404 NotFound,
  409 AlreadyExists / Conflict, 422 Invalid, 410 Expired, 405 MethodNotAllowed, ...).
* one global, monotonically increasing ``resourceVersion``; ``uid``,
  ``creationTimestamp``, ``generation``.

With ``controllers=True`` a ReplicaSet controller runs inside the server (a thread woken by
writes): it creates pods from the template (``generateName`` = name + ``-``, an owner
reference with ``controller: true``) and deletes surplus pods (unbound first, then the
newest), and keeps ``status.replicas`` current. Nothing schedules pods: there is no default
scheduler; a test plays "another scheduler" by binding pods itself.

Usage::

    from kube.testing import ApiServer
    srv = ApiServer(host="127.0.0.1", port=0, controllers=True, watch_cache_size=1000)
    srv.start()                  # background thread; srv.url == "http://127.0.0.1:PORT"
    srv.write_kubeconfig(path)   # for kubernetes.config.load_kube_config(config_file=path)
    srv.api_client()             # a kubernetes.client.ApiClient configured for it
    srv.compact()                # drop watch history: older resourceVersions get 410 Gone
    srv.stop()

    python -m kube.testing --port 0 --kubeconfig FILE   # prints the URL; runs until SIGTERM/SIGINT

Client quirk: ``CoreV1Api.create_namespaced_binding`` answers, like the real server, with a
``Status`` (``code: 201``); the generated client tries to deserialize it as a ``V1Binding``
and raises ``ValueError`` (``target`` must not be None). Call it with
``_preload_content=False`` (and read ``resp.status``), as kube-scheduler users of the
Python client do.

Known deviations from a real API server are listed in :mod:`kube.testing._server`.
"""

from __future__ import annotations

from kube.testing._server import ApiServer

__all__ = ["ApiServer"]
