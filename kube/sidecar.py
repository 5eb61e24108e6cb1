"""Form B: a gRPC sidecar that an unmodified Fluence scheduler plugin can use as its backend.

Fluence (flux-framework/flux-k8s) is a kube-scheduler framework plugin that
asks a Fluxion sidecar, over gRPC at ``127.0.0.1:4242``, where a pod group
goes.  This server speaks the same protocol:

* ``fluxcli.FluxcliService`` (``kube/proto/fluxcli.proto``, Fluence's file
  reproduced field for field): ``Match(MatchRequest{ps, request, count})``
  places ``count`` pods shaped like ``ps`` all-or-nothing as one new job
  and answers ``MatchResponse{podID, nodelist[{nodeID, tasks}], jobID}``
  (one entry per node, ``tasks`` = pods there, nodes in placement order);
  ``Cancel(CancelRequest{jobID})`` frees the whole job.
* ``fluxlite.kube.v1.FluxliteElastic`` (``kube/proto/fluxlite_kube.proto``),
  a separate service so the Fluence one stays byte-for-byte Fluence's:
  ``Grow(GrowRequest{jobID, ps, count})`` MatchGrows the job by ``count``
  pods (all-or-nothing; the reply lists only the new pods' nodes) and
  ``Shrink(ShrinkRequest{jobID, nodelist})`` releases, for each entry,
  ``tasks`` pods of the job on ``nodeID`` (latest first) - exactly their
  vertices; ``jobGone`` says the job holds nothing any more.

Units as Fluence sends them: ``cpu`` in cores (at least one is taken),
``memory`` in bytes (rounded up to the graph's memory unit), ``gpu`` as a
count of ``gpu`` vertices; ``storage`` and ``labels`` are accepted and
ignored; ``request`` ``allocate_orelse_reserve`` is served as ``allocate``
(a Kubernetes pod cannot wait for a reservation).  Errors are gRPC status
codes: RESOURCE_EXHAUSTED (busy now), FAILED_PRECONDITION (no node can ever
hold the pod), NOT_FOUND (unknown job), INVALID_ARGUMENT (bad request).

The graph comes from the cluster's Nodes (``--nodes`` NodeList file, as
``kubectl get nodes -o json`` writes, or ``--kubeconfig``), through the
same :class:`~kube.KubeCore` as form A.  Fluence sends no credentials, so
the service listens on loopback or a Unix socket only, unless TLS is
configured (the rule of :mod:`hierarchy._address`).

The generated modules in ``kube/_pb/`` are checked in; regenerate them from
the repository root with (grpcio-tools is a development tool)::

    python -m grpc_tools.protoc -Ikube/_pb=kube/proto --python_out=. --grpc_python_out=. \
        --pyi_out=. kube/proto/fluxcli.proto kube/proto/fluxlite_kube.proto
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from concurrent import futures
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import grpc

from fluxlite.errors import BusyError, FluxliteError, InputError, RpcError, UnsatisfiableError
from hierarchy._address import Address, TlsConfig, check_listen, parse_address
from kube._core import KubeCore
from kube._model import PodRequest
from kube._pb import fluxcli_pb2 as pb
from kube._pb import fluxcli_pb2_grpc as pb_grpc
from kube._pb import fluxlite_kube_pb2 as epb
from kube._pb import fluxlite_kube_pb2_grpc as epb_grpc
from kube._quantity import ceil_units

__all__ = ["DEFAULT_ADDRESS", "NODELIST_FORMS", "Sidecar", "account_running", "pod_request_from_spec"]

log = logging.getLogger("fluxlite.kube.sidecar")

#: where Fluence's plugin dials its sidecar
DEFAULT_ADDRESS = "127.0.0.1:4242"
#: the forms of MatchResponse.nodelist (the first is the default; see the module docstring)
NODELIST_FORMS = ("per-pod", "per-node")
_TERMINAL = ("Succeeded", "Failed")


def account_running(core: KubeCore, pods: list[dict[str, Any]]) -> int:
    """Account the pods already bound to a node (not finished) on ``core``, as Fluence's server does at
    start.  Returns how many were accounted; a pod that does not fit its node's free resources (an
    overcommitted node) or names an unknown node is logged and skipped."""
    from kube._model import pod_key, pod_request

    n = 0
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in _TERMINAL:
            continue
        key = pod_key(pod)
        try:
            core.account(key, node, pod_request(pod, core.cfg))
        except FluxliteError as exc:
            log.warning("running pod %s on %s not accounted: %s", key, node, exc)
            continue
        n += 1
    return n


def pod_request_from_spec(ps: Any, core: KubeCore) -> PodRequest:
    """A Fluence ``PodSpec`` as a pod request in graph units; InputError for negative amounts."""
    if ps.cpu < 0 or ps.memory < 0 or ps.gpu < 0:
        raise InputError(f"PodSpec {ps.id!r}: cpu, memory and gpu must not be negative")
    ext = (("gpu", int(ps.gpu)),) if ps.gpu else ()
    return PodRequest(
        cores=max(1, int(ps.cpu)),
        memory=ceil_units(Fraction(int(ps.memory)), core.cfg.memory_bytes),
        extended=ext,
    )


@dataclass
class _Job:
    group: str
    pods: list[tuple[str, str]]  # (pod key, node) in placement order


def _abort(context: grpc.ServicerContext, exc: Exception) -> None:
    if isinstance(exc, BusyError):
        code = grpc.StatusCode.RESOURCE_EXHAUSTED
    elif isinstance(exc, UnsatisfiableError):
        code = grpc.StatusCode.FAILED_PRECONDITION
    elif isinstance(exc, KeyError):
        code = grpc.StatusCode.NOT_FOUND
    else:
        code = grpc.StatusCode.INVALID_ARGUMENT
    context.abort(code, str(exc.args[0]) if isinstance(exc, KeyError) else str(exc))


class _Service(pb_grpc.FluxcliServiceServicer, epb_grpc.FluxliteElasticServicer):
    def __init__(self, core: KubeCore, nodelist: str = NODELIST_FORMS[0]) -> None:
        self.core = core
        self.per_pod = nodelist == "per-pod"
        self.lock = threading.Lock()
        self.jobs: dict[int, _Job] = {}
        self._seq = itertools.count(1)

    def _nodelist(self, placed: list[tuple[str, str]]) -> list[Any]:
        if self.per_pod:
            return [pb.NodeAlloc(nodeID=node, tasks=1) for _pod, node in placed]
        per: dict[str, int] = {}
        for _pod, node in placed:
            per[node] = per.get(node, 0) + 1
        return [pb.NodeAlloc(nodeID=n, tasks=k) for n, k in per.items()]

    def _request(self, ps: Any, count: int) -> PodRequest:
        """The pod shape, after checking ``count`` against the cluster (no lock, nothing allocated)."""
        if count < 1:
            raise InputError(f"count must be >= 1, got {count}")
        req = pod_request_from_spec(ps, self.core)
        most = self.core.capacity(req)
        if count > most:
            raise UnsatisfiableError(
                f"count {count}: the cluster could hold at most {most} pods of {req.cores} core(s), "
                f"{req.memory} x {self.core.cfg.memory_unit} memory"
                + "".join(f", {n} {t}" for t, n in req.extended)
            )
        return req

    def _place(self, group: str, req: PodRequest, count: int) -> list[tuple[str, str]]:
        seq = next(self._seq)
        keys = [f"{group}#{seq}.{i}" for i in range(count)]
        placed = self.core.place_gang(keys, group, req)
        return [(k, p.node) for k, p in zip(keys, placed)]

    # -- fluxcli.FluxcliService
    def Match(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            if request.request not in ("", "allocate", "allocate_orelse_reserve"):
                raise InputError(f"unknown request {request.request!r} (allocate, allocate_orelse_reserve)")
            req = self._request(request.ps, request.count)
            with self.lock:
                group = f"fluence/{request.ps.id or 'job'}/{next(self._seq)}"
                placed = self._place(group, req, request.count)
                jobid = self.core.pods[placed[0][0]].jobid
                self.jobs[jobid] = _Job(group, placed)
        except (BusyError, UnsatisfiableError, InputError) as exc:
            log.info("Match %.64r x%d: %s", request.ps.id, request.count, exc)
            _abort(context, exc)
            raise AssertionError("unreachable") from exc
        return pb.MatchResponse(podID=request.ps.id, nodelist=self._nodelist(placed), jobID=jobid)

    def Cancel(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.lock:
            job = self.jobs.pop(request.jobID, None)
            if job is None:
                _abort(context, KeyError(f"unknown job {request.jobID}"))
            assert job is not None
            for key, _node in reversed(job.pods):
                self.core.release(key)
            return pb.CancelResponse(jobID=request.jobID, error=0)

    # -- fluxlite.kube.v1.FluxliteElastic
    def Grow(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            req = self._request(request.ps, request.count)
            with self.lock:
                job = self.jobs.get(request.jobID)
                if job is None:
                    raise KeyError(f"unknown job {request.jobID}")
                placed = self._place(job.group, req, request.count)
                job.pods.extend(placed)
        except (KeyError, BusyError, UnsatisfiableError, InputError) as exc:
            _abort(context, exc)
            raise AssertionError("unreachable") from exc
        return pb.MatchResponse(podID=request.ps.id, nodelist=self._nodelist(placed), jobID=request.jobID)

    def Shrink(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.lock:
            job = self.jobs.get(request.jobID)
            try:
                if job is None:
                    raise KeyError(f"unknown job {request.jobID}")
                if not request.nodelist:
                    raise InputError("nodelist is empty: name the nodes and how many pods to release")
                doomed: list[tuple[str, str]] = []
                for na in request.nodelist:
                    if na.tasks < 1:
                        raise InputError(f"node {na.nodeID}: tasks must be >= 1, got {na.tasks}")
                    mine = [pn for pn in reversed(job.pods) if pn[1] == na.nodeID and pn not in doomed]
                    if len(mine) < na.tasks:
                        raise InputError(
                            f"job {request.jobID} has {len(mine)} pod(s) on {na.nodeID}, cannot release {na.tasks}"
                        )
                    doomed.extend(mine[: na.tasks])
            except (KeyError, InputError) as exc:
                _abort(context, exc)
                raise AssertionError("unreachable") from exc
            for pn in doomed:
                self.core.release(pn[0])
                job.pods.remove(pn)
            gone = not job.pods
            if gone:
                del self.jobs[request.jobID]
            return epb.ShrinkResponse(jobID=request.jobID, released=len(doomed), jobGone=gone)


class Sidecar:
    """The gRPC server of form B around a :class:`KubeCore`.  ``start()``, ``address``, ``stop()``."""

    def __init__(
        self,
        core: KubeCore,
        listen: str = DEFAULT_ADDRESS,
        tls: TlsConfig | None = None,
        workers: int = 8,
        nodelist: str = NODELIST_FORMS[0],
    ) -> None:
        if nodelist not in NODELIST_FORMS:
            raise InputError(f"nodelist form {nodelist!r}: expected one of {', '.join(NODELIST_FORMS)}")
        self.core = core
        self.service = _Service(core, nodelist)
        addr = parse_address(listen)
        check_listen(addr, tls)
        if addr.kind == "unix" and os.path.exists(addr.path):
            os.unlink(addr.path)  # a stale socket of a previous run
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fluence")
        )
        pb_grpc.add_FluxcliServiceServicer_to_server(self.service, self.server)
        epb_grpc.add_FluxliteElasticServicer_to_server(self.service, self.server)
        try:
            if tls is not None and tls.enabled:
                port = self.server.add_secure_port(addr.target, tls.server_credentials())
            else:
                port = self.server.add_insecure_port(addr.target)
        except RuntimeError as exc:
            raise RpcError(f"cannot listen on {addr.target}: {exc}") from exc
        if addr.kind == "tcp":
            if port == 0:
                raise RpcError(f"cannot listen on {addr.target}")
            addr = addr.with_port(port)
        self.address: Address = addr

    def start(self) -> Sidecar:
        self.server.start()
        return self

    def stop(self, grace: float | None = 0.5) -> None:
        self.server.stop(grace).wait(timeout=10)
