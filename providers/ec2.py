"""Amazon EC2 (and EC2 Fleet) as an ExternalAPI provider: cloud bursting for a top-level instance.

``--provider ec2:CONFIG.yaml``.  A MatchGrow that the tree cannot satisfy
reaches the top instance, which asks this provider; the provider turns the
jobspec into an EC2 request, creates the instances with boto3, and returns
them as a JGF subgraph under the instance's own root::

    cluster (the instance's root, reused) -> zone (one per availability zone, type "zone")
        -> node (name = instance id; properties: instance_type, zone, lifecycle, private_ip, launch_time)
            -> core (one per vCPU), memory (one per GB), gpu (one per GPU)

so a node with v vCPUs, m GB and g GPUs is 1 + v + m + g vertices, and the
attach point is the zone vertex (created with the first node in that zone).
The node and everything in it are marked exclusive: the job that grew gets
the whole instance.
A shrink terminates exactly the instances whose node vertices it names
(whole nodes only).

**Two modes.**  ``types``: the smallest allowed type (by vCPUs, then
memory, then GPUs; or by ``prices:``) that holds one node's cores, memory
(GB) and GPUs, ``RunInstances`` with ``MinCount``/``MaxCount`` from the
jobspec's node count (RFC 14 ranges: the provider takes what EC2 gives
within the range).  ``fleet``: one ``CreateFleet(Type="instant")`` with the
allowed types as overrides (or ``InstanceRequirements`` when
``allowed_types: any``), on-demand or spot; whatever types and zones come
back are accepted.  Instance shapes come from ``DescribeInstanceTypes``
(cached); the config may add shapes for types an endpoint does not
describe.  A ``zone`` level in the jobspec (``zone[k] -> node[n]``) asks
for ``n`` nodes in each of ``k`` distinct zones (``k`` may be a range: the
fewest zones within it); ``max_zones`` and ``zones`` in the config bound
what the provider uses.

**Nothing leaks.**  Every instance is tagged with the provider's owner
identity (``fluxlite:owner``) and the request id (``fluxlite:request``).
A journal in ``STATE_DIR`` records a request before the create call
(``creating``), after it (``created``, the instance ids) and when the
subgraph is handed out (``granted``); a snapshot (``ec2-journal.json``)
plus an append-only log (``ec2-journal.log``, one fsynced line per change),
compacted every ``journal_compact_every`` changes, with one writer (a
``flock`` on ``ec2-journal.lock`` held while the provider is open).  A
retried request id returns the same subgraph, once its instances are
checked to still run.  Create calls carry a ``ClientToken`` derived from
the request id; an unknown outcome (5xx, timeout, lost answer) is settled
by the request tag before answering (:meth:`Ec2Provider._resolve_unknown`).
:meth:`Ec2Provider.reconcile` terminates every instance of this owner that
no attached node stands for (a crash between create and attach);
:meth:`Ec2Provider.watch` finds granted instances that died.  A shrink
returns once EC2 confirms each termination (else the caller keeps the node,
draining).  ``fluxlite providers ec2 cleanup`` reconciles from the
journal, without a running instance.

**Errors.**  Every boto3 failure becomes one fluxlite error of one line
naming endpoint, region and credentials: capacity shortages and throttling
after ``max_retries`` retries -> :class:`CloudBusyError` (a BusyError:
retry later); EC2 unreachable or failing -> :class:`CloudUnavailableError`
(also busy); invalid or disallowed types, or needs no allowed type holds ->
:class:`~fluxlite.errors.UnsatisfiableError`; missing or refused
credentials -> :class:`CloudAuthError` naming the profile.  docs/cloud-bursting.md
lists every failure mode and what the operator sees.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import hashlib
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from fluxlite.errors import BusyError, FluxliteError, InputError, StateError, UnsatisfiableError
from fluxlite.jobspec import Jobspec, parse_jobspec
from fluxlite.readers import read_vertices
from providers.base import NotGrantedError

__all__ = [
    "CloudAuthError",
    "CloudBusyError",
    "CloudUnavailableError",
    "Ec2Config",
    "Ec2Provider",
    "Ec2Request",
    "Shape",
    "build_jgf",
    "request_from_jobspec",
]

_log = logging.getLogger("fluxlite.providers.ec2")

#: Tag keys every instance of a provider carries.
OWNER_TAG = "fluxlite:owner"
REQUEST_TAG = "fluxlite:request"

#: EC2 error codes that mean "no capacity now" (BusyError).
CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity",
        "capacity-not-available",
        "MaxSpotInstanceCountExceeded",
        "SpotMaxPriceTooLow",
        "InstanceLimitExceeded",
        "VcpuLimitExceeded",
    }
)
#: Error codes that mean "the request can never be served" (UnsatisfiableError).
INVALID_CODES = frozenset(
    {
        "InvalidInstanceType",
        "Unsupported",
        "InvalidParameterValue",
        "UnsupportedOperation",
        "InvalidAMIID.NotFound",
    }
)
#: Error codes of refused credentials.
AUTH_CODES = frozenset(
    {"AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken"}
)


class CloudAuthError(InputError):
    """The cloud refused the provider's credentials, or there are none (the message names the profile)."""


class CloudBusyError(BusyError):
    """Retry later with the same request id: EC2 throttled the call after every retry, has no capacity
    now, or the outcome of a call is not known yet (it will be reconciled by the request tag)."""

    #: the EC2 error code, if EC2 gave one
    code: str = ""
    #: True when EC2 may have carried the call out (5xx, timeout, lost answer)
    unknown: bool = False


class CloudUnavailableError(CloudBusyError):
    """EC2 cannot be reached or failed (connection refused, timeout, 5xx); the message names the endpoint."""


#: Error codes of throttling (retried by botocore; after the last retry: CloudBusyError).
THROTTLE_CODES = frozenset(
    {"RequestLimitExceeded", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequestsException"}
)
#: TerminateInstances states that mean "going away for good".
GONE_STATES = frozenset({"shutting-down", "terminated"})
#: States of an instance that runs (or will).
LIVE_STATES = ("pending", "running")


# ====================================================================== config
@dataclass(frozen=True)
class Shape:
    """What one instance type offers a node: vCPUs, memory in GB (rounded down) and GPUs."""

    vcpus: int
    memory_gb: int
    gpus: int = 0

    def holds(self, cores: int, memory_gb: int, gpus: int) -> bool:
        return self.vcpus >= cores and self.memory_gb >= memory_gb and self.gpus >= gpus


_KEYS = {
    "region": "AWS region, e.g. us-east-1",
    "endpoint_url": "EC2-compatible endpoint (e.g. a local moto server); default: AWS",
    "profile": "credentials profile (default: the environment's credentials)",
    "allowed_types": "list of instance types, or 'any' (with instance_requirements in fleet mode)",
    "instance_requirements": "fleet mode with allowed_types any: extra InstanceRequirements",
    "market": "on-demand or spot",
    "mode": "types or fleet",
    "max_instances": "most instances this provider holds at once",
    "max_zones": "most availability zones one request may span",
    "zones": "allowed availability zones (default: all of the region)",
    "tags": "extra tags for every instance",
    "image_id": "AMI of the instances",
    "state_dir": "where the journal lives (relative to the config file)",
    "owner": "identity tag of this provider's instances (default: user@host:state_dir)",
    "prices": "type -> price per hour: choose the cheapest type instead of the smallest",
    "shapes": "type -> {vcpus, memory_gb, gpus} for types the endpoint does not describe",
    "root": "path of the instance's root vertex (default /cluster0)",
    "rank_base": "first broker rank of burst nodes (default 1000000)",
    "uniq_id_base": "first uniq_id of burst vertices (default 2**40)",
    "retry_mode": "botocore retry mode: standard or adaptive (default standard)",
    "max_retries": "retries of one EC2 call after its first attempt, throttling included (default 4: "
    "at most 5 attempts; 0: no retry)",
    "max_attempts": "deprecated alias of max_retries (it always counted retries: max_attempts 2 = 3 attempts)",
    "timeout": "seconds to wait for EC2 to connect and to answer one call (default 30)",
    "watch_interval": "seconds between two describes of the provider's instances by a running instance "
    "(default 30)",
    "on_node_down": "what the job holding a node whose instance died is told to do: shrink (drop the node, "
    "default) or fail (end the job)",
    "journal_compact_every": "appended journal records between two rewrites of the snapshot (default 256)",
    "journal_keep_released": "given-back requests remembered (a retry of one is refused; default 1024)",
}


@dataclass(frozen=True)
class Ec2Config:
    """A validated provider config (see :data:`_KEYS` / ``fluxlite providers ec2 --help``)."""

    region: str
    image_id: str
    state_dir: Path
    endpoint_url: str | None = None
    profile: str | None = None
    allowed_types: tuple[str, ...] | None = None  # None: any
    instance_requirements: dict[str, Any] = field(default_factory=dict)
    market: str = "on-demand"
    mode: str = "types"
    max_instances: int = 64
    max_zones: int | None = None
    zones: tuple[str, ...] | None = None
    tags: dict[str, str] = field(default_factory=dict)
    owner: str = ""
    prices: dict[str, float] = field(default_factory=dict)
    shapes: dict[str, Shape] = field(default_factory=dict)
    root: str = "/cluster0"
    rank_base: int = 1_000_000
    uniq_id_base: int = 2**40
    retry_mode: str = "standard"
    max_retries: int = 4
    timeout: float = 30.0
    watch_interval: float = 30.0
    on_node_down: str = "shrink"
    journal_compact_every: int = 256
    journal_keep_released: int = 1024
    source: str = "<config>"

    @classmethod
    def load(cls, path: str | Path) -> Ec2Config:
        path = Path(path)
        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise InputError(f"ec2 config {path}: cannot read: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise InputError(f"ec2 config {path}: not YAML: {str(exc).splitlines()[0]}") from exc
        return cls.from_dict(doc, source=str(path), base=path.parent)

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "<config>", base: Path | None = None) -> Ec2Config:
        def bad(key: str, msg: str) -> InputError:
            return InputError(f"ec2 config {source}: {key}: {msg}")

        if not isinstance(doc, dict):
            raise InputError(f"ec2 config {source}: must be a mapping of {', '.join(sorted(_KEYS))}")
        for k in doc:
            if k not in _KEYS:
                raise bad(str(k), f"unknown key (known: {', '.join(sorted(_KEYS))})")
        for k in ("region", "image_id", "state_dir"):
            if not isinstance(doc.get(k), str) or not doc[k]:
                raise bad(k, f"required: {_KEYS[k]}")

        def opt_str(k: str) -> str | None:
            v = doc.get(k)
            if v is not None and (not isinstance(v, str) or not v):
                raise bad(k, "must be a non-empty string")
            return v

        def pos_int(k: str, default: int | None) -> int | None:
            v = doc.get(k, default)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise bad(k, f"must be a positive integer, got {v!r}")
            return v

        def nonneg_int(k: str, default: int) -> int:
            v = doc.get(k, default)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise bad(k, f"must be a whole number >= 0, got {v!r}")
            return v

        def pos_num(k: str, default: float) -> float:
            v = doc.get(k, default)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 86400:
                raise bad(k, f"must be a number of seconds in (0, 86400], got {v!r}")
            return float(v)

        def choice(k: str, options: tuple[str, ...], default: str) -> str:
            v = doc.get(k, default)
            if v not in options:
                raise bad(k, f"must be one of {', '.join(options)}, got {v!r}")
            return v

        def str_list(k: str) -> tuple[str, ...] | None:
            v = doc.get(k)
            if v is None:
                return None
            if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
                raise bad(k, "must be a non-empty list of names")
            return tuple(v)

        at = doc.get("allowed_types", "any")
        allowed = None if at == "any" else str_list("allowed_types")
        req = doc.get("instance_requirements") or {}
        if not isinstance(req, dict):
            raise bad("instance_requirements", "must be a mapping (EC2 InstanceRequirements)")
        tags = doc.get("tags") or {}
        if not isinstance(tags, dict) or not all(isinstance(k, str) for k in tags):
            raise bad("tags", "must be a mapping of tag names to values")
        if any(k.startswith("fluxlite:") for k in tags):
            raise bad("tags", "names starting with 'fluxlite:' are the provider's own")
        prices = doc.get("prices") or {}
        if not isinstance(prices, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in prices.values()
        ):
            raise bad("prices", "must map instance types to non-negative numbers")
        shapes: dict[str, Shape] = {}
        raw_shapes = doc.get("shapes") or {}
        if not isinstance(raw_shapes, dict):
            raise bad("shapes", "must map instance types to {vcpus, memory_gb, gpus}")
        for t, s in raw_shapes.items():
            if not isinstance(s, dict) or set(s) - {"vcpus", "memory_gb", "gpus"} or "vcpus" not in s:
                raise bad(f"shapes.{t}", "must be {vcpus, memory_gb, gpus}")
            vals = {k: s.get(k, 0) for k in ("vcpus", "memory_gb", "gpus")}
            for k, v in vals.items():
                least = 1 if k == "vcpus" else 0
                if isinstance(v, bool) or not isinstance(v, int) or v < least:
                    raise bad(f"shapes.{t}", f"{k} must be a whole number >= {least}, got {v!r}")
            shapes[str(t)] = Shape(vals["vcpus"], vals["memory_gb"], vals["gpus"])
        root = doc.get("root", "/cluster0")
        if not isinstance(root, str) or not root.startswith("/") or root.count("/") != 1:
            raise bad("root", f"must be the path of a root vertex like /cluster0, got {root!r}")
        state_dir = Path(doc["state_dir"])
        if not state_dir.is_absolute() and base is not None:
            state_dir = base / state_dir
        state_dir = state_dir.resolve()
        owner = opt_str("owner") or f"{_user()}@{socket.gethostname()}:{state_dir}"
        if "max_attempts" in doc:
            if "max_retries" in doc:
                raise bad("max_attempts", "give max_retries and max_attempts not both (max_attempts is deprecated)")
            _log.warning(
                "ec2 config %s: max_attempts is deprecated: it is the number of retries after the first "
                "attempt; write max_retries: %s",
                source,
                doc["max_attempts"],
            )
        max_retries = nonneg_int("max_attempts" if "max_attempts" in doc else "max_retries", 4)
        return cls(
            region=doc["region"],
            image_id=doc["image_id"],
            state_dir=state_dir,
            endpoint_url=opt_str("endpoint_url"),
            profile=opt_str("profile"),
            allowed_types=allowed,
            instance_requirements=dict(req),
            market=choice("market", ("on-demand", "spot"), "on-demand"),
            mode=choice("mode", ("types", "fleet"), "types"),
            max_instances=pos_int("max_instances", 64) or 64,
            max_zones=pos_int("max_zones", None),
            zones=str_list("zones"),
            tags={str(k): str(v) for k, v in tags.items()},
            owner=owner,
            prices={str(k): float(v) for k, v in prices.items()},
            shapes=shapes,
            root=root,
            rank_base=pos_int("rank_base", 1_000_000) or 1_000_000,
            uniq_id_base=pos_int("uniq_id_base", 2**40) or 2**40,
            retry_mode=choice("retry_mode", ("standard", "adaptive", "legacy"), "standard"),
            max_retries=max_retries,
            timeout=pos_num("timeout", 30.0),
            watch_interval=pos_num("watch_interval", 30.0),
            on_node_down=choice("on_node_down", ("shrink", "fail"), "shrink"),
            journal_compact_every=pos_int("journal_compact_every", 256) or 256,
            journal_keep_released=nonneg_int("journal_keep_released", 1024),
            source=source,
        )


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover
        return f"uid{os.getuid()}"


# ====================================================================== jobspec -> request
@dataclass(frozen=True)
class Ec2Request:
    """What a jobspec asks EC2 for: nodes (a range) of one shape, optionally spread over zones."""

    nodes_min: int
    nodes_max: int
    cores: int
    memory_gb: int
    gpus: int
    #: distinct zones wanted (0: any placement); nodes_* are then per zone
    zones_min: int = 0
    zones_max: int = 0


def _count(r: Any) -> tuple[int, int]:
    c = r.count
    hi = c.max if c.max and c.max >= c.min else c.min
    return int(c.min), int(hi)


def request_from_jobspec(js: Jobspec) -> Ec2Request:
    """The EC2 request for ``js`` (UnsatisfiableError for shapes EC2 cannot give)."""
    zones = (0, 0)
    level = list(js.resources)
    if len(level) == 1 and level[0].type == "cluster":
        level = list(level[0].with_)
    if len(level) == 1 and level[0].type == "zone":
        zones = _count(level[0])
        level = list(level[0].with_)
    nodes = [r for r in level if r.type == "node"]
    if nodes:
        if len(level) != 1:
            raise UnsatisfiableError("ec2: the request must ask for nodes of one shape (one node resource)")
        lo, hi = _count(nodes[0])
        below = list(nodes[0].with_)
    else:
        if any(r.type in ("cluster", "rack", "zone") for r in level):
            raise UnsatisfiableError("ec2: only cluster -> zone -> node levels can be bursted")
        lo = hi = 1
        below = level
    need = {"core": 0, "memory": 0, "gpu": 0}

    def walk(rs: Iterable[Any], mult: int) -> None:
        for r in rs:
            m = mult * max(1, int(r.count.min))
            if r.type in need:
                need[r.type] += m
            elif r.type not in ("slot", "socket", "numanode"):
                raise UnsatisfiableError(f"ec2: nodes have no {r.type!r} resources (core, memory, gpu only)")
            walk(r.with_, m)

    walk(below, 1)
    if not any(need.values()):
        need["core"] = 1
    return Ec2Request(lo, hi, need["core"], need["memory"], need["gpu"], zones[0], zones[1])


# ====================================================================== reply -> JGF
@dataclass
class _Ids:
    rank: int
    uniq: int


def build_jgf(
    root: str,
    instances: list[dict[str, Any]],
    shapes: dict[str, Shape],
    ids: _Ids,
    zone_uniq: dict[str, int],
) -> tuple[bytes, dict[str, str]]:
    """The JGF subgraph for described ``instances`` (see the module docstring).

    ``ids`` is advanced (ranks and uniq ids are never reused); zone
    vertices keep their uniq id across requests (``zone_uniq``).  Returns
    the document and instance id -> node path.
    """
    nodes: list[bytes] = []
    edges: list[bytes] = []
    rname = root[1:]
    basename = rname.rstrip("0123456789") or rname
    rid_text = rname[len(basename) :]
    nodes.append(
        b'{"id":"r","metadata":{"type":"cluster","basename":%s,"name":%s,"id":%d,"uniq_id":0,"rank":-1,'
        b'"paths":{"containment":%s}}}'
        % (orjson.dumps(basename), orjson.dumps(rname), int(rid_text or 0), orjson.dumps(root))
    )
    seen_zones: dict[str, int] = {}
    paths: dict[str, str] = {}
    for inst in instances:
        z = inst["zone"]
        zpath = f"{root}/{z}"
        if z not in seen_zones:
            zu = zone_uniq.get(z)
            if zu is None:
                zu = zone_uniq[z] = ids.uniq
                ids.uniq += 1
            seen_zones[z] = zu
            nodes.append(
                b'{"id":"%d","metadata":{"type":"zone","name":%s,"id":%d,"rank":-1,"paths":{"containment":%s}}}'
                % (zu, orjson.dumps(z), len(seen_zones) - 1, orjson.dumps(zpath))
            )
            edges.append(b'{"source":"r","target":"%d"}' % zu)
        shape = shapes[inst["type"]]
        rank = ids.rank
        ids.rank += 1
        nu = ids.uniq
        ids.uniq += 1
        npath = f"{zpath}/{inst['id']}"
        paths[inst["id"]] = npath
        props = {
            "release": "whole",  # EC2 takes an instance back whole: see hierarchy/instance/cloud.py
            "instance_type": inst["type"],
            "zone": z,
            "lifecycle": inst["lifecycle"],
            "private_ip": inst.get("private_ip") or "",
            "launch_time": inst.get("launch_time") or "",
        }
        nodes.append(
            b'{"id":"%d","metadata":{"type":"node","name":%s,"id":%d,"rank":%d,"exclusive":true,'
            b'"properties":%s,"paths":{"containment":%s}}}'
            % (nu, orjson.dumps(inst["id"]), rank, rank, orjson.dumps(props), orjson.dumps(npath))
        )
        edges.append(b'{"source":"%d","target":"%d"}' % (seen_zones[z], nu))
        npb = npath.encode()
        for typ, n in (("core", shape.vcpus), ("memory", shape.memory_gb), ("gpu", shape.gpus)):
            tb = typ.encode()
            for i in range(n):
                u = ids.uniq
                ids.uniq += 1
                nodes.append(
                    b'{"id":"%d","metadata":{"type":"%s","id":%d,"rank":%d,"exclusive":true,'
                    b'"paths":{"containment":"%s/%s%d"}}}' % (u, tb, i, rank, npb, tb, i)
                )
                edges.append(b'{"source":"%d","target":"%d"}' % (nu, u))
    doc = b'{"graph":{"nodes":[' + b",".join(nodes) + b'],"edges":[' + b",".join(edges) + b"]}}"
    return doc, paths


# ====================================================================== the provider
def _code(exc: Exception) -> str:
    resp = getattr(exc, "response", None) or {}
    return str((resp.get("Error") or {}).get("Code", ""))


def _one_line(text: object, limit: int = 400) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


#: the journal's three files in STATE_DIR: snapshot, append-only log, writer lock
JOURNAL, JOURNAL_LOG, JOURNAL_LOCK = "ec2-journal.json", "ec2-journal.log", "ec2-journal.lock"


class Ec2Provider:
    """EC2 through boto3 (see the module docstring).

    ``readonly``: read the journal without taking its writer lock and
    never write it (``fluxlite providers ec2 list``, ``cleanup --force``).
    ``session``: a boto3 session to make the client from (one that made an
    EC2 client before has the service model parsed: about 1 s saved).
    """

    def __init__(
        self, config: Ec2Config, *, client: Any = None, session: Any = None, readonly: bool = False
    ) -> None:
        self.config = config
        self.name = f"ec2:{config.source}"
        self.readonly = readonly
        self._lock = threading.RLock()
        config.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.journal_path = config.state_dir / JOURNAL
        self._log_path = config.state_dir / JOURNAL_LOG
        self._lockfile: Any = None
        self._logfile: Any = None
        #: appends and snapshot rewrites since this provider opened the journal
        self.journal_stats = {"appends": 0, "compactions": 0}
        self._since_compact = 0
        if not readonly:
            self._lockfile = self._take_lock(config.state_dir / JOURNAL_LOCK)
        self._journal = self._read_journal()
        if not readonly:
            self._compact()  # a clean start: the log replayed into the snapshot (and a torn line dropped)
        self._client = client
        self._session = session
        self._shapes: dict[str, Shape] = dict(config.shapes)
        self._described = False
        self._zones: list[str] | None = None
        #: requests granted by this process: attached by the caller right after (never orphans)
        self._fresh: set[str] = set()
        #: seconds spent in the last grow, by phase (mapping, provider call, JGF)
        self.last_timing: dict[str, float] = {}
        self.on_node_down = config.on_node_down
        self.watch_interval = config.watch_interval

    @classmethod
    def from_config(cls, path: str | Path, *, readonly: bool = False) -> Ec2Provider:
        return cls(Ec2Config.load(path), readonly=readonly)

    # ------------------------------------------------------------------ boto3
    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            cfg = self.config
            session = self._session
            try:
                if session is None:
                    session = boto3.session.Session(profile_name=cfg.profile, region_name=cfg.region)
            except Exception as exc:  # ProfileNotFound and friends
                raise CloudAuthError(f"{self.name}: profile {cfg.profile!r}: {_one_line(exc)}") from exc
            self._client = session.client(
                "ec2",
                region_name=cfg.region,
                endpoint_url=cfg.endpoint_url,
                config=Config(
                    retries={"mode": cfg.retry_mode, "total_max_attempts": cfg.max_retries + 1},
                    connect_timeout=min(cfg.timeout, 10.0),
                    read_timeout=cfg.timeout,
                ),
            )
        return self._client

    def where(self) -> str:
        """The endpoint, region and credentials this provider uses (for messages)."""
        cfg = self.config
        who = f"profile {cfg.profile!r}" if cfg.profile else "the environment's credentials"
        return f"endpoint {cfg.endpoint_url or 'AWS'}, region {cfg.region}, {who}"

    def _translate(self, op: str, exc: BaseException) -> FluxliteError:
        """One fluxlite error (one line, naming endpoint and credentials) for what boto3 raised."""
        from botocore import exceptions as bx

        if isinstance(exc, FluxliteError):
            return exc
        where = self.where()
        if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
            return CloudAuthError(f"{self.name}: no credentials for EC2 ({where}): {_one_line(exc)}")
        if isinstance(exc, bx.ProfileNotFound):
            return CloudAuthError(f"{self.name}: {_one_line(exc)} ({where})")
        if isinstance(exc, bx.ClientError):
            code = _code(exc)
            meta = (getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}
            status = int(meta.get("HTTPStatusCode") or 0)
            tries = int(meta.get("RetryAttempts") or 0) + 1
            msg = _one_line((getattr(exc, "response", None) or {}).get("Error", {}).get("Message", exc))
            err: FluxliteError
            if code in AUTH_CODES:
                return CloudAuthError(f"{self.name}: EC2 refused the credentials ({where}): {code}: {msg}")
            if code in THROTTLE_CODES:
                err = CloudBusyError(
                    f"{self.name}: EC2 throttled {op} ({code}) after {tries} attempts; retry later"
                )
            elif code in CAPACITY_CODES:
                err = CloudBusyError(f"{self.name}: no capacity now ({code}): {msg}")
            elif status >= 500 or code in ("InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable"):
                err = CloudUnavailableError(
                    f"{self.name}: EC2 failed {op} after {tries} attempts ({where}): {code or status}: {msg}"
                )
                err.unknown = True
            elif code in INVALID_CODES or (code.startswith("Invalid") and "NotFound" not in code):
                err = UnsatisfiableError(f"{self.name}: EC2 refused {op} ({code}): {msg}")
            else:
                err = StateError(f"{self.name}: EC2 error in {op}: {code}: {msg}")
            err.code = code  # type: ignore[attr-defined]
            return err
        if isinstance(exc, bx.BotoCoreError | OSError):
            # no answer: connection refused, timeout, connection closed; a sent call may have been carried out
            err = CloudUnavailableError(f"{self.name}: EC2 unreachable ({where}) in {op}: {_one_line(exc)}")
            err.unknown = not isinstance(exc, bx.EndpointConnectionError | bx.ConnectTimeoutError)
            return err
        return StateError(f"{self.name}: {op} failed: {type(exc).__name__}: {_one_line(exc)}")

    def _call(self, op: str, **kw: Any) -> Any:
        """One EC2 call (botocore retries it); every failure becomes one fluxlite error (:meth:`_translate`)."""
        try:
            return getattr(self.client, op)(**kw)
        except Exception as exc:
            raise self._translate(op, exc) from exc

    def _pages(self, op: str, **kw: Any) -> Iterator[dict[str, Any]]:
        try:
            yield from self.client.get_paginator(op).paginate(**kw)
        except Exception as exc:
            raise self._translate(op, exc) from exc

    # ------------------------------------------------------------------ journal
    def _take_lock(self, path: Path) -> Any:
        """The journal's writer lock (flock, held while this provider is open); InputError if taken."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        f = os.fdopen(fd, "r+b")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = f.read(64).decode(errors="replace").strip() or "?"
            f.close()
            raise InputError(
                f"ec2 journal {self.config.state_dir}: in use by process {holder} (one writer per state_dir: "
                "a running instance or a cleanup holds it)"
            ) from None
        f.truncate(0)
        f.write(f"{os.getpid()}\n".encode())
        f.flush()
        return f

    def _read_journal(self) -> dict[str, Any]:
        try:
            doc = orjson.loads(self.journal_path.read_bytes())
        except FileNotFoundError:
            doc = {}
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InputError(f"ec2 journal {self.journal_path}: unreadable: {exc}") from exc
        doc.setdefault("owner", self.config.owner)
        doc.setdefault("next_rank", self.config.rank_base)
        doc.setdefault("next_uniq", self.config.uniq_id_base)
        doc.setdefault("zones", {})
        doc.setdefault("requests", {})
        try:
            lines = self._log_path.read_bytes().split(b"\n")
        except FileNotFoundError:
            lines = []
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                e = orjson.loads(line)
                rid, rec = e["rid"], e["rec"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                # a torn last line (the process died while appending): that change never happened
                if any(x.strip() for x in lines[n + 1 :]):
                    raise InputError(f"ec2 journal {self._log_path}: line {n + 1} is corrupt") from None
                _log.warning("ec2 journal %s: dropped a torn last line", self._log_path)
                break
            if rec is None:
                doc["requests"].pop(rid, None)
            else:
                doc["requests"][rid] = rec
            for k in ("next_rank", "next_uniq", "zones"):
                if k in e:
                    doc[k] = e[k]
        return doc

    def _save(self, rid: str) -> None:
        """Record the change of request ``rid`` (and the id counters): one appended, fsynced line."""
        if self.readonly:
            return
        j = self._journal
        line = orjson.dumps(
            {
                "rid": rid,
                "rec": j["requests"].get(rid),
                "next_rank": j["next_rank"],
                "next_uniq": j["next_uniq"],
                "zones": j["zones"],
            }
        )
        if self._logfile is None:
            self._logfile = open(self._log_path, "ab")  # noqa: SIM115 (kept open: one append per change)
            os.chmod(self._log_path, 0o600)
        self._logfile.write(line + b"\n")
        self._logfile.flush()
        os.fsync(self._logfile.fileno())
        self.journal_stats["appends"] += 1
        self._since_compact += 1
        if self._since_compact >= self.config.journal_compact_every:
            self._compact()

    def _compact(self) -> None:
        """Rewrite the snapshot (released requests pruned to the newest ``journal_keep_released``), empty the log."""
        if self.readonly:
            return
        reqs = self._journal["requests"]
        released = sorted((r.get("at", 0.0), rid) for rid, r in reqs.items() if r.get("state") == "released")
        for _, rid in released[: max(0, len(released) - self.config.journal_keep_released)]:
            del reqs[rid]
        fd, tmp = tempfile.mkstemp(dir=self.config.state_dir, prefix=f".{JOURNAL}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(self._journal))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.journal_path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        # the log's changes are in the snapshot now (replaying them again would change nothing)
        if self._logfile is not None:
            self._logfile.truncate(0)
            self._logfile.flush()
            os.fsync(self._logfile.fileno())
        elif self._log_path.exists():
            with open(self._log_path, "r+b") as f:
                f.truncate(0)
                os.fsync(f.fileno())
        self._since_compact = 0
        self.journal_stats["compactions"] += 1

    @property
    def requests(self) -> dict[str, dict[str, Any]]:
        return self._journal["requests"]

    def _held(self, but: str = "") -> int:
        """Instances this provider counts as its own (unknown outcomes at their most), request ``but`` aside."""
        n = 0
        for rid, r in self.requests.items():
            if rid == but or r.get("state") == "released":
                continue
            n += max(len(r.get("instances", ())), int(r.get("expect", 0)))
        return n

    # ------------------------------------------------------------------ shapes and zones
    def shape(self, itype: str) -> Shape | None:
        s = self._shapes.get(itype)
        if s is None and not self._described:
            self._describe_types([itype])
            s = self._shapes.get(itype)
        return s

    def _describe_types(self, names: list[str] | None = None) -> None:
        kw: dict[str, Any] = {}
        if names is not None:
            names = [n for n in names if n not in self._shapes]
            if not names:
                return
        try:
            for page in self._pages("describe_instance_types", **({"InstanceTypes": names} if names else kw)):
                for it in page.get("InstanceTypes", []):
                    gpus = sum(g.get("Count", 0) for g in (it.get("GpuInfo") or {}).get("Gpus", []))
                    self._shapes.setdefault(
                        it["InstanceType"],
                        Shape(
                            int(it["VCpuInfo"]["DefaultVCpus"]),
                            int(it["MemoryInfo"]["SizeInMiB"]) // 1024,
                            int(gpus),
                        ),
                    )
        except UnsatisfiableError as exc:
            if getattr(exc, "code", "") != "InvalidInstanceType":
                raise
            # some names are unknown to the endpoint: describe them one by one
            if names and len(names) > 1:
                for n in names:
                    self._describe_types([n])
        if names is None:
            self._described = True

    def candidate_types(self, req: Ec2Request) -> list[str]:
        """Allowed types that hold one node of ``req``, best first (cheapest or smallest)."""
        cfg = self.config
        if cfg.allowed_types is not None:
            self._describe_types(list(cfg.allowed_types))
            names = list(cfg.allowed_types)
        else:
            if not self._described:
                self._describe_types(None)
            names = sorted(self._shapes)
        fits = [
            t
            for t in names
            if (s := self._shapes.get(t)) is not None and s.holds(req.cores, req.memory_gb, req.gpus)
        ]

        def key(t: str) -> tuple[Any, ...]:
            s = self._shapes[t]
            return (cfg.prices.get(t, float("inf")) if cfg.prices else 0.0, s.vcpus, s.memory_gb, s.gpus, t)

        return sorted(fits, key=key)

    def zones(self) -> list[str]:
        if self._zones is None:
            out = self._call(
                "describe_availability_zones", Filters=[{"Name": "state", "Values": ["available"]}]
            )
            names = sorted(z["ZoneName"] for z in out.get("AvailabilityZones", []))
            if self.config.zones is not None:
                unknown = [z for z in self.config.zones if z not in names]
                if unknown:
                    raise InputError(
                        f"ec2 config {self.config.source}: zones: not in {self.config.region}: {unknown}"
                    )
                names = [z for z in names if z in self.config.zones]
            self._zones = names
        return self._zones

    # ------------------------------------------------------------------ ExternalAPI
    def _request_of(self, jobspec: str | bytes, request_id: str = "") -> Ec2Request:
        return request_from_jobspec(parse_jobspec(jobspec, source=f"{self.name} request {request_id}"))

    def _plan_for(self, jobspec: str | bytes) -> dict[str, Any]:
        return self._plan(self._request_of(jobspec))

    def grow(self, jobspec: str | bytes, request_id: str) -> bytes:
        """Create instances for ``jobspec``; return them as JGF (idempotent per ``request_id``)."""
        with self._lock:
            self._writable()
            rec = self.requests.get(request_id)
            if rec is not None and rec.get("state") == "granted":
                self._check_running(request_id, rec["instances"])
                return rec["jgf"].encode()
            if rec is not None and rec.get("state") == "released":
                raise StateError(f"{self.name}: request {request_id} was granted and already given back")
            t0 = time.perf_counter()
            req = self._request_of(jobspec, request_id)
            plan = self._plan(req, but=request_id)
            t1 = time.perf_counter()
            state = rec.get("state") if rec is not None else None
            if state in ("creating", "unknown"):
                # a create whose outcome this provider never learnt (a crash, a lost answer): ask EC2 by tag
                created = self._resolve_unknown(request_id, req, plan, "an earlier attempt did not finish")
            elif state == "created":
                created = list(rec["instances"]) if rec is not None else []
                alive = {d["id"] for d in self._describe_instances(created, check=False) if d["live"]}
                if set(created) - alive:  # terminated meanwhile (e.g. by a cleanup): start over
                    _log.warning(
                        "%s: request %s: instances %s no longer run; creating anew",
                        self.name,
                        request_id,
                        ", ".join(sorted(set(created) - alive)),
                    )
                    self._undo(request_id, sorted(alive))
                    created = self._create(request_id, req, plan)
            else:
                created = self._create(request_id, req, plan)
            try:
                described = self._describe_instances(created)
            except CloudBusyError:
                raise  # the request stays "created": a retry describes again (or a reconcile ends it)
            except Exception:
                self._undo(request_id, created)
                raise
            t2 = time.perf_counter()
            ids = _Ids(self._journal["next_rank"], self._journal["next_uniq"])
            doc, paths = build_jgf(self.config.root, described, self._shapes, ids, self._journal["zones"])
            self._journal["next_rank"], self._journal["next_uniq"] = ids.rank, ids.uniq
            self.requests[request_id] = {
                "state": "granted",
                "instances": created,
                "paths": paths,
                "jgf": doc.decode(),
                "at": time.time(),
            }
            self._fresh.add(request_id)
            t3 = time.perf_counter()
            self._save(request_id)
            self.last_timing = {"mapping_s": t1 - t0, "call_s": t2 - t1, "jgf_s": t3 - t2}
            return doc

    def _writable(self) -> None:
        if self.readonly:
            raise StateError(f"{self.name}: opened read-only (the journal belongs to another process)")

    def _check_running(self, request_id: str, ids: list[str]) -> None:
        """A replayed grant must still stand for running instances (StateError naming the dead ones)."""
        if not ids:
            return
        seen = {d["id"]: d["live"] for d in self._describe_instances(ids, check=False)}
        dead = sorted(i for i in ids if not seen.get(i, False))
        if dead:
            raise StateError(
                f"{self.name}: request {request_id}: instance(s) {', '.join(dead)} no longer running "
                "(terminated outside fluxlite or reclaimed); shrink them and grow anew"
            )

    def _plan(self, req: Ec2Request, but: str = "") -> dict[str, Any]:
        cfg = self.config
        zones_wanted = req.zones_min
        if zones_wanted:
            if cfg.max_zones is not None and zones_wanted > cfg.max_zones:
                raise UnsatisfiableError(
                    f"{self.name}: the request asks for {zones_wanted} zones; max_zones is {cfg.max_zones}"
                )
            avail = self.zones()
            if zones_wanted > len(avail):
                raise UnsatisfiableError(
                    f"{self.name}: the request asks for {zones_wanted} zones; {len(avail)} are allowed"
                )
        total_min = req.nodes_min * max(1, zones_wanted)
        if total_min > cfg.max_instances:
            raise UnsatisfiableError(
                f"{self.name}: the request needs {total_min} instances; max_instances is {cfg.max_instances}"
            )
        held = self._held(but)
        if held + total_min > cfg.max_instances:
            raise BusyError(
                f"{self.name}: {held} instances held, {total_min} more would pass max_instances={cfg.max_instances}"
            )
        room = cfg.max_instances - held
        types = self.candidate_types(req)
        if not types:
            what = f"{req.cores} cores, {req.memory_gb} GB, {req.gpus} GPUs per node"
            allowed = ", ".join(cfg.allowed_types) if cfg.allowed_types else "any described type"
            raise UnsatisfiableError(f"{self.name}: no allowed type ({allowed}) holds {what}")
        per_zone_max = req.nodes_max
        if zones_wanted:
            per_zone_max = min(per_zone_max, room // zones_wanted)
        else:
            per_zone_max = min(per_zone_max, room)
        per_zone_max = max(req.nodes_min, per_zone_max)
        return {
            "types": types,
            "zones": zones_wanted,
            "max": per_zone_max,
            "total_max": per_zone_max * max(1, zones_wanted),
        }

    def _tags(self, request_id: str) -> list[dict[str, Any]]:
        tags = [{"Key": k, "Value": v} for k, v in self.config.tags.items()]
        tags += [{"Key": OWNER_TAG, "Value": self.config.owner}, {"Key": REQUEST_TAG, "Value": request_id}]
        return [{"ResourceType": "instance", "Tags": tags}]

    def client_token(self, request_id: str, part: str) -> str:
        """The idempotency token of one create call of ``request_id`` (EC2 runs a repeated token once)."""
        return hashlib.blake2b(f"{self.config.owner}|{request_id}|{part}".encode(), digest_size=16).hexdigest()

    def _create(self, request_id: str, req: Ec2Request, plan: dict[str, Any]) -> list[str]:
        """Create the instances (journal first).

        A definite refusal (capacity, invalid, throttled) terminates what
        was created and raises.  An unknown outcome (5xx, timeout, lost
        answer) is settled by the request tag before answering
        (:meth:`_resolve_unknown`).
        """
        zones: list[str | None] = list(self.zones()[: plan["zones"]]) if plan["zones"] else [None]
        self.requests[request_id] = {
            "state": "creating",
            "instances": [],
            "expect": plan["total_max"],
            "at": time.time(),
        }
        self._save(request_id)
        created: list[str] = []
        try:
            for z in zones:
                if self.config.mode == "fleet":
                    created += self._create_fleet(request_id, req, plan, z)
                else:
                    created += self._run_instances(request_id, req, plan, z)
                self.requests[request_id]["instances"] = list(created)
                self._save(request_id)
        except FluxliteError as exc:
            if getattr(exc, "unknown", False):
                return self._resolve_unknown(request_id, req, plan, str(exc))
            self._undo(request_id, created)
            raise
        except BaseException:
            self._undo(request_id, created)
            raise
        self.requests[request_id] = {"state": "created", "instances": created, "at": time.time()}
        self._save(request_id)
        if os.environ.get("FLUXLITE_EC2_FAULT") == "exit-after-create":  # fault injection (tests only)
            os._exit(137)
        return created

    def _tagged(self, request_id: str) -> list[dict[str, Any]]:
        """Live instances of this owner tagged with ``request_id``."""
        return [i for i in self.owned_instances(request_id=request_id) if i["state"] in LIVE_STATES]

    def _resolve_unknown(self, request_id: str, req: Ec2Request, plan: dict[str, Any], why: str) -> list[str]:
        """Settle a create whose outcome is unknown, by the request tag: adopt what fits, terminate the rest.

        Adopted when EC2 holds at least the minimum (per zone, in as many
        zones as asked); the rest (duplicates of retried calls) is
        terminated.  Too few: all of them are terminated and the request
        fails.  EC2 unreadable: the request is kept as ``unknown`` (its
        instances counted at the most it asked for) and CloudBusyError says
        to retry; a running instance's reconcile settles it meanwhile.
        """
        try:
            found = self._tagged(request_id)
        except FluxliteError as exc:
            self.requests[request_id] = {
                "state": "unknown",
                "instances": [],
                "expect": plan["total_max"],
                "at": time.time(),
            }
            self._save(request_id)
            err = CloudBusyError(
                f"{self.name}: request {request_id}: outcome unknown ({_one_line(why, 200)}); EC2 cannot be "
                f"read now ({_one_line(exc, 200)}); retry the same request (the provider settles it by tag)"
            )
            err.unknown = True
            raise err from exc
        groups: dict[str | None, list[str]] = {}
        for i in sorted(found, key=lambda i: (i["launch_time"], i["id"])):
            groups.setdefault(i["zone"] if plan["zones"] else None, []).append(i["id"])
        need = max(1, plan["zones"])
        ok = [g for g in groups.values() if len(g) >= req.nodes_min][:need]
        keep = [i for g in ok for i in g[: plan["max"]]] if len(ok) == need else []
        extra = [i["id"] for i in found if i["id"] not in set(keep)]
        if extra:
            try:
                self._terminate(extra)
            except FluxliteError as exc:  # tagged, never granted: the next reconcile ends them
                _log.warning("%s: request %s: could not terminate duplicates now: %s", self.name, request_id, exc)
        _log.warning(
            "%s: request %s: outcome was unknown (%s); found %d instance(s) by tag: adopted %d, terminated %d",
            self.name,
            request_id,
            _one_line(why, 200),
            len(found),
            len(keep),
            len(extra),
        )
        if not keep:
            self.requests.pop(request_id, None)
            self._save(request_id)
            if not found:
                raise CloudUnavailableError(f"{self.name}: request {request_id}: {_one_line(why)}; nothing was created")
            raise CloudBusyError(
                f"{self.name}: request {request_id}: EC2 started {len(found)} instance(s), fewer than asked; "
                "terminated them"
            )
        self.requests[request_id] = {"state": "created", "instances": keep, "at": time.time()}
        self._save(request_id)
        return keep

    def _undo(self, request_id: str, created: list[str]) -> None:
        """Terminate what a failed request created and forget the request.

        If EC2 does not confirm, the request is kept as ``unknown`` with
        those instances (counted; the next reconcile terminates them).
        """
        if created:
            try:
                self._terminate(created)
            except FluxliteError as exc:
                _log.warning("%s: request %s: could not terminate %s now: %s", self.name, request_id, created, exc)
                self.requests[request_id] = {
                    "state": "unknown",
                    "instances": list(created),
                    "at": time.time(),
                }
                self._save(request_id)
                return
        self.requests.pop(request_id, None)
        self._save(request_id)

    def _run_instances(
        self, request_id: str, req: Ec2Request, plan: dict[str, Any], zone: str | None
    ) -> list[str]:
        kw: dict[str, Any] = {
            "ImageId": self.config.image_id,
            "InstanceType": plan["types"][0],
            "MinCount": req.nodes_min,
            "MaxCount": plan["max"],
            "TagSpecifications": self._tags(request_id),
            "ClientToken": self.client_token(request_id, zone or "-"),
        }
        if zone is not None:
            kw["Placement"] = {"AvailabilityZone": zone}
        if self.config.market == "spot":
            kw["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
            }
        out = self._call("run_instances", **kw)
        ids = [i["InstanceId"] for i in out.get("Instances", [])]
        if len(ids) < req.nodes_min:
            self._terminate(ids)
            raise BusyError(f"{self.name}: EC2 started {len(ids)} of at least {req.nodes_min} instances")
        return ids

    def _template_name(self) -> str:
        return "fluxlite-" + hashlib.blake2b(self.config.owner.encode(), digest_size=8).hexdigest()

    def _template(self) -> str:
        """The provider's launch template (fleets need one; deleted after each fleet call)."""
        name = self._template_name()
        try:
            self._call("describe_launch_templates", LaunchTemplateNames=[name])
        except FluxliteError as exc:
            if "NotFound" not in getattr(exc, "code", ""):
                raise
            self._call(
                "create_launch_template",
                LaunchTemplateName=name,
                LaunchTemplateData={"ImageId": self.config.image_id},
            )
        return name

    def _drop_template(self) -> None:
        try:
            self._call("delete_launch_template", LaunchTemplateName=self._template_name())
        except FluxliteError as exc:
            if "NotFound" not in getattr(exc, "code", ""):
                _log.warning("%s: could not delete launch template %s: %s", self.name, self._template_name(), exc)

    def _create_fleet(
        self, request_id: str, req: Ec2Request, plan: dict[str, Any], zone: str | None
    ) -> list[str]:
        if self.config.allowed_types is None and self.config.instance_requirements is not None:
            reqs = {
                "VCpuCount": {"Min": max(1, req.cores)},
                "MemoryMiB": {"Min": req.memory_gb * 1024},
                **({"AcceleratorCount": {"Min": req.gpus}} if req.gpus else {}),
                **self.config.instance_requirements,
            }
            overrides = [{"InstanceRequirements": reqs}]
        else:
            overrides = [{"InstanceType": t} for t in plan["types"]]
        if zone is not None:
            overrides = [{**o, "AvailabilityZone": zone} for o in overrides]
        market = "spot" if self.config.market == "spot" else "on-demand"
        template = self._template()
        try:
            out = self._call(
                "create_fleet",
                Type="instant",
                ClientToken=self.client_token(request_id, f"fleet-{zone or '-'}"),
                LaunchTemplateConfigs=[
                    {
                        "LaunchTemplateSpecification": {"LaunchTemplateName": template, "Version": "$Latest"},
                        "Overrides": overrides,
                    }
                ],
                TargetCapacitySpecification={
                    "TotalTargetCapacity": plan["max"],
                    "DefaultTargetCapacityType": market,
                },
                TagSpecifications=self._tags(request_id),
            )
        finally:
            self._drop_template()  # an instant fleet needs it only while it is created
        ids = [i for group in out.get("Instances", []) for i in group.get("InstanceIds", [])]
        if len(ids) < req.nodes_min:
            self._terminate(ids)
            errs = "; ".join(f"{e.get('ErrorCode')}: {e.get('ErrorMessage')}" for e in out.get("Errors", []))
            raise BusyError(
                f"{self.name}: the fleet delivered {len(ids)} of at least {req.nodes_min} instances"
                + (f" ({errs})" if errs else "")
            )
        return ids

    def _describe_instances(self, ids: list[str], *, check: bool = True) -> list[dict[str, Any]]:
        """``ids`` described, in order.  With ``check``, every one must run and have a known shape."""
        out: list[dict[str, Any]] = []
        if not ids:
            return out
        try:
            pages = list(self._pages("describe_instances", InstanceIds=ids))
        except FluxliteError as exc:
            if "NotFound" not in getattr(exc, "code", ""):
                raise
            # one unknown id fails the whole call: the others one by one (unknown ones are gone)
            pages = []
            if len(ids) > 1:
                for i in ids:
                    out += self._describe_instances([i], check=False)
        for page in pages:
            for res in page.get("Reservations", []):
                for i in res.get("Instances", []):
                    out.append(
                        {
                            "id": i["InstanceId"],
                            "type": i["InstanceType"],
                            "zone": i["Placement"]["AvailabilityZone"],
                            "lifecycle": i.get("InstanceLifecycle", "on-demand") or "on-demand",
                            "private_ip": i.get("PrivateIpAddress", ""),
                            "launch_time": str(i.get("LaunchTime", "")),
                            "state": i.get("State", {}).get("Name", ""),
                            "live": i.get("State", {}).get("Name") in LIVE_STATES,
                        }
                    )
        order = {x: n for n, x in enumerate(ids)}
        out.sort(key=lambda d: order.get(d["id"], 0))
        if check:
            dead = [d["id"] for d in out if not d["live"]] + sorted(set(ids) - {d["id"] for d in out})
            if dead:
                raise StateError(f"{self.name}: instance(s) {', '.join(dead)} stopped before they were granted")
            for d in out:
                if self.shape(d["type"]) is None:
                    raise UnsatisfiableError(
                        f"{self.name}: EC2 returned type {d['type']} whose shape is unknown (add it under shapes:)"
                    )
        return out

    def _terminate(self, ids: Iterable[str]) -> None:
        """Terminate ``ids``; returns only when EC2 confirms each is shutting down or gone (else CloudBusyError)."""
        ids = list(ids)
        if not ids:
            return
        try:
            out = self._call("terminate_instances", InstanceIds=ids)
        except FluxliteError as exc:
            if "NotFound" not in getattr(exc, "code", ""):
                raise
            # one unknown id fails the whole call: go one by one (an unknown one is gone already)
            if len(ids) > 1:
                for i in ids:
                    self._terminate([i])
            return
        states = {t["InstanceId"]: (t.get("CurrentState") or {}).get("Name") for t in out.get("TerminatingInstances", [])}
        bad = [i for i in ids if states.get(i) not in GONE_STATES]
        if bad:
            raise CloudBusyError(f"{self.name}: EC2 did not confirm the termination of {', '.join(bad)}")

    def shrink(self, jgf: str | bytes) -> None:
        """Terminate the instances whose node vertices ``jgf`` names (whole nodes only; nothing changes on error).

        Returns once EC2 confirms each termination; a node given back
        already is accepted again (a retried hand-back), one this
        provider never granted raises :class:`~providers.base.NotGrantedError`.
        """
        with self._lock:
            self._writable()
            by_path: dict[str, tuple[str, str]] = {}
            gone: set[str] = set()
            for rid, rec in self.requests.items():
                gone.update(rec.get("gone", ()))
                if rec.get("state") == "granted":
                    for iid, p in rec.get("paths", {}).items():
                        by_path[p] = (rid, iid)
            nodes: list[tuple[str, str]] = []
            listed: set[str] = set()
            parts: list[str] = []
            for v in read_vertices(jgf, source=f"{self.name} shrink"):
                p = v.paths.get("containment") or next(iter(v.paths.values()), "")
                listed.add(p)
                if v.type == "node":
                    if p not in by_path:
                        if p.rsplit("/", 1)[-1] in gone:
                            continue  # given back before: a retried hand-back
                        raise NotGrantedError(f"{self.name}: {p} is not an instance this provider granted")
                    nodes.append(by_path[p])
                elif v.type in ("core", "memory", "gpu"):
                    parts.append(p)
            partial = sorted({p.rsplit("/", 1)[0] for p in parts} - listed)
            partial = [p for p in partial if p.rsplit("/", 1)[-1] not in gone]
            if partial:
                raise StateError(
                    f"{self.name}: a shrink must give back whole nodes; {partial[0]} is named only in part"
                )
            if not nodes:
                return
            self._terminate([iid for _, iid in nodes])
            for rid, iid in nodes:
                rec = self.requests[rid]
                rec["instances"] = [x for x in rec["instances"] if x != iid]
                rec.get("paths", {}).pop(iid, None)
                rec["gone"] = [*rec.get("gone", ()), iid]
                if not rec["instances"]:
                    rec["state"] = "released"
                    rec.pop("jgf", None)
                    rec.pop("paths", None)
                    rec["at"] = time.time()
            for rid in dict.fromkeys(r for r, _ in nodes):
                self._save(rid)

    # ------------------------------------------------------------------ leaks and deaths
    def owned_instances(self, *, request_id: str | None = None) -> list[dict[str, Any]]:
        """Instances tagged with this provider's owner, not terminated (and of ``request_id`` if given)."""
        out = []
        filters = [
            {"Name": f"tag:{OWNER_TAG}", "Values": [self.config.owner]},
            {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
        ]
        if request_id is not None:
            filters.append({"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]})
        for page in self._pages("describe_instances", Filters=filters):
            for res in page.get("Reservations", []):
                for i in res.get("Instances", []):
                    tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                    out.append(
                        {
                            "id": i["InstanceId"],
                            "type": i["InstanceType"],
                            "zone": i["Placement"]["AvailabilityZone"],
                            "request": tags.get(REQUEST_TAG, ""),
                            "state": i["State"]["Name"],
                            "launch_time": str(i.get("LaunchTime", "")),
                        }
                    )
        return out

    def orphans(self, is_attached: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
        """Owned instances that no job holds: not granted, or (``is_attached`` given) granted before this
        process and not attached.  Grants made by this process are held (their caller attaches them)."""
        granted: dict[str, tuple[str, str]] = {}
        for rid, rec in self.requests.items():
            if rec.get("state") == "granted":
                for iid, path in rec.get("paths", {}).items():
                    granted[iid] = (rid, path)
        out = []
        for i in self.owned_instances():
            g = granted.get(i["id"])
            held = g is not None and (g[0] in self._fresh or is_attached is None or is_attached(g[1]))
            if not held:
                out.append(i)
        return out

    def reconcile(
        self, is_attached: Callable[[str], bool] | None = None, *, dry_run: bool = False
    ) -> list[str]:
        """Terminate orphans (see :meth:`orphans`); returns their ids.  Forgets requests left with nothing.

        Requests whose outcome was unknown are settled here too: nobody
        holds their instances, so they are orphans.
        """
        with self._lock:
            gone = [i["id"] for i in self.orphans(is_attached)]
            if gone and not dry_run:
                self._terminate(gone)
                dead = set(gone)
                for rid in list(self.requests):
                    rec = self.requests[rid]
                    if not dead & set(rec.get("instances", ())):
                        continue
                    rec["instances"] = [x for x in rec.get("instances", []) if x not in dead]
                    for iid in [x for x in rec.get("paths", {}) if x in dead]:
                        rec["paths"].pop(iid)
                    if not rec["instances"] and rec.get("state") != "released":
                        del self.requests[rid]  # a retry of this request creates anew
                    self._save(rid)
            if not dry_run and not self.readonly:
                for rid in [r for r, rec in self.requests.items() if rec.get("state") in ("creating", "unknown")]:
                    if not set(self.requests[rid].get("instances", ())) - set(gone):
                        del self.requests[rid]  # its tagged instances (if any) were orphans, ended above
                        self._save(rid)
            return gone

    def watch(self) -> list[tuple[str, str]]:
        """Granted instances that no longer run (spot reclaim, manual termination): ``(node path, state)``.

        One DescribeInstances of every granted instance.  The grants are
        kept: the caller takes the nodes from their jobs and hands them
        back (a shrink of an instance already terminated is confirmed at once).
        """
        with self._lock:
            paths: dict[str, str] = {}
            for rec in self.requests.values():
                if rec.get("state") == "granted":
                    paths.update(rec.get("paths", {}))
            if not paths:
                return []
            ids = sorted(paths)
            states = {d["id"]: d["state"] for d in self._describe_instances(ids, check=False)}
            return [(paths[i], states.get(i, "gone")) for i in ids if states.get(i, "gone") not in LIVE_STATES]

    def close(self) -> None:
        with self._lock:
            if self._lockfile is None:
                return
            with contextlib.suppress(OSError):
                self._compact()
            if self._logfile is not None:
                self._logfile.close()
                self._logfile = None
            self._lockfile.close()
            self._lockfile = None
