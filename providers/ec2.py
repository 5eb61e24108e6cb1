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
A journal (``STATE_DIR/ec2-journal.json``, written atomically) records a
request before the create call (``creating``, with the idempotency tokens
sent to EC2), after it (``created``, the instance ids) and when the
subgraph is handed out (``granted``).  A retried request id returns the
same subgraph and creates nothing.  :meth:`Ec2Provider.reconcile` (called
by the instance at start with "is this node attached?") terminates every
instance of this owner that no attached node stands for - the case of a
crash between create and attach; ``fluxlite providers ec2 cleanup``
does the same from the journal, without a running instance.

**Errors.**  Capacity shortages (``InsufficientInstanceCapacity``, spot
``capacity-not-available``, a fleet that returns fewer instances than the
minimum) -> :class:`~fluxlite.errors.BusyError`, after terminating what was
created; invalid or disallowed types, or needs no allowed type holds ->
:class:`~fluxlite.errors.UnsatisfiableError`; refused credentials ->
:class:`CloudAuthError` naming the profile.  Throttling is retried by
botocore's own retry modes (``retry_mode: standard|adaptive``).
"""

from __future__ import annotations

import getpass
import hashlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from fluxlite.errors import BusyError, InputError, StateError, UnsatisfiableError
from fluxlite.jobspec import Jobspec, parse_jobspec
from fluxlite.readers import read_vertices

__all__ = [
    "CloudAuthError",
    "Ec2Config",
    "Ec2Provider",
    "Ec2Request",
    "Shape",
    "build_jgf",
    "request_from_jobspec",
]

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
    """The cloud refused the provider's credentials (the message names the profile)."""


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
    "max_attempts": "botocore attempts per call, throttling included (default 5)",
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
    max_attempts: int = 5
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
        for t, s in (doc.get("shapes") or {}).items():
            if not isinstance(s, dict) or set(s) - {"vcpus", "memory_gb", "gpus"} or "vcpus" not in s:
                raise bad(f"shapes.{t}", "must be {vcpus, memory_gb, gpus}")
            try:
                shapes[str(t)] = Shape(int(s["vcpus"]), int(s.get("memory_gb", 0)), int(s.get("gpus", 0)))
            except (TypeError, ValueError) as exc:
                raise bad(f"shapes.{t}", f"numbers expected ({exc})") from exc
        root = doc.get("root", "/cluster0")
        if not isinstance(root, str) or not root.startswith("/") or root.count("/") != 1:
            raise bad("root", f"must be the path of a root vertex like /cluster0, got {root!r}")
        state_dir = Path(doc["state_dir"])
        if not state_dir.is_absolute() and base is not None:
            state_dir = base / state_dir
        state_dir = state_dir.resolve()
        owner = opt_str("owner") or f"{_user()}@{socket.gethostname()}:{state_dir}"
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
            max_attempts=pos_int("max_attempts", 5) or 5,
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


class Ec2Provider:
    """EC2 through boto3 (see the module docstring)."""

    def __init__(self, config: Ec2Config, *, client: Any = None) -> None:
        self.config = config
        self.name = f"ec2:{config.source}"
        self._lock = threading.RLock()
        config.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.journal_path = config.state_dir / "ec2-journal.json"
        self._journal = self._read_journal()
        self._client = client
        self._shapes: dict[str, Shape] = dict(config.shapes)
        self._described = False
        self._zones: list[str] | None = None
        #: seconds spent in the last grow, by phase (mapping, provider call, JGF)
        self.last_timing: dict[str, float] = {}

    @classmethod
    def from_config(cls, path: str | Path) -> Ec2Provider:
        return cls(Ec2Config.load(path))

    # ------------------------------------------------------------------ boto3
    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            cfg = self.config
            try:
                session = boto3.session.Session(profile_name=cfg.profile, region_name=cfg.region)
            except Exception as exc:  # ProfileNotFound and friends
                raise CloudAuthError(f"{self.name}: profile {cfg.profile!r}: {exc}") from exc
            self._client = session.client(
                "ec2",
                endpoint_url=cfg.endpoint_url,
                config=Config(retries={"mode": cfg.retry_mode, "max_attempts": cfg.max_attempts}),
            )
        return self._client

    def _call(self, op: str, **kw: Any) -> Any:
        """One EC2 call; auth failures become CloudAuthError naming the profile."""
        from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

        try:
            return getattr(self.client, op)(**kw)
        except (NoCredentialsError, PartialCredentialsError) as exc:
            raise CloudAuthError(self._auth_msg(str(exc))) from exc
        except ClientError as exc:
            if _code(exc) in AUTH_CODES:
                raise CloudAuthError(self._auth_msg(f"{_code(exc)}: {exc}")) from exc
            raise

    def _auth_msg(self, detail: str) -> str:
        who = f"profile {self.config.profile!r}" if self.config.profile else "the environment's credentials"
        return f"{self.name}: EC2 ({self.config.region}) refused {who}: {detail}"

    # ------------------------------------------------------------------ journal
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
        return doc

    def _write_journal(self) -> None:
        tmp = self.journal_path.with_name(f".{self.journal_path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(self._journal))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.journal_path)

    @property
    def requests(self) -> dict[str, dict[str, Any]]:
        return self._journal["requests"]

    # ------------------------------------------------------------------ shapes and zones
    def shape(self, itype: str) -> Shape | None:
        s = self._shapes.get(itype)
        if s is None and not self._described:
            self._describe_types([itype])
            s = self._shapes.get(itype)
        return s

    def _describe_types(self, names: list[str] | None = None) -> None:
        from botocore.exceptions import ClientError

        kw: dict[str, Any] = {}
        if names is not None:
            names = [n for n in names if n not in self._shapes]
            if not names:
                return
        try:
            pages = self.client.get_paginator("describe_instance_types").paginate(
                **({"InstanceTypes": names} if names else kw)
            )
            for page in pages:
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
        except ClientError as exc:
            if _code(exc) in AUTH_CODES:
                raise CloudAuthError(self._auth_msg(str(exc))) from exc
            if _code(exc) not in ("InvalidInstanceType",):
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
    def grow(self, jobspec: str | bytes, request_id: str) -> bytes:
        """Create instances for ``jobspec``; return them as JGF (idempotent per ``request_id``)."""
        with self._lock:
            rec = self.requests.get(request_id)
            if rec is not None and rec.get("state") == "granted":
                return rec["jgf"].encode()
            if rec is not None and rec.get("state") == "released":
                raise StateError(f"{self.name}: request {request_id} was granted and already given back")
            t0 = time.perf_counter()
            js = parse_jobspec(jobspec, source=f"{self.name} request {request_id}")
            req = request_from_jobspec(js)
            plan = self._plan(req)
            t1 = time.perf_counter()
            created = rec["instances"] if rec is not None and rec.get("state") == "created" else None
            if created is None:
                created = self._create(request_id, req, plan)
            try:
                described = self._describe_instances(created)
                t2 = time.perf_counter()
                ids = _Ids(self._journal["next_rank"], self._journal["next_uniq"])
                doc, paths = build_jgf(self.config.root, described, self._shapes, ids, self._journal["zones"])
            except Exception:
                self._terminate(created)
                self.requests.pop(request_id, None)
                self._write_journal()
                raise
            self._journal["next_rank"], self._journal["next_uniq"] = ids.rank, ids.uniq
            self.requests[request_id] = {
                "state": "granted",
                "instances": created,
                "paths": paths,
                "jgf": doc.decode(),
                "at": time.time(),
            }
            t3 = time.perf_counter()
            self._write_journal()
            self.last_timing = {"mapping_s": t1 - t0, "call_s": t2 - t1, "jgf_s": t3 - t2}
            return doc

    def _plan(self, req: Ec2Request) -> dict[str, Any]:
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
        held = sum(
            len(r.get("instances", ())) for r in self.requests.values() if r.get("state") != "released"
        )
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
        return {"types": types, "zones": zones_wanted, "max": max(req.nodes_min, per_zone_max)}

    def _tags(self, request_id: str) -> list[dict[str, Any]]:
        tags = [{"Key": k, "Value": v} for k, v in self.config.tags.items()]
        tags += [{"Key": OWNER_TAG, "Value": self.config.owner}, {"Key": REQUEST_TAG, "Value": request_id}]
        return [{"ResourceType": "instance", "Tags": tags}]

    def _token(self, request_id: str, part: str) -> str:
        return hashlib.blake2b(
            f"{self.config.owner}|{request_id}|{part}".encode(), digest_size=16
        ).hexdigest()

    def _create(self, request_id: str, req: Ec2Request, plan: dict[str, Any]) -> list[str]:
        """Create the instances (journal first); BusyError/UnsatisfiableError after terminating partial work."""
        from botocore.exceptions import ClientError

        zones: list[str | None] = list(self.zones()[: plan["zones"]]) if plan["zones"] else [None]
        self.requests[request_id] = {"state": "creating", "instances": [], "at": time.time()}
        self._write_journal()
        created: list[str] = []
        try:
            for z in zones:
                if self.config.mode == "fleet":
                    created += self._create_fleet(request_id, req, plan, z)
                else:
                    created += self._run_instances(request_id, req, plan, z)
                self.requests[request_id]["instances"] = list(created)
                self._write_journal()
        except ClientError as exc:
            code = _code(exc)
            self._undo(request_id, created)
            if code in CAPACITY_CODES:
                raise BusyError(f"{self.name}: no capacity now ({code}): {exc}") from exc
            if code in INVALID_CODES or code.startswith("Invalid"):
                raise UnsatisfiableError(f"{self.name}: EC2 refused the request ({code}): {exc}") from exc
            raise StateError(f"{self.name}: EC2 error {code}: {exc}") from exc
        except BaseException:
            self._undo(request_id, created)
            raise
        self.requests[request_id] = {"state": "created", "instances": created, "at": time.time()}
        self._write_journal()
        if os.environ.get("FLUXLITE_EC2_FAULT") == "exit-after-create":  # fault injection (tests only)
            os._exit(137)
        return created

    def _undo(self, request_id: str, created: list[str]) -> None:
        """Terminate what a failed request created and forget the request."""
        if created:
            self._terminate(created)
        self.requests.pop(request_id, None)
        self._write_journal()

    def _run_instances(
        self, request_id: str, req: Ec2Request, plan: dict[str, Any], zone: str | None
    ) -> list[str]:
        kw: dict[str, Any] = {
            "ImageId": self.config.image_id,
            "InstanceType": plan["types"][0],
            "MinCount": req.nodes_min,
            "MaxCount": plan["max"],
            "TagSpecifications": self._tags(request_id),
            "ClientToken": self._token(request_id, zone or "-"),
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

    def _template(self) -> str:
        """The provider's launch template (created once; fleets need one)."""
        from botocore.exceptions import ClientError

        name = "fluxlite-" + hashlib.blake2b(self.config.owner.encode(), digest_size=8).hexdigest()
        try:
            self._call("describe_launch_templates", LaunchTemplateNames=[name])
        except ClientError as exc:
            if "NotFound" not in _code(exc) and _code(exc) != "InvalidLaunchTemplateName.NotFoundException":
                raise
            self._call(
                "create_launch_template",
                LaunchTemplateName=name,
                LaunchTemplateData={"ImageId": self.config.image_id},
            )
        return name

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
        out = self._call(
            "create_fleet",
            Type="instant",
            ClientToken=self._token(request_id, f"fleet-{zone or '-'}"),
            LaunchTemplateConfigs=[
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": self._template(),
                        "Version": "$Latest",
                    },
                    "Overrides": overrides,
                }
            ],
            TargetCapacitySpecification={
                "TotalTargetCapacity": plan["max"],
                "DefaultTargetCapacityType": market,
            },
            TagSpecifications=self._tags(request_id),
        )
        ids = [i for group in out.get("Instances", []) for i in group.get("InstanceIds", [])]
        if len(ids) < req.nodes_min:
            self._terminate(ids)
            errs = "; ".join(f"{e.get('ErrorCode')}: {e.get('ErrorMessage')}" for e in out.get("Errors", []))
            raise BusyError(
                f"{self.name}: the fleet delivered {len(ids)} of at least {req.nodes_min} instances"
                + (f" ({errs})" if errs else "")
            )
        return ids

    def _describe_instances(self, ids: list[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        pages = self.client.get_paginator("describe_instances").paginate(InstanceIds=ids)
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
                        }
                    )
        order = {x: n for n, x in enumerate(ids)}
        out.sort(key=lambda d: order.get(d["id"], 0))
        for d in out:
            if self.shape(d["type"]) is None:
                raise UnsatisfiableError(
                    f"{self.name}: EC2 returned type {d['type']} whose shape is unknown (add it under shapes:)"
                )
        return out

    def _terminate(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self._call("terminate_instances", InstanceIds=ids)

    def shrink(self, jgf: str | bytes) -> None:
        """Terminate the instances whose node vertices ``jgf`` names (whole nodes only; nothing changes on error)."""
        by_path: dict[str, tuple[str, str]] = {}
        with self._lock:
            for rid, rec in self.requests.items():
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
                        raise StateError(f"{self.name}: {p} is not an instance this provider granted")
                    nodes.append(by_path[p])
                elif v.type in ("core", "memory", "gpu"):
                    parts.append(p)
            partial = sorted({p.rsplit("/", 1)[0] for p in parts} - listed)
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
                if not rec["instances"]:
                    rec["state"] = "released"
                    rec.pop("jgf", None)
            self._write_journal()

    # ------------------------------------------------------------------ leaks
    def owned_instances(self) -> list[dict[str, Any]]:
        """Live (not terminated) instances tagged with this provider's owner."""
        out = []
        pages = self.client.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{OWNER_TAG}", "Values": [self.config.owner]},
                {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
            ]
        )
        for page in pages:
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
                        }
                    )
        return out

    def orphans(self, is_attached: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
        """Owned instances that no job holds: not attached (if ``is_attached`` is given) or not granted."""
        granted: dict[str, str] = {}
        for rec in self.requests.values():
            if rec.get("state") == "granted":
                granted.update(rec.get("paths", {}))
        out = []
        for i in self.owned_instances():
            path = granted.get(i["id"])
            held = path is not None and (is_attached is None or is_attached(path))
            if not held:
                out.append(i)
        return out

    def reconcile(
        self, is_attached: Callable[[str], bool] | None = None, *, dry_run: bool = False
    ) -> list[str]:
        """Terminate orphans (see :meth:`orphans`); returns their ids.  Forgets requests left with nothing."""
        with self._lock:
            gone = [i["id"] for i in self.orphans(is_attached)]
            if gone and not dry_run:
                self._terminate(gone)
                dead = set(gone)
                for rid in list(self.requests):
                    rec = self.requests[rid]
                    rec["instances"] = [x for x in rec.get("instances", []) if x not in dead]
                    for iid in [x for x in rec.get("paths", {}) if x in dead]:
                        rec["paths"].pop(iid)
                    if not rec["instances"] and rec.get("state") != "released":
                        del self.requests[rid]  # a retry of this request creates anew
                self._write_journal()
            return gone

    def close(self) -> None:
        with self._lock:
            self._write_journal()
