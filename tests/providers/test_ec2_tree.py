"""The EC2 provider in a running tree: real instance processes, moto's server over HTTP.

* a grow at a leaf that no level of a 3-level tree can satisfy bursts at the
  root; the instances flow down to the leaf; a shrink at the leaf terminates them;
* kill -9 of the instance process between create and attach, then a
  restart: no running instance is left that no job holds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import boto3
import pytest

from hierarchy import InstanceUnavailableError
from hierarchy._launch import TreeNode
from providers._moto import MotoServer
from providers.ec2 import OWNER_TAG
from tests.hierarchy.helpers import chain, nodes_jobspec, short_tmpdir, start, wait_for, write_graph
from tests.providers.test_ec2 import G3

#: what the leaf grows by: a node with one 2-core socket (an EC2 t2.medium: 2 vCPUs)
BURST = nodes_jobspec(1, sockets=1, cores=2)



def _config(d: Path, moto: MotoServer, owner: str, url: str = "", extra: str = "") -> Path:
    f = d / "ec2.yaml"
    shapes = "".join(
        f"  {t}: {{vcpus: {s['vcpus']}, memory_gb: {s['memory_gb']}, gpus: {s['gpus']}}}\n"
        for t, s in G3.items()
    )
    f.write_text(
        f"region: us-east-1\nendpoint_url: {url or moto.url}\nimage_id: ami-12c6146b\nstate_dir: ec2-state\n"
        f"owner: {owner}\nallowed_types: [t2.micro, t2.small, t2.medium]\n{extra}shapes:\n{shapes}"
    )
    return f


def _live(moto: MotoServer, owner: str) -> list[dict[str, Any]]:
    out = (
        boto3.session.Session()
        .client("ec2", endpoint_url=moto.url, region_name="us-east-1")
        .describe_instances(
            Filters=[
                {"Name": f"tag:{OWNER_TAG}", "Values": [owner]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
    )
    return [i for r in out["Reservations"] for i in r["Instances"]]


def _node_paths(jgf: bytes) -> list[str]:
    import orjson

    return [
        n["metadata"]["paths"]["containment"]
        for n in orjson.loads(jgf)["graph"]["nodes"]
        if n["metadata"]["type"] == "node"
    ]


def test_leaf_grow_bursts_at_the_root_and_shrink_terminates(moto: MotoServer) -> None:
    with short_tmpdir() as d:
        nodes = chain(d, [2, 2, 2])
        nodes[0].provider = f"ec2:{_config(d, moto, 'tree-e2e')}"
        t = start(d, nodes, heartbeat=0.5, rpc_timeout=30.0)
        try:
            leaf = t.client("leaf", timeout=60)
            job = leaf.match_allocate(nodes_jobspec(2)).jobid
            up = leaf.match_grow(job, BURST, request_id="burst-1")
            assert [x.outcome for x in up.timings] == ["parent", "parent", "provider"]
            paths = _node_paths(up.jgf)
            live = _live(moto, "tree-e2e")
            assert len(paths) == 1 and [i["InstanceId"] for i in live] == [paths[0].rsplit("/", 1)[1]]
            assert live[0]["InstanceType"] == "t2.medium"
            # every level holds it, as the job's (the leaf) or the child's lease (mid, root)
            for name in ("root", "mid", "leaf"):
                info = t.info(name)
                assert info["recount_errors"] == [] and info["by_type"].get("zone") == 1
            assert leaf.info(job)["holds"]["node"] == 1 and leaf.info(job)["holds"]["memory"] == 4
            # a retry of the same request creates nothing
            assert leaf.match_grow(job, BURST, request_id="burst-1").replayed
            assert len(_live(moto, "tree-e2e")) == 1
            out = leaf.shrink(job, paths=paths)
            assert out.returned > 0 and out.pending == 0
            assert _live(moto, "tree-e2e") == []
            for name in ("root", "mid", "leaf"):
                info = t.info(name)
                assert info["recount_errors"] == [] and "zone" not in info["by_type"]
        finally:
            t.close()


def test_crash_between_create_and_attach_leaves_no_orphan(moto: MotoServer) -> None:
    with short_tmpdir() as d:
        write_graph(d / "g.json", 1)
        cfg = _config(d, moto, "crash-test")
        os.environ["FLUXLITE_EC2_FAULT"] = "exit-after-create"
        try:
            t = start(d, [TreeNode("root", 0, None, graph=d / "g.json", provider=f"ec2:{cfg}")], state=True)
        finally:
            del os.environ["FLUXLITE_EC2_FAULT"]
        try:
            root = t.client("root", timeout=30)
            job = root.match_allocate(nodes_jobspec(1)).jobid
            with pytest.raises(InstanceUnavailableError):
                root.match_grow(job, BURST, request_id="g1")
            assert len(_live(moto, "crash-test")) == 1  # created, never attached: the process died
            t.restart("root")
            # reconciled in the background (the instance serves meanwhile)
            wait_for(lambda: "terminated 1 orphans" in t.log("root"), 30, "the start-up reconcile")
            assert _live(moto, "crash-test") == []
            # the retried request creates anew and this time it is attached
            root = t.client("root", timeout=30)
            g = root.match_grow(job, BURST, request_id="g1")
            assert [i["InstanceId"] for i in _live(moto, "crash-test")] == [
                _node_paths(g.jgf)[0].rsplit("/", 1)[1]
            ]
            assert t.info("root")["recount_errors"] == []
            root.release(job)
            assert _live(moto, "crash-test") == []
        finally:
            t.close()


def test_start_with_ec2_unreachable_serves_local_work_then_reconciles(moto: MotoServer) -> None:
    """EC2 down at start: the instance serves, a grow needing EC2 fails with one line, and once EC2
    answers the background reconcile runs; a node whose instance dies is taken from its job."""
    import socket

    from fluxlite.errors import BusyError
    from tests.providers.faultproxy import FaultProxy

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens here until the proxy starts
    with short_tmpdir() as d:
        write_graph(d / "g.json", 1)
        cfg = _config(d, moto, "down-at-start", url=f"http://127.0.0.1:{port}",
                      extra="max_retries: 0\ntimeout: 2\nwatch_interval: 0.5\n")  # fmt: skip
        t = start(d, [TreeNode("root", 0, None, graph=d / "g.json", provider=f"ec2:{cfg}")], state=True)
        proxy = None
        try:
            root = t.client("root", timeout=30)
            job = root.match_allocate(nodes_jobspec(1)).jobid  # local work is served
            local = root.info(job)["holds"]
            with pytest.raises(BusyError) as e:
                root.match_grow(job, BURST, request_id="g1")
            msg = str(e.value)
            assert "\n" not in msg and f"http://127.0.0.1:{port}" in msg and "unreachable" in msg
            wait_for(lambda: "retrying in" in t.log("root"), 30, "a failed reconcile")
            assert "Traceback" not in t.log("root")
            proxy = FaultProxy(moto.url, port=port).start()
            wait_for(lambda: "reconciled with the cloud" in t.log("root"), 60, "the reconcile")
            g = root.match_grow(job, BURST, request_id="g1")
            (path,) = _node_paths(g.jgf)
            boto3.session.Session().client("ec2", endpoint_url=moto.url, region_name="us-east-1").terminate_instances(
                InstanceIds=[path.rsplit("/", 1)[1]]
            )
            wait_for(lambda: "its instance is terminated" in t.log("root"), 30, "the watch")
            assert root.info(job)["holds"] == local  # the cloud node was taken from the job
            info = t.info("root")
            assert info["recount_errors"] == [] and info["node_events"][0]["path"] == path
        finally:
            t.close()
            if proxy is not None:
                proxy.stop()


def _terminate(moto: MotoServer, path: str) -> None:
    boto3.session.Session().client("ec2", endpoint_url=moto.url, region_name="us-east-1").terminate_instances(
        InstanceIds=[path.rsplit("/", 1)[1]]
    )


def test_node_events_survive_a_restart(moto: MotoServer) -> None:
    """A node whose instance died is an event in ``info`` before and after the instance restarts."""
    with short_tmpdir() as d:
        write_graph(d / "g.json", 1)
        cfg = _config(d, moto, "events-restart", extra="watch_interval: 0.5\n")
        t = start(d, [TreeNode("root", 0, None, graph=d / "g.json", provider=f"ec2:{cfg}")], state=True)
        try:
            root = t.client("root", timeout=30)
            job = root.match_allocate(nodes_jobspec(1)).jobid
            (path,) = _node_paths(root.match_grow(job, BURST, request_id="g1").jgf)
            _terminate(moto, path)
            wait_for(lambda: "its instance is terminated" in t.log("root"), 30, "the watch")
            before = t.info("root")["node_events"]
            assert [e["path"] for e in before] == [path]
            t.kill("root")
            t.restart("root")
            assert t.info("root")["node_events"] == before
        finally:
            t.close()


def test_a_dead_node_in_a_childs_lease_is_taken_from_the_childs_job(moto: MotoServer) -> None:
    """The root's watch finds the instance dead; the node is in the leaf's lease (through mid), so each
    level tells its child with the heartbeat answer; the leaf's job loses the node, it goes back up and
    leaves every graph; the aggregates stay exact."""
    with short_tmpdir() as d:
        nodes = chain(d, [2, 2, 2])
        nodes[0].provider = f"ec2:{_config(d, moto, 'lease-down', extra='watch_interval: 0.5' + chr(10))}"
        t = start(d, nodes, heartbeat=0.3, rpc_timeout=30.0)
        try:
            leaf = t.client("leaf", timeout=60)
            job = leaf.match_allocate(nodes_jobspec(2)).jobid
            local = leaf.info(job)["holds"]
            (path,) = _node_paths(leaf.match_grow(job, BURST, request_id="burst-1").jgf)
            assert leaf.info(job)["holds"] != local
            _terminate(moto, path)
            wait_for(lambda: leaf.info(job)["holds"] == local, 30, "the leaf's job to lose the node")
            for name in ("root", "mid", "leaf"):
                wait_for(lambda n=name: "zone" not in t.info(n)["by_type"], 30, f"the node to leave {name}")
                info = t.info(name)
                assert info["recount_errors"] == [] and info["node_events"][0]["path"] == path, name
            assert t.info("leaf")["node_events"][0]["jobs"] == {str(job): "shrunk (node taken from the job)"}
            assert _live(moto, "lease-down") == []
        finally:
            t.close()
