"""The EC2 provider under faults: moto's server over HTTP behind a fault-injecting proxy (tests/providers/faultproxy.py).

Each test is one defect of issue 18 as an operator would meet it; every
failure path is checked to leave the job, the graph, the journal and EC2 in
step.  Instances (of fluxlite) run in-process here, as a tree joined by
:class:`InProcParent`; tests/providers/test_ec2_tree.py runs real processes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import orjson
import pytest

from fluxlite.errors import BusyError, InputError, StateError
from hierarchy import Instance
from providers._moto import MotoServer
from providers.ec2 import CloudBusyError, Ec2Config, Ec2Provider
from tests.providers.ec2_helpers import (
    InProcParent,
    assert_consistent,
    cores_jobspec,
    held_instance_ids,
    live,
    live_ids,
    node_jobspec,
    node_paths,
    provider_config,
    small_engine,
)
from tests.providers.faultproxy import FaultProxy


@pytest.fixture
def proxy(moto: MotoServer) -> Iterator[FaultProxy]:
    with FaultProxy(moto.url) as p:
        yield p


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's retry backoff (up to seconds, jittered) cut to 10 ms: the retries still happen."""
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.01)


def provider(proxy: FaultProxy, tmp_path: Path, **kw: Any) -> Ec2Provider:
    kw.setdefault("max_retries", 1)
    return Ec2Provider(provider_config(proxy.url, tmp_path / "ec2", **kw))


# ---------------------------------------------------------------------- the proxy itself
def test_proxy_faults_are_what_ec2_and_the_network_do(moto: MotoServer, account: dict, proxy: FaultProxy) -> None:
    from botocore.config import Config
    from botocore.exceptions import ClientError

    c = boto3.session.Session().client("ec2", endpoint_url=proxy.url, region_name="us-east-1",
                                       config=Config(retries={"total_max_attempts": 1}))  # fmt: skip
    tag = [{"ResourceType": "instance", "Tags": [{"Key": "fluxlite:owner", "Value": "proxy-test"}]}]
    run = {"ImageId": "ami-12c6146b", "InstanceType": "t2.micro", "MinCount": 1, "MaxCount": 1,
           "TagSpecifications": tag}  # fmt: skip
    for kind, code in (("500", "InternalError"), ("throttle", "RequestLimitExceeded"),
                       ("capacity", "InsufficientInstanceCapacity")):  # fmt: skip
        proxy.fail("RunInstances", kind, times=1)
        with pytest.raises(ClientError, match=code):
            c.run_instances(**run)
    assert live(moto.url, "proxy-test") == []  # none of those reached moto
    proxy.fail("RunInstances", "lost", times=1)
    with pytest.raises(ClientError, match="InternalError"):
        c.run_instances(**run)
    assert len(live(moto.url, "proxy-test")) == 1  # this one did
    proxy.fail("DescribeInstances", "delay", times=1, delay=0.3)
    assert c.describe_instances()["Reservations"]
    assert [o for a, _, o in proxy.seen] == ["500", "throttle", "capacity", "lost", "delay"]
    c.terminate_instances(InstanceIds=[i["InstanceId"] for i in live(moto.url, "proxy-test")])


# ---------------------------------------------------------------------- defect 1
def _tree(proxy: FaultProxy, tmp_path: Path, **kw: Any) -> tuple[Instance, Instance, Instance, Ec2Provider]:
    """root (provider) -> mid -> leaf, in-process; one 2-core node, leased down to the leaf."""
    p = provider(proxy, tmp_path, **kw)
    root = Instance(small_engine(1), name="root", provider=p)
    mid = Instance.from_parent(InProcParent(root), node_jobspec(1, cores=2).encode(), name="mid")
    leaf = Instance.from_parent(InProcParent(mid), node_jobspec(1, cores=2).encode(), name="leaf", depth=2)
    return root, mid, leaf, p


def _snapshot(*insts: Instance) -> list[Any]:
    """Each instance's jobs, their vertices, its graph size and pending hand-backs, read under its
    lock (as any call reads them: a deferred attach for a child is done first)."""
    out = []
    for i in insts:
        with i._lock:
            out.append(
                (
                    sorted(i.engine.jobs.items()),
                    {j: sorted(i.engine.traverser.job_vertices(j)) for j in i.engine.jobs},
                    len(i.engine.graph),
                    len(i.returning),
                )
            )
    return out


def test_partial_shrink_of_a_cloud_node_is_refused_at_every_level(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    root, mid, leaf, p = _tree(proxy, tmp_path)
    job = leaf.match_allocate(node_jobspec(1, cores=1)).jobid
    up = leaf.match_grow(job, node_jobspec(1, cores=2), request_id="burst")
    assert [t.outcome for t in up.timings] == ["parent", "parent", "provider"]
    (npath,) = node_paths(up.jgf)
    iid = npath.rsplit("/", 1)[1]
    cores = [f"{npath}/core0"]
    journal = orjson.dumps(p.requests)
    before = _snapshot(root, mid, leaf)
    with pytest.raises(InputError, match=f"whole.*{npath}"):
        leaf.shrink(job, paths=cores)
    # the middle level (the leaf's lease) and the root (the middle's lease) refuse it as well
    with pytest.raises(InputError, match="whole"):
        mid.shrink(leaf.parent_jobid, paths=cores, lease_token=leaf.parent_token)
    with pytest.raises(InputError, match="whole"):
        root.shrink(mid.parent_jobid, paths=cores, lease_token=mid.parent_token)
    assert _snapshot(root, mid, leaf) == before and orjson.dumps(p.requests) == journal
    assert live_ids(moto.url, p.config.owner) == {iid}
    # the whole node goes back and is terminated; nothing is left pending anywhere
    out = leaf.shrink(job, paths=[npath])
    assert out.pending == 0 and out.returned > 0
    assert live_ids(moto.url, p.config.owner) == set()
    for i in (root, mid, leaf):
        assert i.returning == [] and "zone" not in i.info()["by_type"]
        assert_consistent(i)


# ---------------------------------------------------------------------- defect 2
def test_unconfirmed_termination_keeps_the_node_draining(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hierarchy.instance import cloud as _cloud

    monkeypatch.setattr(_cloud, "BACKOFF", (60.0, 300.0))  # (1 s by default: too short to see on a loaded host)
    p = provider(proxy, tmp_path, max_instances=2)
    root = Instance(small_engine(1), name="root", provider=p)
    j1 = root.match_allocate(cores_jobspec(1)).jobid
    (npath,) = node_paths(root.match_grow(j1, node_jobspec(1, cores=2), request_id="g1").jgf)
    iid = npath.rsplit("/", 1)[1]
    proxy.fail("TerminateInstances", "500")
    out = root.shrink(j1, paths=[npath])  # the job gives the node up; the provider holds it
    assert out.pending > 0 and out.returned == 0
    assert live_ids(moto.url, p.config.owner) == {iid}
    info = root.info()
    (d,) = info["draining"]
    assert d["instances"] == [iid] and d["attempts"] == 1 and "InternalError" in d["last_error"]
    assert root.engine.get_status(npath) == "down"
    # job 2 never gets the draining node: it gets a new instance
    j2 = root.match_allocate(cores_jobspec(1)).jobid
    g2 = root.match_grow(j2, node_jobspec(1, cores=2), request_id="g2")
    assert node_paths(g2.jgf) != [npath] and iid not in held_instance_ids(root)
    # retries back off: the next tick does not call EC2 again
    n = proxy.count("TerminateInstances")
    root.tick()
    assert proxy.count("TerminateInstances") == n
    root.retry_returns(force=True)  # still failing
    assert root.info()["draining"][0]["attempts"] == 2 and iid in live_ids(moto.url, p.config.owner)
    # EC2 answers again: confirmed terminated, the node leaves the graph
    proxy.clear()
    assert root.retry_returns(force=True) == 1
    assert root.info()["draining"] == [] and root.engine.graph.vertex_by_path(npath) is None
    assert live_ids(moto.url, p.config.owner) == {node_paths(g2.jgf)[0].rsplit("/", 1)[1]}
    assert_consistent(root)
    root.release(j2)
    assert live_ids(moto.url, p.config.owner) == set()


def test_a_lost_terminate_answer_is_retried_until_confirmed(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    p = provider(proxy, tmp_path, max_retries=0)
    doc = p.grow(node_jobspec(1), "r")
    proxy.fail("TerminateInstances", "lost", times=1)
    with pytest.raises(BusyError):
        p.shrink(doc)  # EC2 did it, the provider cannot know: nothing changes in the journal
    assert p.requests["r"]["state"] == "granted"
    p.shrink(doc)  # the retry: EC2 says terminated
    assert p.requests["r"]["state"] == "released" and live_ids(moto.url, p.config.owner) == set()
    p.shrink(doc)  # a hand-back retried once more is answered, not refused (no endless pending loop)


# ---------------------------------------------------------------------- defect 3
def test_lost_run_instances_answer_is_reconciled_by_tag(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = provider(proxy, tmp_path, max_retries=2)
    proxy.fail("RunInstances", "lost")  # every attempt reaches EC2; no answer comes back
    with caplog.at_level(logging.WARNING, logger="fluxlite.providers.ec2"):
        doc = p.grow(node_jobspec(1), "r1")
    sent = proxy.params("RunInstances")
    assert len(sent) == 3 and len({s["ClientToken"] for s in sent}) == 1  # one token for every attempt
    (iid,) = [n.rsplit("/", 1)[1] for n in node_paths(doc)]
    assert live_ids(moto.url, p.config.owner) == {iid}  # one adopted, the two duplicates terminated
    assert "adopted 1" in caplog.text and "terminated 2" in caplog.text
    assert p.requests["r1"]["state"] == "granted" and p.requests["r1"]["instances"] == [iid]
    # the token is the request's: a provider of the same owner sends the same one for "r1"
    assert p.client_token("r1", "-") == sent[0]["ClientToken"] and p.client_token("r2", "-") != sent[0]["ClientToken"]
    p.shrink(doc)


def test_lost_answer_with_ec2_unreadable_counts_and_is_resolved_later(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    p = provider(proxy, tmp_path, max_retries=0, max_instances=2)
    proxy.fail("RunInstances", "lost", times=1)
    proxy.fail("DescribeInstances", "500")
    with pytest.raises(CloudBusyError, match="outcome unknown"):
        p.grow(node_jobspec(2), "r1")
    assert len(live(moto.url, p.config.owner)) == 2  # created, unknown to the provider but counted:
    with pytest.raises(BusyError, match="max_instances=2"):
        p.grow(node_jobspec(1), "r2")
    proxy.clear()
    doc = p.grow(node_jobspec(2), "r1")  # the retry adopts them instead of creating more
    assert {n.rsplit("/", 1)[1] for n in node_paths(doc)} == live_ids(moto.url, p.config.owner)
    assert proxy.count("RunInstances") == 1
    p.shrink(doc)


def test_lost_create_fleet_answer_is_reconciled(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    p = provider(proxy, tmp_path, mode="fleet", allowed_types=["t2.small"], max_retries=0)
    proxy.fail("CreateFleet", "lost", times=1)
    doc = p.grow(node_jobspec(2), "f1")
    assert proxy.params("CreateFleet")[0]["ClientToken"] == p.client_token("f1", "fleet--")
    assert {n.rsplit("/", 1)[1] for n in node_paths(doc)} == live_ids(moto.url, p.config.owner)
    p.shrink(doc)
    assert live_ids(moto.url, p.config.owner) == set()


# ---------------------------------------------------------------------- defect 4
def test_one_journal_writer_and_cleanup_spares_a_live_owner(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from providers.cli import main_providers

    cfg = tmp_path / "ec2.yaml"
    cfg.write_text(f"region: us-east-1\nendpoint_url: {proxy.url}\nimage_id: ami-1\nstate_dir: st\n"
                   "allowed_types: [t2.micro]\nmax_retries: 0\n")  # fmt: skip
    p = Ec2Provider.from_config(cfg)
    with pytest.raises(InputError, match="in use by process"):
        Ec2Provider.from_config(cfg)  # a second writer of the same journal is refused
    # an instance being created (journal: creating) looks like an orphan from outside
    p.requests["busy"] = {"state": "creating", "instances": [], "at": 0.0}
    orphan = p._run_instances("busy", p._request_of(node_jobspec(1)), p._plan_for(node_jobspec(1)), None)
    assert main_providers(["ec2", "cleanup", "--config", str(cfg)]) == 1
    assert "in use by process" in capsys.readouterr().err
    assert live_ids(moto.url, p.config.owner) == set(orphan)
    assert main_providers(["ec2", "list", "--config", str(cfg)]) == 0  # reading is fine
    assert orphan[0] in capsys.readouterr().out
    assert main_providers(["ec2", "cleanup", "--config", str(cfg), "--force"]) == 0
    assert live_ids(moto.url, p.config.owner) == set()
    p.close()
    q = Ec2Provider.from_config(cfg)  # the lock went with the first writer
    q.close()


def test_a_replayed_request_checks_its_instances_still_run(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    p = provider(proxy, tmp_path)
    doc = p.grow(node_jobspec(1), "r1")
    iid = node_paths(doc)[0].rsplit("/", 1)[1]
    boto3.session.Session().client("ec2", endpoint_url=moto.url, region_name="us-east-1").terminate_instances(
        InstanceIds=[iid]
    )
    with pytest.raises(StateError, match=f"{iid}.*no longer running"):
        p.grow(node_jobspec(1), "r1")
    # created but not yet granted (a crash in between), then terminated outside: created anew
    created = p._create("r2", p._request_of(node_jobspec(1)), p._plan_for(node_jobspec(1)))
    p.close()
    boto3.session.Session().client("ec2", endpoint_url=moto.url, region_name="us-east-1").terminate_instances(
        InstanceIds=created
    )
    q = provider(proxy, tmp_path)
    doc2 = q.grow(node_jobspec(1), "r2")
    assert node_paths(doc2)[0].rsplit("/", 1)[1] not in created
    assert live_ids(moto.url, q.config.owner) == {node_paths(doc2)[0].rsplit("/", 1)[1]}
    q.shrink(doc2)


# ---------------------------------------------------------------------- defect 5
def test_cli_errors_are_one_line_naming_profile_and_endpoint(
    proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from providers.cli import main_providers

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    empty = tmp_path / "empty"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    cfg = tmp_path / "ec2.yaml"
    cfg.write_text(f"region: us-east-1\nendpoint_url: {proxy.url}\nimage_id: ami-1\nstate_dir: st\n")
    for cmd in ("list", "cleanup"):
        assert main_providers(["ec2", cmd, "--config", str(cfg)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no credentials" in err and "environment's credentials" in err
        assert proxy.url in err and "Traceback" not in err
    # unreachable endpoint: a port nobody listens on
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFLUXLITETEST0001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    cfg.write_text(f"region: us-east-1\nendpoint_url: http://127.0.0.1:{port}\nimage_id: ami-1\n"
                   "state_dir: st\nmax_retries: 0\ntimeout: 2\n")  # fmt: skip
    assert main_providers(["ec2", "list", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"http://127.0.0.1:{port}" in err and "unreachable" in err


# ---------------------------------------------------------------------- defect 6
def test_throttling_after_retries_is_busy_and_max_retries_counts_retries(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    p = provider(proxy, tmp_path, max_retries=2)
    proxy.fail("RunInstances", "throttle")
    with pytest.raises(CloudBusyError, match=r"RequestLimitExceeded.*3 attempts"):
        p.grow(node_jobspec(1), "t")
    assert proxy.count("RunInstances") == 3 and p.requests == {}
    assert live_ids(moto.url, p.config.owner) == set()


def test_max_attempts_is_a_deprecated_alias_and_shapes_are_checked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = {"region": "us-east-1", "image_id": "ami-1", "state_dir": str(tmp_path)}
    with caplog.at_level(logging.WARNING, logger="fluxlite.providers.ec2"):
        cfg = Ec2Config.from_dict({**base, "max_attempts": 2}, source="c.yaml")
    assert cfg.max_retries == 2 and "max_attempts is deprecated" in caplog.text
    with pytest.raises(InputError, match="max_retries and max_attempts"):
        Ec2Config.from_dict({**base, "max_attempts": 2, "max_retries": 1}, source="c.yaml")
    assert Ec2Config.from_dict({**base, "max_retries": 0}, source="c.yaml").max_retries == 0
    for bad in ({"vcpus": -1}, {"vcpus": 2.5}, {"vcpus": 2, "memory_gb": -4}, {"vcpus": 2, "gpus": 0.5},
                {"vcpus": 0}, {"vcpus": "4"}, {"vcpus": True}):  # fmt: skip
        with pytest.raises(InputError, match=r"shapes\.x\.big"):
            Ec2Config.from_dict({**base, "shapes": {"x.big": bad}}, source="c.yaml")


def test_journal_appends_prunes_released_and_compacts(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path
) -> None:
    p = provider(proxy, tmp_path, journal_compact_every=8, journal_keep_released=3)
    snap = p.journal_path
    for k in range(6):
        p.shrink(p.grow(node_jobspec(1), f"r{k}"))
    # every change is one appended line; the snapshot is rewritten only at compaction
    st = p.journal_stats
    assert st["appends"] >= 6 * 3 and st["compactions"] == 1 + st["appends"] // 8  # (1: at open)
    assert len([r for r in p.requests.values() if r["state"] == "released"]) <= 3 + 8
    p.close()  # compacts
    doc = orjson.loads(snap.read_bytes())
    assert sorted(doc["requests"]) == ["r3", "r4", "r5"] and not (snap.parent / "ec2-journal.log").stat().st_size
    q = provider(proxy, tmp_path, journal_compact_every=8, journal_keep_released=3)
    with pytest.raises(StateError, match="already given back"):
        q.grow(node_jobspec(1), "r5")
    q.close()


def test_journal_log_survives_a_torn_last_line(moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path) -> None:
    p = provider(proxy, tmp_path)
    doc = p.grow(node_jobspec(1), "r1")
    p._lockfile.close()  # (as if the process died: no compaction at close)
    log = p.journal_path.parent / "ec2-journal.log"
    with log.open("ab") as f:
        f.write(b'{"rid": "half')
    q = provider(proxy, tmp_path)
    assert q.requests["r1"]["state"] == "granted" and q.grow(node_jobspec(1), "r1") == doc
    q.shrink(doc)


def test_fleet_launch_template_is_deleted(moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path) -> None:
    p = provider(proxy, tmp_path, mode="fleet", allowed_types=["t2.small"])
    doc = p.grow(node_jobspec(1), "f")
    c = boto3.session.Session().client("ec2", endpoint_url=moto.url, region_name="us-east-1")
    names = [t["LaunchTemplateName"] for t in c.describe_launch_templates()["LaunchTemplates"]]
    assert not [n for n in names if n.startswith("fluxlite-")]
    p.shrink(doc)


# ---------------------------------------------------------------------- instances that die under a job
@pytest.mark.parametrize("policy", ["shrink", "fail"])
def test_an_instance_terminated_out_of_band_takes_its_node_down(
    moto: MotoServer, account: dict, proxy: FaultProxy, tmp_path: Path, policy: str
) -> None:
    p = provider(proxy, tmp_path, on_node_down=policy)
    root = Instance(small_engine(1), name="root", provider=p)
    job = root.match_allocate(node_jobspec(1, cores=1)).jobid
    doc = root.match_grow(job, node_jobspec(2, cores=2), request_id="g").jgf
    dead, kept = node_paths(doc)
    assert p.watch() == []
    ec2 = boto3.session.Session().client("ec2", endpoint_url=moto.url, region_name="us-east-1")
    ec2.terminate_instances(InstanceIds=[dead.rsplit("/", 1)[1]])  # a spot reclaim, an operator's click
    lost = p.watch()
    assert lost == [(dead, "terminated")]
    (ev,) = root.nodes_down(lost)
    assert root.engine.graph.vertex_by_path(dead) is None  # handed back: EC2 confirmed, node detached
    assert root.info()["node_events"] == [ev] and root.info()["draining"] == []
    if policy == "shrink":
        assert ev["jobs"] == {str(job): "shrunk (node taken from the job)"}
        assert held_instance_ids(root) == {kept.rsplit("/", 1)[1]}
        assert live_ids(moto.url, p.config.owner) == {kept.rsplit("/", 1)[1]}
        root.release(job)
    else:
        assert ev["jobs"] == {str(job): "failed (job ended)"} and job not in root.engine.jobs
    assert live_ids(moto.url, p.config.owner) == set() and p.watch() == []
    assert root.nodes_down(lost) == []  # told once
    assert_consistent(root)
