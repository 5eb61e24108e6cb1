"""Form A against the API-compatible test server over real HTTP, with the official client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client

from fluxlite.check import recount_errors
from fluxlite.cli.main import main
from kube import KubeConfig
from kube.config import ANNOTATION_GROUP, ANNOTATION_RESOURCES
from kube.objects import node_object, pod_object, replicaset_object
from kube.scheduler import KubeScheduler

testing = pytest.importorskip("kube.testing")

CFG = KubeConfig()


class Cluster:
    def __init__(self) -> None:
        self.srv = testing.ApiServer(host="127.0.0.1", port=0, controllers=True)
        self.srv.start()
        self.api = self.srv.api_client()
        self.v1 = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.scheds: list[KubeScheduler] = []

    def nodes(self, n: int, **kw: Any) -> None:
        for i in range(n):
            self.v1.create_node(node_object(f"n{i}", **kw))

    def scheduler(self, **kw: Any) -> KubeScheduler:
        kw.setdefault("backoff_initial", 0.1)
        kw.setdefault("backoff_max", 0.8)
        s = KubeScheduler(self.srv.api_client(), CFG, **kw).start()
        self.scheds.append(s)
        return s

    def pods(self) -> list[dict[str, Any]]:
        resp = self.v1.list_namespaced_pod("default", _preload_content=False)
        return orjson.loads(resp.data)["items"]

    def bound(self) -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.pods() if p["spec"].get("nodeName")
        }

    def events(self, pod: str) -> list[dict[str, Any]]:
        resp = self.v1.list_namespaced_event("default", _preload_content=False)
        return [e for e in orjson.loads(resp.data)["items"] if e["involvedObject"]["name"] == pod]

    def scale(self, name: str, n: int) -> None:
        self.apps.patch_namespaced_replica_set_scale(name, "default", {"spec": {"replicas": n}})

    def close(self) -> None:
        for s in self.scheds:
            s.stop()
        self.srv.stop()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.close()


def wait(pred: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or pred}")


def _settled(s: KubeScheduler) -> Callable[[], bool]:
    return lambda: s.wait_until(lambda: s._q.empty(), 0.01)


def test_replicaset_scales_1_to_100_to_0(cluster: Cluster) -> None:
    """One job for the ReplicaSet: MatchAllocate once, 99 MatchGrows; 0 replicas leave a clean graph."""
    cluster.nodes(4, cpu="32", memory="64Gi")
    s = cluster.scheduler()
    cluster.apps.create_namespaced_replica_set("default", replicaset_object("web", replicas=1))
    wait(lambda: len(cluster.bound()) == 1, what="first replica bound")
    cluster.scale("web", 100)
    wait(lambda: len(cluster.bound()) == 100, 60, "100 replicas bound")
    wait(lambda: s.wait_until(lambda: len(s.metrics.grew) == 100, 0.01), what="every binding answered")
    pods = cluster.pods()
    groups = {p["metadata"]["annotations"][ANNOTATION_GROUP] for p in pods}
    assert len(groups) == 1 and next(iter(groups)).startswith("ReplicaSet/default/web")
    with s.lock:
        assert len(s.core.engine.jobs) == 1
        assert sorted(s.metrics.grew.values()) == [False] + [True] * 99
        assert recount_errors(s.core.engine) == []
    per_node: dict[str, int] = {}
    for node in cluster.bound().values():
        per_node[node] = per_node.get(node, 0) + 1
    assert sorted(per_node.values()) == [4, 32, 32, 32]  # packed: 1 core each, 32 per node
    cluster.scale("web", 0)
    wait(lambda: s.wait_until(lambda: not s.core.pods, 0.01), 30, "every replica released")
    with s.lock:
        assert s.core.engine.jobs == {} and s.core.groups == {}
        assert recount_errors(s.core.engine) == []


def _gang(name: str, n: int, size: int, cpu: str) -> list[dict[str, Any]]:
    labels = {CFG.group_label: name, CFG.min_member_label: str(size)}
    return [pod_object(f"{name}-{i}", cpu=cpu, labels=labels) for i in range(n)]


def test_gang_is_all_or_nothing_under_contention(cluster: Cluster) -> None:
    """Two gangs want the same room: one is placed whole, the other holds nothing until room appears."""
    cluster.nodes(2, cpu="4", memory="16Gi")
    s = cluster.scheduler()
    for p in _gang("a", 3, 3, "2"):
        cluster.v1.create_namespaced_pod("default", p)
    wait(lambda: len(cluster.bound()) == 3, what="gang a placed")
    for p in _gang("b", 2, 3, "2"):  # only 2 of 3 members yet: waits, holds nothing
        cluster.v1.create_namespaced_pod("default", p)
    time.sleep(0.5)
    with s.lock:
        assert not any(k.startswith("default/b-") for k in s.core.pods)
    cluster.v1.create_namespaced_pod("default", _gang("b", 3, 3, "2")[2])
    wait(_settled(s), what="scheduler settled")
    time.sleep(0.5)
    bound = cluster.bound()
    assert sorted(bound) == ["a-0", "a-1", "a-2"]  # b needs 6 cores, only 2 are free
    with s.lock:
        assert not any(k.startswith("default/b-") for k in s.core.pods)
        assert "PodGroup/default/b" not in s.core.groups
        assert recount_errors(s.core.engine) == []
    wait(
        lambda: any(
            e["reason"] == "FailedScheduling" and "gang" in e["message"] for e in cluster.events("b-0")
        ),
        what="a FailedScheduling Event naming the gang",
    )
    for i in range(3):
        cluster.v1.delete_namespaced_pod(f"a-{i}", "default")
    wait(lambda: sorted(cluster.bound()) == ["b-0", "b-1", "b-2"], what="gang b placed whole")


def test_restart_mid_scale_loses_nothing(cluster: Cluster) -> None:
    """A new scheduler rebuilds the job from the pods' annotations and grows it next to the old replicas."""
    cluster.nodes(3, cpu="8", memory="32Gi")
    s1 = cluster.scheduler()
    cluster.apps.create_namespaced_replica_set("default", replicaset_object("rs", replicas=5))
    wait(lambda: len(cluster.bound()) == 5, what="5 replicas")
    with s1.lock:
        before = {k: list(p.paths) for k, p in s1.core.pods.items()}
    s1.stop()
    cluster.scale("rs", 12)
    time.sleep(0.3)
    assert len(cluster.bound()) == 5  # nobody schedules while the shim is down
    s2 = cluster.scheduler()
    wait(lambda: len(cluster.bound()) == 12, what="12 replicas after restart")
    wait(lambda: s2.wait_until(lambda: len(s2.metrics.grew) == 7, 0.01), what="every binding answered")
    with s2.lock:
        assert {k: s2.core.pods[k].paths for k in before} == before
        assert len(s2.core.engine.jobs) == 1
        new = [k for k in s2.metrics.grew if k not in before]
        assert len(new) == 7 and all(s2.metrics.grew[k] for k in new)  # MatchGrow of the restored job
        assert recount_errors(s2.core.engine) == []
    per_node: dict[str, int] = {}
    for node in cluster.bound().values():
        per_node[node] = per_node.get(node, 0) + 1
    assert per_node == {"n0": 8, "n1": 4}
    for p in cluster.pods():
        rec = orjson.loads(p["metadata"]["annotations"][ANNOTATION_RESOURCES])
        assert rec["node"] == p["spec"]["nodeName"]


def test_pods_of_other_schedulers_reduce_the_graph(cluster: Cluster) -> None:
    """Pods bound by another scheduler, before and after start, are never double-booked."""
    cluster.nodes(2, cpu="4", memory="16Gi")
    cluster.v1.create_namespaced_pod(
        "default", pod_object("dns", cpu="3", scheduler="default-scheduler", node_name="n0")
    )
    s = cluster.scheduler()
    cluster.v1.create_namespaced_pod(
        "default", pod_object("batch", cpu="3", scheduler="default-scheduler", node_name="n1")
    )
    wait(lambda: s.wait_until(lambda: "default/batch" in s.core.pods, 0.01), what="foreign pod accounted")
    cluster.v1.create_namespaced_pod("default", pod_object("mine", cpu="2"))
    wait(_settled(s))
    time.sleep(0.4)
    assert "mine" not in cluster.bound()  # 1 core free on each node
    cluster.v1.delete_namespaced_pod("batch", "default")
    wait(lambda: cluster.bound().get("mine") == "n1", what="mine placed where batch was")
    with s.lock:
        assert recount_errors(s.core.engine) == []


def test_node_cordoned_while_pods_run(cluster: Cluster) -> None:
    """Cordoning keeps running pods' resources; new pods avoid the node until it is uncordoned."""
    cluster.nodes(2, cpu="4", memory="16Gi")
    s = cluster.scheduler()
    cluster.v1.create_namespaced_pod("default", pod_object("run0", cpu="2"))
    wait(lambda: cluster.bound().get("run0") == "n0", what="run0 on n0")
    cluster.v1.patch_node("n0", {"spec": {"unschedulable": True}})
    wait(lambda: s.wait_until(lambda: s.core.engine.get_status(s.core.node_path["n0"]) == "down", 0.01))
    for i in range(3):
        cluster.v1.create_namespaced_pod("default", pod_object(f"new{i}", cpu="2"))
    wait(lambda: sum(1 for n in cluster.bound().values() if n == "n1") == 2, what="n1 filled")
    time.sleep(0.3)
    bound = cluster.bound()
    assert bound["run0"] == "n0" and "new2" not in bound and list(bound.values()).count("n0") == 1
    with s.lock:
        assert "default/run0" in s.core.pods
    cluster.v1.patch_node("n0", {"spec": {"unschedulable": False}})
    wait(lambda: cluster.bound().get("new2") == "n0", what="new2 on the uncordoned node")


def test_unplaceable_pod_gets_event_condition_and_no_retry_storm(cluster: Cluster) -> None:
    """A pod no node can hold: FailedScheduling Event (counted), PodScheduled=False, few retries."""
    cluster.nodes(2, cpu="4", memory="16Gi")
    s = cluster.scheduler(backoff_initial=0.1, backoff_max=0.8)
    t0 = time.monotonic()
    cluster.v1.create_namespaced_pod("default", pod_object("huge", cpu="64"))
    for i in range(6):  # cluster churn that must not make it retry in a loop
        cluster.v1.create_namespaced_pod("default", pod_object(f"small{i}", cpu="1"))
    wait(lambda: len(cluster.bound()) == 6, what="small pods bound")
    for i in range(6):
        cluster.v1.delete_namespaced_pod(f"small{i}", "default")
    time.sleep(1.5)
    with s.lock:
        attempts = s.metrics.attempts.get("default/huge", 0)
    elapsed = time.monotonic() - t0
    # at most one attempt per backoff step (0.1, 0.2, 0.4, 0.8, 0.8, ... s): the deletions did not re-trigger it
    allowed, t, step = 1, 0.0, 0.1
    while t + step <= elapsed:
        t += step
        allowed += 1
        step = min(step * 2, 0.8)
    assert 1 <= attempts <= allowed

    def condition() -> list[dict[str, Any]]:
        pod = orjson.loads(cluster.v1.read_namespaced_pod("huge", "default", _preload_content=False).data)
        return [c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"]

    wait(lambda: bool(condition()), what="PodScheduled condition (recorded in the background)")
    wait(lambda: any(e["reason"] == "FailedScheduling" for e in cluster.events("huge")), what="the Event")
    cond = condition()
    assert cond[0]["status"] == "False" and cond[0]["reason"] == "Unschedulable"
    assert "no node can ever hold 64 core" in cond[0]["message"]
    evs = [e for e in cluster.events("huge") if e["reason"] == "FailedScheduling"]
    assert len(evs) == 1 and evs[0]["type"] == "Warning" and evs[0]["count"] >= 1
    cluster.v1.create_node(node_object("big", cpu="64", memory="256Gi"))
    wait(lambda: cluster.bound().get("huge") == "big", what="huge placed on the new node")


def test_watch_gone_relists_and_goes_on(cluster: Cluster) -> None:
    """A watch resumed from a compacted resourceVersion gets 410 Gone, lists again and goes on."""
    cluster.nodes(1, cpu="4", memory="16Gi")
    s = cluster.scheduler()
    cluster.v1.create_namespaced_pod("default", pod_object("p0"))
    wait(lambda: "p0" in cluster.bound())
    wait(lambda: s.wait_until(lambda: "default/p0" in s.metrics.bound_at, 0.01))
    time.sleep(0.3)  # the watch has delivered p0's binding: nothing is in flight on the stream
    cluster.srv.compact()
    # make the pod watch resume from a version the server has compacted away
    s._rv["pod"] = "1"
    s._resps["pod"].shutdown()
    wait(lambda: s.metrics.relists["pod"] >= 1, 10, "a re-list after 410")
    cluster.v1.delete_namespaced_pod("p0", "default")
    cluster.v1.create_namespaced_pod("default", pod_object("p1", cpu="4"))
    wait(lambda: "p1" in cluster.bound(), what="p1 bound after the re-list")
    with s.lock:
        assert set(s.core.pods) == {"default/p1"} and recount_errors(s.core.engine) == []


def test_cli_run_against_the_test_server(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fluxlite kube run --kubeconfig`` binds a pod and exits 0 on SIGTERM; a bad kubeconfig is one line."""
    cluster.nodes(1)
    kc = tmp_path / "kubeconfig"
    cluster.srv.write_kubeconfig(str(kc))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fluxlite.cli.main",
            "kube",
            "run",
            "--kubeconfig",
            str(kc),
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert "scheduling pods with schedulerName=fluxlite on 1 nodes" in proc.stdout.readline().decode()
        cluster.v1.create_namespaced_pod("default", pod_object("cli"))
        wait(lambda: cluster.bound().get("cli") == "n0", what="pod bound by the CLI scheduler")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert main(["kube", "run", "--kubeconfig", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fluxlite kube run: kubeconfig") and "Traceback" not in err


def test_finished_pods_and_deleted_nodes_free_the_graph(cluster: Cluster) -> None:
    """A pod that Succeeded gives its resources back; a deleted node leaves the graph with its pods."""
    cluster.nodes(2, cpu="2", memory="8Gi")
    s = cluster.scheduler()
    cluster.v1.create_namespaced_pod("default", pod_object("done", cpu="2"))
    cluster.v1.create_namespaced_pod("default", pod_object("other", cpu="2"))
    wait(lambda: len(cluster.bound()) == 2)
    cluster.v1.create_namespaced_pod("default", pod_object("next", cpu="2"))
    cluster.v1.patch_namespaced_pod_status(
        "done", "default", {"status": {"phase": "Succeeded"}}, _content_type="application/merge-patch+json"
    )
    wait(lambda: "next" in cluster.bound(), what="next placed where the finished pod was")
    gone = cluster.bound()["other"]
    cluster.v1.delete_node(gone)
    wait(lambda: s.wait_until(lambda: gone not in s.core.nodes, 0.01), what="node removed from the graph")
    with s.lock:
        assert (
            "default/other" not in s.core.pods
            and s.core.engine.graph.vertex_by_path(f"/cluster0/zone-a/{gone}") is None
        )
        assert recount_errors(s.core.engine) == []
