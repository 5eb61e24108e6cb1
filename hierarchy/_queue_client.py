"""Client of an instance's batch queue (``fluxlite.queue.v1.Queue``): typed calls, fluxlite errors.

With a :class:`~hierarchy._identity.Credential` every call carries a fresh
user token for the instance (its name is asked once with Health); the
secret may be given as bytes or as the path of the secret file.  With a
:class:`~hierarchy._address.TlsConfig` (``tls=``) the channel is TLS, as
:class:`~hierarchy.InstanceClient`'s: the queue service is served by the
instance, on the instance's TLS port; another host is reached only over TLS.
"""

from __future__ import annotations

import os
from typing import Any

import grpc

from hierarchy._address import SECRET_KEY, TlsConfig, check_socket_owner, parse_address, read_secret_file
from hierarchy._client import open_channel, translate_error
from hierarchy._identity import USER_KEY, Credential
from hierarchy._pb import fluxlite_instance_pb2 as pb
from hierarchy._pb import fluxlite_instance_pb2_grpc as pb_grpc
from hierarchy._pb import fluxlite_queue_pb2 as qpb
from hierarchy._pb import fluxlite_queue_pb2_grpc as qpb_grpc

__all__ = ["QueueClient"]


def _job(info: Any) -> dict[str, Any]:
    return {
        "jobid": info.jobid,
        "state": info.state,
        "size": info.size,
        "unit": info.unit,
        "walltime": info.walltime,
        "submit": info.submit,
        "start": None if info.start < 0 else info.start,
        "end": None if info.end < 0 else info.end,
        "reserved_at": None if info.reserved_at < 0 else info.reserved_at,
        "user": info.user,
        "grants": info.grants,
        "refusals": info.refusals,
        "paths": list(info.paths),
    }


class QueueClient:
    """Submit, cancel, complete, list; ``dynget``/``dynfree`` for evolving jobs."""

    def __init__(
        self,
        address: str,
        secret: str | os.PathLike[str] | bytes,
        *,
        timeout: float = 10.0,
        trusted_uids: frozenset[int] = frozenset(),
        credential: Credential | None = None,
        instance_name: str | None = None,
        tls: TlsConfig | None = None,
    ) -> None:
        """``secret`` is the secret file's path (as ``--secret-file``: mode 0600 checked), or the
        secret itself as bytes.  A string that names no file and holds no path separator is taken as
        the secret itself (the older form).  ``tls``: the CA that signs the instance's certificate
        and, for a server that asks for one, this client's certificate and key."""
        self.addr = parse_address(address)
        self.address = self.addr.target
        self.trusted_uids = trusted_uids
        self._socket_checked = self.addr.kind != "unix"
        self.timeout = timeout
        if isinstance(secret, bytes):
            sec = secret.decode()
        elif isinstance(secret, os.PathLike) or os.sep in secret or os.path.exists(secret):
            sec = read_secret_file(secret).decode()
        else:
            sec = secret
        self._md = ((SECRET_KEY, sec),)
        self.credential = credential
        self.instance_name = instance_name
        self._channel = open_channel(self.addr, tls)  # InputError: plaintext to another host
        self._stub = qpb_grpc.QueueStub(self._channel)

    def _call(self, method: str, request: Any) -> Any:
        if not self._socket_checked:  # before the secret leaves: is it our instance's socket?
            self._socket_checked = check_socket_owner(self.addr.path, self.trusted_uids)
        md = self._md
        try:
            if self.credential is not None:
                if self.instance_name is None:
                    health = pb_grpc.InstanceStub(self._channel).Health(
                        pb.HealthRequest(), timeout=self.timeout, metadata=md
                    )
                    self.instance_name = health.instance
                md = (*md, (USER_KEY, self.credential.token(self.instance_name)))
            return getattr(self._stub, method)(request, timeout=self.timeout, metadata=md)
        except grpc.RpcError as exc:
            raise translate_error(exc, self.address, method) from exc

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> QueueClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(
        self,
        size: int,
        walltime: int,
        *,
        unit: str = "node",
        priority: int = 0,
        user: str = "",
        hold_backfill: bool = False,
    ) -> dict[str, Any]:
        r = self._call(
            "Submit",
            qpb.SubmitRequest(
                size=size,
                walltime=walltime,
                unit=unit,
                priority=priority,
                user=user,
                hold_backfill=hold_backfill,
            ),
        )
        return _job(r)

    def cancel(self, jobid: int) -> dict[str, Any]:
        return _job(self._call("Cancel", qpb.JobRef(jobid=jobid)))

    def complete(self, jobid: int) -> dict[str, Any]:
        return _job(self._call("Complete", qpb.JobRef(jobid=jobid)))

    def jobs(self, jobids: list[int] | None = None) -> dict[int, dict[str, Any]]:
        r = self._call("Jobs", qpb.JobsRequest(jobids=jobids or []))
        return {j.jobid: _job(j) for j in r.jobs}

    def dynget(self, jobid: int, count: int, per_node_cores: int = 0) -> tuple[bool, dict[str, Any]]:
        r = self._call("Dynget", qpb.DyngetRequest(jobid=jobid, count=count, per_node_cores=per_node_cores))
        return r.granted, _job(r.job)

    def dynfree(self, jobid: int, paths: list[str]) -> dict[str, Any]:
        return _job(self._call("Dynfree", qpb.DynfreeRequest(jobid=jobid, paths=paths)))
