"""The EC2 provider against moto's server over real HTTP (boto3 -> loopback), never AWS.

One moto server per module; each test gets its own provider state
directory and, where isolation matters, its own cloud account.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import orjson
import pytest
from botocore.awsrequest import AWSResponse

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import BusyError, InputError, StateError, UnsatisfiableError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph
from providers import ExternalAPI, create_provider
from providers._moto import MotoServer, account_credentials
from providers.ec2 import OWNER_TAG, REQUEST_TAG, Ec2Config, Ec2Provider, request_from_jobspec

TYPES = [
    "t2.micro",
    "t2.small",
    "t2.medium",
    "t2.large",
    "t2.xlarge",
    "t2.2xlarge",
    "g2.2xlarge",
    "g3.4xlarge",
]
G3 = {
    "g2.2xlarge": {"vcpus": 8, "memory_gb": 15, "gpus": 1},
    "g3.4xlarge": {"vcpus": 16, "memory_gb": 122, "gpus": 4},
}
#: one core of the local graph (slot -> core)
LOCAL = (
    "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
    "      - type: core\n        count: 1\nattributes:\n  system:\n    duration: 3600\n"
    "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
)


def jobspec(
    nodes: int | str = 1, cores: int = 1, memory: int = 0, gpus: int = 0, zones: int | str = 0
) -> str:
    kids = f"          - type: core\n            count: {cores}\n"
    if memory:
        kids += f"          - type: memory\n            count: {memory}\n"
    if gpus:
        kids += f"          - type: gpu\n            count: {gpus}\n"
    body = (
        f"  - type: node\n    count: {nodes}\n    with:\n      - type: slot\n        count: 1\n"
        f"        label: default\n        with:\n{kids}"
    )
    if zones:
        body = (
            f"  - type: zone\n    count: {zones}\n    with:\n"
            + "\n".join("    " + line for line in body.splitlines())
            + "\n"
        )
    return (
        "version: 1\nresources:\n" + body + "attributes:\n  system:\n    duration: 3600\n"
        "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
    )




def config(moto: MotoServer, tmp_path: Path, **kw: Any) -> Ec2Config:
    doc = {
        "region": "us-east-1",
        "endpoint_url": moto.url,
        "image_id": "ami-12c6146b",
        "state_dir": str(tmp_path / "ec2"),
        "allowed_types": TYPES,
        "shapes": G3,
        **kw,
    }
    return Ec2Config.from_dict(doc, source="test.yaml")


def ec2(moto: MotoServer) -> Any:
    return boto3.session.Session().client(
        "ec2", endpoint_url=moto.url, region_name="us-east-1"
    )  # env creds now


def live(moto: MotoServer, owner: str) -> list[dict[str, Any]]:
    out = ec2(moto).describe_instances(
        Filters=[
            {"Name": f"tag:{OWNER_TAG}", "Values": [owner]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )
    return [i for r in out["Reservations"] for i in r["Instances"]]


def nodes_of(doc: bytes) -> list[dict[str, Any]]:
    return [n for n in orjson.loads(doc)["graph"]["nodes"] if n["metadata"]["type"] == "node"]


def engine() -> Engine:
    return Engine(generate_graph(nodes=1, sockets=1, cores=2))


# ---------------------------------------------------------------------- config and mapping
def test_config_errors_name_the_key(tmp_path: Path) -> None:
    base = {"region": "us-east-1", "image_id": "ami-1", "state_dir": str(tmp_path)}
    for doc, key in [
        ({**base, "mode": "batch"}, "mode: must be one of types, fleet"),
        ({**base, "market": "reserved"}, "market: must be one of"),
        ({**base, "max_instances": 0}, "max_instances: must be a positive integer"),
        ({**base, "colour": "blue"}, "colour: unknown key"),
        ({k: v for k, v in base.items() if k != "image_id"}, "image_id: required"),
        ({**base, "allowed_types": []}, "allowed_types: must be a non-empty list"),
        ({**base, "tags": {"fluxlite:owner": "x"}}, "tags: names starting with 'fluxlite:'"),
        ({**base, "shapes": {"x.big": {"cpus": 4}}}, "shapes.x.big: must be"),
        ({**base, "root": "/a/b"}, "root: must be the path of a root vertex"),
    ]:
        with pytest.raises(InputError, match=key):
            Ec2Config.from_dict(doc, source="c.yaml")
    f = tmp_path / "c.yaml"
    f.write_text("region: us-east-1\nimage_id: ami-1\nstate_dir: st\n")
    cfg = Ec2Config.load(f)
    assert cfg.state_dir == (tmp_path / "st").resolve() and cfg.mode == "types" and cfg.allowed_types is None


def test_jobspec_to_request() -> None:
    r = request_from_jobspec(parse_jobspec(jobspec(3, cores=2, memory=4, gpus=1)))
    assert (r.nodes_min, r.nodes_max, r.cores, r.memory_gb, r.gpus, r.zones_min) == (3, 3, 2, 4, 1, 0)
    r = request_from_jobspec(parse_jobspec(jobspec('{min: 2, max: 5, operator: "+", operand: 1}', cores=1)))
    assert (r.nodes_min, r.nodes_max) == (2, 5)
    r = request_from_jobspec(parse_jobspec(jobspec(2, zones=1)))
    assert (r.zones_min, r.nodes_min) == (1, 2)
    with pytest.raises(UnsatisfiableError, match="no 'disk'"):
        request_from_jobspec(parse_jobspec(jobspec(1).replace("type: core", "type: disk")))


# ---------------------------------------------------------------------- types mode
def test_types_mode_grants_a_subgraph_that_attaches(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path))
    assert isinstance(p, ExternalAPI)
    doc = p.grow(jobspec(2, cores=2, memory=4), "r1")  # smallest type with 2 vCPUs and 4 GB: t2.medium
    nodes = nodes_of(doc)
    assert len(nodes) == 2 and {n["metadata"]["properties"]["instance_type"] for n in nodes} == {"t2.medium"}
    g = orjson.loads(doc)["graph"]
    assert len(g["nodes"]) == 1 + 1 + 2 * (1 + 2 + 4)  # root, zone, nodes with 2 cores and 4 GB each
    assert len(g["edges"]) == len(g["nodes"]) - 1
    props = nodes[0]["metadata"]["properties"]
    assert props["zone"].startswith("us-east-1") and props["lifecycle"] == "on-demand" and props["private_ip"]
    inst = live(moto, p.config.owner)
    assert sorted(i["InstanceId"] for i in inst) == sorted(n["metadata"]["name"] for n in nodes)
    tags = {t["Key"]: t["Value"] for t in inst[0]["Tags"]}
    assert tags[REQUEST_TAG] == "r1" and tags[OWNER_TAG] == p.config.owner
    # the receiving instance attaches it under its root, at the zone vertex, and allocates it
    eng = engine()
    job = eng.allocate(parse_jobspec(LOCAL), fmt="jgf").jobid
    new = eng.attach(doc, source="ec2", allocate_to=job)
    assert len(new) == len(g["nodes"]) - 1 and recount_errors(eng, [0]) == []
    # a retry creates nothing and returns the same document; the journal says granted
    assert p.grow(jobspec(2, cores=2, memory=4), "r1") == doc
    assert len(live(moto, p.config.owner)) == 2
    assert p.requests["r1"]["state"] == "granted"
    # a restarted provider (same state dir) still answers the retry
    p.close()
    p = Ec2Provider(config(moto, tmp_path))
    assert p.grow(jobspec(2, cores=2, memory=4), "r1") == doc
    # shrink of part of a node is refused, nothing changed; a whole node is terminated
    part = orjson.dumps(
        {"graph": {"nodes": [n for n in g["nodes"] if n["metadata"]["type"] == "core"][:1], "edges": []}}
    )
    with pytest.raises(StateError, match="whole nodes"):
        p.shrink(part)
    assert len(live(moto, p.config.owner)) == 2
    one = nodes[0]
    sub = [
        n
        for n in g["nodes"]
        if n["metadata"]["paths"]["containment"].startswith(one["metadata"]["paths"]["containment"])
    ]
    p.shrink(orjson.dumps({"graph": {"nodes": sub, "edges": []}}))
    assert [i["InstanceId"] for i in live(moto, p.config.owner)] == [nodes[1]["metadata"]["name"]]
    p.shrink(orjson.dumps({"graph": {"nodes": sub, "edges": []}}))  # a retried hand-back: accepted, no-op
    assert [i["InstanceId"] for i in live(moto, p.config.owner)] == [nodes[1]["metadata"]["name"]]
    stranger = orjson.loads(orjson.dumps(one))
    stranger["metadata"]["paths"]["containment"] = one["metadata"]["paths"]["containment"][:-3] + "xyz"
    with pytest.raises(StateError, match="not an instance this provider granted"):
        p.shrink(orjson.dumps({"graph": {"nodes": [stranger], "edges": []}}))
    rest = [
        n
        for n in g["nodes"]
        if n["metadata"]["paths"]["containment"].startswith(nodes[1]["metadata"]["paths"]["containment"])
    ]
    p.shrink(orjson.dumps({"graph": {"nodes": rest, "edges": []}}))
    assert live(moto, p.config.owner) == [] and p.requests["r1"]["state"] == "released"


def test_type_choice_by_size_or_price_and_impossible_shapes(
    moto: MotoServer, account: dict, tmp_path: Path
) -> None:
    p = Ec2Provider(config(moto, tmp_path))
    req = request_from_jobspec(parse_jobspec(jobspec(1, cores=8, memory=15, gpus=1)))
    assert p.candidate_types(req) == ["g2.2xlarge", "g3.4xlarge"]
    req = request_from_jobspec(parse_jobspec(jobspec(1, cores=1)))
    assert p.candidate_types(req)[:3] == ["t2.micro", "t2.small", "t2.medium"]
    cheap = Ec2Provider(config(moto, tmp_path / "b", prices={"t2.micro": 0.5, "t2.small": 0.01}))
    assert cheap.candidate_types(req)[0] == "t2.small"
    with pytest.raises(UnsatisfiableError, match="no allowed type"):
        p.grow(jobspec(1, cores=64), "big")
    with pytest.raises(UnsatisfiableError, match="max_instances"):
        Ec2Provider(config(moto, tmp_path / "c", max_instances=2)).grow(jobspec(3), "many")
    assert live(moto, p.config.owner) == [] and "big" not in p.requests


def test_count_range_takes_what_fits(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, max_instances=3))
    sent: list[dict] = []
    p.client.meta.events.register(
        "provide-client-params.ec2.RunInstances", lambda params, **kw: sent.append(dict(params))
    )
    doc = p.grow(jobspec('{min: 1, max: 8, operator: "+", operand: 1}'), "r")
    # EC2 starts between MinCount and MaxCount (moto: MinCount); MaxCount is what max_instances leaves
    assert (sent[0]["MinCount"], sent[0]["MaxCount"]) == (1, 3)
    assert 1 <= len(nodes_of(doc)) <= 3
    p.grow(jobspec(3 - len(nodes_of(doc))), "fill") if len(nodes_of(doc)) < 3 else None
    with pytest.raises(BusyError, match="max_instances=3"):
        p.grow(jobspec(1), "more")
    assert p.reconcile(lambda path: False) == []  # this process's grants: their caller attaches them
    p.close()
    p = Ec2Provider(config(moto, tmp_path, max_instances=3))  # restarted: nothing attached anywhere
    p.reconcile(lambda path: False)  # everything is an orphan
    assert live(moto, p.config.owner) == []


def test_spot_and_zone_constraints(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, market="spot", max_zones=2))
    doc = p.grow(jobspec(1, zones=2), "z2")  # one node in each of two zones
    nodes = nodes_of(doc)
    assert len({n["metadata"]["properties"]["zone"] for n in nodes}) == 2
    assert {n["metadata"]["properties"]["lifecycle"] for n in nodes} == {"spot"}
    zone_vertices = [n for n in orjson.loads(doc)["graph"]["nodes"] if n["metadata"]["type"] == "zone"]
    assert len(zone_vertices) == 2
    with pytest.raises(UnsatisfiableError, match="max_zones is 2"):
        p.grow(jobspec(1, zones=3), "z3")
    one = Ec2Provider(config(moto, tmp_path / "b", zones=["us-east-1c"]))
    doc1 = one.grow(jobspec(2, zones=1), "z1")
    assert {n["metadata"]["properties"]["zone"] for n in nodes_of(doc1)} == {"us-east-1c"}
    p.shrink(doc)
    one.shrink(doc1)


# ---------------------------------------------------------------------- fleet mode
def test_fleet_mode(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, mode="fleet", allowed_types=["t2.small", "t2.medium"]))
    doc = p.grow(jobspec(3, cores=1, memory=2), "f1")
    nodes = nodes_of(doc)
    assert len(nodes) == 3
    assert {n["metadata"]["properties"]["instance_type"] for n in nodes} <= {"t2.small", "t2.medium"}
    assert len(live(moto, p.config.owner)) == 3
    assert p.grow(jobspec(3, cores=1, memory=2), "f1") == doc
    p.shrink(doc)
    assert live(moto, p.config.owner) == []


# ---------------------------------------------------------------------- accounts
def test_two_configs_are_two_cloud_accounts(
    moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_creds = account_credentials(moto.url, "222222222222")
    b_creds = account_credentials(moto.url, "333333333333")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", a_creds["AWS_ACCESS_KEY_ID"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", a_creds["AWS_SECRET_ACCESS_KEY"])
    a = Ec2Provider(config(moto, tmp_path / "a", owner="site-a"))
    doc = a.grow(jobspec(1), "x")
    a_ids = [n["metadata"]["name"] for n in nodes_of(doc)]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", b_creds["AWS_ACCESS_KEY_ID"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", b_creds["AWS_SECRET_ACCESS_KEY"])
    b = Ec2Provider(config(moto, tmp_path / "b", owner="site-a"))  # even with the same owner tag
    assert b.owned_instances() == []
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match=r"InvalidInstanceID\.NotFound"):
        b.client.terminate_instances(InstanceIds=a_ids)
    assert [i["id"] for i in a.owned_instances()] == a_ids  # a's client keeps a's keys
    a.shrink(doc)


# ---------------------------------------------------------------------- failures
def _error_response(code: str, status: int = 400) -> AWSResponse:
    body = (
        f"<Response><Errors><Error><Code>{code}</Code><Message>injected {code}</Message></Error></Errors>"
        "<RequestID>fluxlite-test</RequestID></Response>"
    ).encode()
    return AWSResponse("http://moto", status, {}, _Raw(body))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._b = body

    def stream(self, **kw: Any) -> Iterator[bytes]:
        yield self._b


def test_capacity_error_is_busy_and_leaves_nothing(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, max_attempts=1))
    p.client.meta.events.register(
        "before-send.ec2.RunInstances", lambda **kw: _error_response("InsufficientInstanceCapacity", 500)
    )
    with pytest.raises(BusyError, match="InsufficientInstanceCapacity"):
        p.grow(jobspec(1), "cap")
    assert live(moto, p.config.owner) == [] and p.requests == {}


def test_second_zone_failing_releases_the_first(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path))
    calls = []

    def second_fails(**kw: Any) -> AWSResponse | None:
        calls.append(1)
        return _error_response("InsufficientInstanceCapacity", 500) if len(calls) > 1 else None

    p.client.meta.events.register("before-send.ec2.RunInstances", second_fails)
    with pytest.raises(BusyError):
        p.grow(jobspec(1, zones=2), "half")
    assert live(moto, p.config.owner) == [] and p.requests == {}


def test_invalid_type_is_unsatisfiable(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, allowed_types=["t2.micro"]))
    p.client.meta.events.register(
        "before-send.ec2.RunInstances", lambda **kw: _error_response("InvalidParameterValue")
    )
    with pytest.raises(UnsatisfiableError, match="InvalidParameterValue"):
        p.grow(jobspec(1), "bad")
    assert live(moto, p.config.owner) == []


def test_throttling_is_retried_by_botocore(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, retry_mode="standard", max_attempts=4))
    seen = []

    def throttle_twice(**kw: Any) -> AWSResponse | None:
        seen.append(1)
        return _error_response("RequestLimitExceeded", 503) if len(seen) <= 2 else None

    p.client.meta.events.register("before-send.ec2.RunInstances", throttle_twice)
    doc = p.grow(jobspec(1), "slow")
    assert len(seen) == 3 and len(nodes_of(doc)) == 1
    p.shrink(doc)


def test_partly_fulfilled_fleet_is_busy_and_released(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    p = Ec2Provider(config(moto, tmp_path, mode="fleet"))

    def drop_half(parsed: dict, **kw: Any) -> None:
        keep = 1
        for group in parsed.get("Instances", []):
            group["InstanceIds"], keep = group["InstanceIds"][:keep], max(0, keep - len(group["InstanceIds"]))

    p.client.meta.events.register("after-call.ec2.CreateFleet", drop_half)
    with pytest.raises(BusyError, match="delivered 1 of at least 4"):
        p.grow(jobspec(4), "short")
    # the one delivered was terminated; the ones the fleet "did not report" are orphans: reconcile finds them
    left = p.reconcile()
    assert live(moto, p.config.owner) == [] and len(left) == 3


def test_auth_failure_names_the_profile(
    moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "aws"
    cfg.write_text("[profile other]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(cfg))
    with pytest.raises(InputError, match="profile 'nosuch'"):
        Ec2Provider(config(moto, tmp_path, profile="nosuch")).grow(jobspec(1), "r")
    p = Ec2Provider(config(moto, tmp_path / "b"))
    p.client.meta.events.register("before-send.ec2.*", lambda **kw: _error_response("AuthFailure", 401))
    with pytest.raises(InputError, match=r"refused the credentials \(.*the environment's credentials\): AuthFailure"):
        p.grow(jobspec(1), "r")


def test_registered_as_ec2(moto: MotoServer, account: dict, tmp_path: Path) -> None:
    f = tmp_path / "ec2.yaml"
    f.write_text(f"region: us-east-1\nendpoint_url: {moto.url}\nimage_id: ami-1\nstate_dir: st\n")
    p = create_provider(f"ec2:{f}")
    assert isinstance(p, Ec2Provider) and p.config.state_dir == (tmp_path / "st").resolve()


def test_cleanup_command_lists_and_terminates_orphans(
    moto: MotoServer, account: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from providers.cli import main_providers

    f = tmp_path / "ec2.yaml"
    f.write_text(
        f"region: us-east-1\nendpoint_url: {moto.url}\nimage_id: ami-1\nstate_dir: st\nowner: cleanup-test\n"
        "allowed_types: [t2.micro]\n"
    )
    p = Ec2Provider.from_config(f)
    kept = p.grow(jobspec(1), "kept")
    # an orphan: created with the owner's tag, never granted (as after a crash before the journal said so)
    orphan = ec2(moto).run_instances(
        ImageId="ami-1", InstanceType="t2.micro", MinCount=1, MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": OWNER_TAG, "Value": "cleanup-test"}]}],
    )["Instances"][0]["InstanceId"]  # fmt: skip
    assert main_providers(["ec2", "cleanup", "--config", str(f), "--dry-run", "--json"]) == 0
    assert [r["id"] for r in orjson.loads(capsys.readouterr().out)] == [orphan]
    assert len(live(moto, "cleanup-test")) == 2
    p.close()  # no live owner now (test_ec2_faults: cleanup beside a live one)
    assert main_providers(["ec2", "cleanup", "--config", str(f)]) == 0
    assert f"1 instance(s) terminated (owner cleanup-test)\n  {orphan}" in capsys.readouterr().out
    assert [i["InstanceId"] for i in live(moto, "cleanup-test")] == [nodes_of(kept)[0]["metadata"]["name"]]
    assert main_providers(["ec2", "cleanup", "--config", str(tmp_path / "nope.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err
    p = Ec2Provider.from_config(f)
    p.shrink(kept)


def test_fleet_with_any_type_sends_instance_requirements(
    moto: MotoServer, account: dict, tmp_path: Path
) -> None:
    """allowed_types: any -> one override with InstanceRequirements from the jobspec (moto 5.2 cannot
    serve such fleets, so the request is checked and answered with an injected capacity error)."""
    p = Ec2Provider(config(moto, tmp_path, mode="fleet", allowed_types="any", market="spot",
                           instance_requirements={"BurstablePerformance": "included"}))  # fmt: skip
    sent: list[dict] = []
    p.client.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **kw: sent.append(params)
    )
    p.client.meta.events.register(
        "before-send.ec2.CreateFleet", lambda **kw: _error_response("InsufficientInstanceCapacity", 500)
    )
    with pytest.raises(BusyError):
        p.grow(jobspec(2, cores=4, memory=16, gpus=1), "any")
    (o,) = sent[0]["LaunchTemplateConfigs"][0]["Overrides"]
    assert o["InstanceRequirements"] == {
        "VCpuCount": {"Min": 4}, "MemoryMiB": {"Min": 16 * 1024}, "AcceleratorCount": {"Min": 1},
        "BurstablePerformance": "included",
    }  # fmt: skip
    assert sent[0]["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 2,
        "DefaultTargetCapacityType": "spot",
    }
    assert live(moto, p.config.owner) == [] and p.requests == {}
