"""Shared pieces of the EC2 fault tests: in-process trees over a real provider, moto through the fault proxy."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import boto3
import orjson

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.readers.generate import generate_graph
from hierarchy import Instance
from hierarchy.base import MatchOutcome, ReleaseOutcome, ShrinkOutcome
from providers.ec2 import OWNER_TAG, REQUEST_TAG, Ec2Config

#: types every fault test may use (moto describes them; G3 adds GPU shapes)
TYPES = ["t2.micro", "t2.small", "t2.medium", "t2.large"]


def deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


class InProcParent:
    """An :class:`Instance` seen as a :class:`hierarchy.base.Parent`, without gRPC (same calls, same errors)."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self.address = f"inproc:{inst.name}"

    def match_allocate(self, jobspec: bytes, *, request_id: str, lease: bool = False, child_name: str = "",
                       child_address: str = "", lease_secret: str = "",
                       timeout: float | None = None) -> MatchOutcome:  # fmt: skip
        return self.inst.match_allocate(jobspec, request_id=request_id, lease=lease, child_name=child_name,
                                        child_address=child_address, lease_secret=lease_secret,
                                        deadline=deadline(timeout))  # fmt: skip

    def match_grow(self, jobid: int, jobspec: bytes, *, request_id: str, lease_token: str = "",
                   timeout: float | None = None) -> MatchOutcome:  # fmt: skip
        return self.inst.match_grow(jobid, jobspec, request_id=request_id, lease_token=lease_token,
                                    deadline=deadline(timeout), after_reply=lambda start: start())  # fmt: skip

    def shrink(self, jobid: int, *, jgf: bytes = b"", paths: Sequence[str] = (), lease_token: str = "",
               request_id: str = "", timeout: float | None = None) -> ShrinkOutcome:  # fmt: skip
        return self.inst.shrink(jobid, jgf=jgf, paths=paths, lease_token=lease_token, request_id=request_id,
                                deadline=deadline(timeout))  # fmt: skip

    def release(self, jobid: int, *, lease_token: str = "", timeout: float | None = None) -> ReleaseOutcome:
        return self.inst.release(jobid, lease_token=lease_token, deadline=deadline(timeout))

    def heartbeat(self, jobid: int, *, lease_token: str = "", timeout: float | None = None) -> float:
        return self.inst.heartbeat(jobid, lease_token)

    def health(self, *, timeout: float | None = None) -> dict[str, Any]:
        return {"name": self.inst.name}

    def close(self) -> None:
        pass


def node_jobspec(n: int = 1, cores: int = 1) -> str:
    """node[n] -> slot -> socket -> core[cores]: matches local graphs, and asks EC2 for ``cores`` vCPUs a node."""
    return (
        f"version: 1\nresources:\n  - type: node\n    count: {n}\n    with:\n      - type: slot\n"
        "        count: 1\n        label: default\n        with:\n          - type: socket\n"
        f"            count: 1\n            with:\n              - type: core\n                count: {cores}\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    )


def provider_config(endpoint: str, state_dir: Path, **kw: Any) -> Ec2Config:
    doc = {
        "region": "us-east-1",
        "endpoint_url": endpoint,
        "image_id": "ami-12c6146b",
        "state_dir": str(state_dir),
        "allowed_types": TYPES,
        **kw,
    }
    return Ec2Config.from_dict(doc, source="test.yaml")


def live(url: str, owner: str, request: str | None = None) -> list[dict[str, Any]]:
    """Instances tagged with ``owner`` (and ``request``) that are pending or running, straight from moto."""
    filters = [
        {"Name": f"tag:{OWNER_TAG}", "Values": [owner]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
    ]
    if request is not None:
        filters.append({"Name": f"tag:{REQUEST_TAG}", "Values": [request]})
    c = boto3.session.Session().client("ec2", endpoint_url=url, region_name="us-east-1")
    out = c.describe_instances(Filters=filters)
    return [i for r in out["Reservations"] for i in r["Instances"]]


def live_ids(url: str, owner: str) -> set[str]:
    return {i["InstanceId"] for i in live(url, owner)}


def node_paths(jgf: bytes) -> list[str]:
    return [
        n["metadata"]["paths"]["containment"]
        for n in orjson.loads(jgf)["graph"]["nodes"]
        if n["metadata"]["type"] == "node"
    ]


def small_engine(nodes: int = 1, cores: int = 2) -> Engine:
    return Engine(generate_graph(nodes=nodes, sockets=1, cores=cores))


def held_instance_ids(inst: Instance) -> set[str]:
    """Instance ids of the cloud nodes that some job of ``inst`` holds."""
    g = inst.engine.graph
    out = set()
    for jobid in list(inst.engine.jobs):
        for v in inst.engine.traverser.job_vertices(jobid):
            if g.v_type[v] == "node" and g.properties(v).get("instance_type"):
                out.add(g.v_name[v])
    return out


def assert_consistent(inst: Instance) -> None:
    assert recount_errors(inst.engine, [0]) == []


def cores_jobspec(cores: int = 1) -> str:
    """slot -> core[cores] (a job that shares a node with others)."""
    return (
        "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
        f"      - type: core\n        count: {cores}\nattributes:\n  system:\n    duration: 3600\n"
        "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
    )
