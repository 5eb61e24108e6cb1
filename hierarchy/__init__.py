"""Nested scheduler instances: the gRPC service, MatchGrow/shrink up and down the tree, the launcher.

An instance (:class:`Instance`) is an engine, an optional parent and an
optional ExternalAPI provider.  It runs as a process (``fluxlite instance
serve``) serving the ``fluxlite.hierarchy.v1.Instance`` gRPC service
(``hierarchy/proto/fluxlite_instance.proto``): MatchAllocate, MatchGrow,
Shrink, Release, Heartbeat, Info, Stat and Health, with JGF (orjson text)
in ``bytes`` fields and per-level server timings in every reply.  A child
gets its whole graph by MatchAllocate at its parent; a MatchGrow climbs the
tree until a level (or the top's provider) matches, and each level on the
way down attaches the subgraph and allocates it to the job that asked;
shrink goes back up.  ``fluxlite hierarchy launch`` starts a whole tree
(:mod:`hierarchy._launch`); :class:`InstanceClient` drives an instance from
Python.  Unix sockets by default, TCP only on loopback unless TLS is
configured, and every call carries the per-tree secret.

Liveness: a child heartbeats its lease (every third of the parent's
``--child-grace`` by default); a parent frees the allocation of a child
silent for longer than the grace period, hands back upwards what it had
obtained for it, and logs it.  Retries are safe: grows, allocations and
shrinks carry request ids kept in a request table (persisted with
``--state``, like the graph, the jobs, the leases and the origin records
of attached subgraphs).

The protobuf and gRPC modules in ``hierarchy/_pb/`` are generated and
checked in.  Regenerate them from the repository root with (grpcio-tools is
a development tool, not a runtime dependency)::

    python -m grpc_tools.protoc -Ihierarchy/_pb=hierarchy/proto --python_out=. --grpc_python_out=. \
        --pyi_out=. hierarchy/proto/fluxlite_instance.proto

(the ``-Ihierarchy/_pb=hierarchy/proto`` mapping makes the generated
imports ``from hierarchy._pb import ...``).  The generated code requires
``grpcio`` and ``protobuf`` at least as new as the generator's (see
``pyproject.toml``).
"""

from hierarchy._address import Address, TlsConfig, parse_address, read_secret_file, write_secret_file
from hierarchy._client import InstanceClient, new_request_id
from hierarchy._errors import ForeignResourcesError, InstanceUnavailableError, NotAuthorizedError
from hierarchy._wire import WireError, as_jgf, is_columns
from hierarchy.base import LevelTiming, MatchOutcome, Parent, ReleaseOutcome, ShrinkOutcome
from hierarchy.instance import Instance

__all__ = [
    "Address",
    "ForeignResourcesError",
    "Instance",
    "InstanceClient",
    "InstanceUnavailableError",
    "LevelTiming",
    "MatchOutcome",
    "NotAuthorizedError",
    "Parent",
    "ReleaseOutcome",
    "ShrinkOutcome",
    "TlsConfig",
    "WireError",
    "as_jgf",
    "is_columns",
    "new_request_id",
    "parse_address",
    "read_secret_file",
    "write_secret_file",
]
