"""An API-compatible Kubernetes API server on loopback, for tests and benchmarks.

No real kube-apiserver can be installed on these machines, so the shim's tests and
``fluxlite bench kube`` run against this stand-in. It speaks the real REST API over real
HTTP (the official ``kubernetes`` client talks to it unchanged) with the same JSON shapes,
status codes and semantics, for the part of the API a scheduler uses:

* core/v1 ``nodes`` (cluster-scoped, ``status`` subresource), ``pods`` (``binding`` and
  ``status`` subresources), ``events``, ``namespaces``, ``configmaps``; events.k8s.io/v1
  ``events``; apps/v1 ``replicasets``, ``deployments``, ``statefulsets`` (``scale``
  subresources); batch/v1 ``jobs``; coordination.k8s.io/v1 ``leases`` (leader election).
* verbs get, list (``labelSelector``, ``fieldSelector``, ``limit``/``continue``), watch
  (chunked JSON lines, ``resourceVersion``, bookmarks, ``timeoutSeconds``, ``410 Gone``
  after :meth:`ApiServer.compact`), create (``generateName``), update (optimistic
  concurrency on ``resourceVersion``), patch (merge, strategic merge, JSON patch) and delete.
* errors are ``Status`` objects with the real reasons and codes (404 NotFound,
  409 AlreadyExists / Conflict, 422 Invalid, 410 Expired, 405 MethodNotAllowed, ...).
* one global, monotonically increasing ``resourceVersion``; ``uid``,
  ``creationTimestamp``, ``generation``.

With ``controllers=True`` (the default) what kube-controller-manager and the kubelets do
runs inside the server, in a thread woken by writes (see :mod:`kube.testing._controller`):

* ReplicaSet controller: pods from the template (``generateName`` = name + ``-``, an owner
  reference with ``controller: true``); surplus pods deleted unbound first, then Pending
  before Running, then newest; ``status.replicas``/``readyReplicas``; Events.
* Deployment (one ReplicaSet ``<name>-<pod-template-hash>`` per template), StatefulSet
  (pods ``<name>-0..N-1``, ``OrderedReady``: ordinal i+1 only once i is Running and Ready)
  and Job (``parallelism``/``completions``) controllers; garbage collection of dependents.
* node lifecycle: a cordoned node gets the ``node.kubernetes.io/unschedulable`` taint, a
  node whose Ready condition is not True the ``node.kubernetes.io/not-ready`` taints;
  pods bound to a deleted node are garbage-collected.
* a kubelet stand-in: a pod bound to a node is admitted against the node's labels
  (``nodeSelector``, required node affinity; else reason ``NodeAffinity``) and
  ``allocatable`` (else ``OutOfcpu`` etc.), as a real kubelet rejects a wrong or
  overcommitting scheduler's pod, and becomes Running and Ready at once; a deleted bound
  pod (graceful deletion: ``deletionTimestamp`` first) is then removed.

Nothing schedules pods: there is no default scheduler; a test plays "another scheduler" by
binding pods itself. With ``controllers=False`` there is no kubelet either, so a bound pod
deleted without ``grace_period_seconds=0`` stays Terminating, as on a node whose kubelet
is gone.

:meth:`ApiServer.request_counts` tells how many requests of each kind the server served
(``"create pods/binding"``, ``"watch pods"``, ``"list nodes"``, ...), for benchmarks.

Usage::

    from kube.testing import ApiServer
    srv = ApiServer(host="127.0.0.1", port=0, controllers=True, watch_cache_size=1000)
    srv.start()                  # background thread; srv.url == "http://127.0.0.1:PORT"
    srv.write_kubeconfig(path)   # for kubernetes.config.load_kube_config(config_file=path)
    srv.api_client()             # a kubernetes.client.ApiClient configured for it
    srv.compact()                # compaction: new watches from older resourceVersions get 410 Gone
    srv.stop()

    python -m kube.testing --port 0 --kubeconfig FILE   # prints the URL; runs until SIGTERM/SIGINT

    from kube.testing import ApiServerProcess   # the same, in a child process (for benchmarks:
    with ApiServerProcess() as srv: ...         # the server then does not share the GIL)

Client quirk: a binding is answered, as by the real server, with a ``Status``
(``{"kind": "Status", "status": "Success", "code": 201}``, HTTP 201); the generated client
(``CoreV1Api.create_namespaced_binding`` / ``create_namespaced_pod_binding``) tries to read
it as a ``V1Binding`` and raises ``ValueError`` (with kubernetes 37: a pydantic
``ValidationError``, "target: Input should be a valid dictionary") although the pod *was*
bound. Call them with ``_preload_content=False``, check ``resp.status == 201`` and read
the body (``resp.data``) before reusing the connection. Likewise ``delete_node`` and
friends declare ``V1Status`` but a real server answers with the deleted object.

Known deviations from a real API server are listed in :mod:`kube.testing._server`.
"""

from __future__ import annotations

from kube.testing._process import ApiServerProcess
from kube.testing._server import ApiServer

__all__ = ["ApiServer", "ApiServerProcess"]
