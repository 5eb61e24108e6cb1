"""The stand-in API server as kubectl (a client nobody here wrote) sees it.

One server per module (its state is namespaced per test); kubectl runs as a subprocess with
its own HOME (discovery cache) and the server's kubeconfig (TLS, bearer token).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kube.objects import node_object
from kube.testing import ApiServer

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (apt-get install kubectl)")


class Kubectl:
    def __init__(self, srv: ApiServer, home: Path) -> None:
        self.srv, self.home = srv, home
        self.config = srv.write_kubeconfig(home / "kubeconfig")

    def __call__(
        self, *args: str, ok: bool = True, stdin: str | None = None, config: Path | None = None
    ) -> Any:
        env = {**os.environ, "HOME": str(self.home), "KUBECONFIG": str(config or self.config)}
        proc = subprocess.run(
            [KUBECTL or "kubectl", *args], capture_output=True, text=True, env=env, input=stdin, timeout=60
        )
        if ok and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc

    def json(self, *args: str) -> Any:
        return orjson.loads(self(*args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    srv = ApiServer(controllers=True).start()
    try:
        yield Kubectl(srv, tmp_path_factory.mktemp("kubectl"))
    finally:
        srv.stop()


@pytest.fixture
def ns(kc: Kubectl, request: pytest.FixtureRequest) -> str:
    name = request.node.name.replace("_", "-")[:50].strip("-").lower()
    kc("create", "namespace", name)
    return name


RS = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: fluxlite
      containers: [{name: c, image: busybox, resources: {requests: {cpu: 1, memory: 1Gi}}}]
"""


def test_apply_validates_on_the_server_and_explain_reads_openapi(kc: Kubectl, ns: str) -> None:
    """``kubectl apply`` works with validation on (OpenAPI v3, fieldValidation=Strict); an unknown field is
    refused and changes nothing; ``kubectl explain`` reads the fields' types and descriptions."""
    out = kc("apply", "-n", ns, "-f", "-", stdin=RS)
    assert "replicaset.apps/web created" in out.stdout
    bad = kc(
        "apply", "-n", ns, "-f", "-", stdin=RS.replace("replicas: 2", "replicas: 3\n  bogus: 1"), ok=False
    )
    assert bad.returncode != 0 and 'unknown field "spec.bogus"' in bad.stderr
    assert kc.json("get", "-n", ns, "rs", "web")["spec"]["replicas"] == 2
    text = kc("explain", "replicaset.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in text and "number of desired pods" in text
    assert "<ResourceRequirements>" in kc("explain", "pods.spec.containers.resources").stdout


def test_apply_of_a_list_validates_against_the_protobuf_openapi_v2(kc: Kubectl, ns: str) -> None:
    """``kubectl apply -f`` of a ``kind: List`` validates its items on the client against
    ``/openapi/v2`` fetched as protobuf (gnostic's Document): a valid list is created; a wrong
    type or an unknown field in one item is refused before anything is written."""
    items = yaml.safe_load(RS)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"x": "1"}}
    good = {"apiVersion": "v1", "kind": "List", "items": [cm, items]}
    out = kc("apply", "-n", ns, "-f", "-", stdin=orjson.dumps(good).decode())
    assert "configmap/cm created" in out.stdout and "replicaset.apps/web created" in out.stdout
    bad_rs = {**items, "metadata": {"name": "web2"}, "spec": {**items["spec"], "replicas": "two", "bogus": 1}}
    cm2 = {**cm, "metadata": {"name": "cm2"}}
    bad = kc("apply", "-n", ns, "-f", "-", ok=False,
             stdin=orjson.dumps({"apiVersion": "v1", "kind": "List", "items": [cm2, bad_rs]}).decode())  # fmt: skip
    assert bad.returncode != 0
    assert 'unknown field "bogus"' in bad.stderr and "replicas: got \"string\", expected \"integer\"" in bad.stderr
    assert kc("get", "-n", ns, "configmap", "cm2", ok=False).returncode != 0  # nothing of the list written
    assert kc("get", "-n", ns, "rs", "web2", ok=False).returncode != 0


def test_get_prints_the_server_side_tables(kc: Kubectl, ns: str) -> None:
    """``kubectl get`` shows the columns of kube-apiserver's printers (pods, nodes, ReplicaSets,
    Deployments), ``-o wide`` the extra ones."""
    kc(
        "apply",
        "-f",
        "-",
        stdin=orjson.dumps(node_object("tbl-node", labels={"node-role.kubernetes.io/worker": ""})).decode(),
    )
    kc("apply", "-n", ns, "-f", "-", stdin=RS)
    kc("create", "deployment", "d1", "-n", ns, "--image=nginx", "--replicas=2")
    head = lambda *a: kc("get", *a).stdout.splitlines()[0].split()  # noqa: E731
    assert head("pods", "-n", ns) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert head("pods", "-n", ns, "-o", "wide") == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"
    ]  # fmt: skip
    assert head("nodes") == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert head("rs", "-n", ns) == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert head("deploy", "-n", ns) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    node = kc("get", "node", "tbl-node").stdout.splitlines()[1].split()
    assert node[:3] == ["tbl-node", "Ready", "worker"]
    rows = [r.split() for r in kc("get", "rs", "-n", ns, "-o", "wide").stdout.splitlines()[1:]]
    web = next(r for r in rows if r[0] == "web")
    assert web[1:4] == ["2", "2", "0"] and web[5:] == ["c", "busybox", "app=web"]
    pods = [r.split() for r in kc("get", "pods", "-n", ns).stdout.splitlines()[1:]]
    assert len(pods) == 4 and all(r[1:4] == ["0/1", "Pending", "0"] for r in pods)
    assert kc("get", "deploy", "d1", "-n", ns).stdout.splitlines()[1].split()[1] == "0/2"
    kc("delete", "node", "tbl-node")


def test_server_side_dry_run_changes_nothing(kc: Kubectl, ns: str) -> None:
    """``--dry-run=server`` answers create, patch and delete as if done, and stores nothing."""
    assert (
        kc("run", "p1", "-n", ns, "--image=busybox", "--dry-run=server", "-o", "name").stdout.strip()
        == "pod/p1"
    )
    assert kc.json("get", "pods", "-n", ns)["items"] == []
    kc("run", "p2", "-n", ns, "--image=busybox")
    rv = kc.json("get", "pod", "p2", "-n", ns)["metadata"]["resourceVersion"]
    kc("label", "pod", "p2", "-n", ns, "x=y", "--dry-run=server")
    assert "(server dry run)" in kc("delete", "pod", "p2", "-n", ns, "--dry-run=server").stdout
    pod = kc.json("get", "pod", "p2", "-n", ns)
    assert pod["metadata"]["resourceVersion"] == rv and "x" not in pod["metadata"].get("labels", {})


def test_a_wrong_token_is_refused(kc: Kubectl, ns: str, tmp_path: Path) -> None:
    """kubectl with another bearer token gets 401 (and creates nothing)."""
    bad = kc.srv.write_kubeconfig(tmp_path / "bad", token="not-the-token")
    out = kc("run", "p1", "-n", ns, "--image=busybox", config=bad, ok=False)
    assert out.returncode != 0 and ("Unauthorized" in out.stderr or "provide credentials" in out.stderr)
    assert kc.json("get", "pods", "-n", ns)["items"] == []


def _running_pods(kc: Kubectl, ns: str, node: str, n: int, app: str) -> None:
    for i in range(n):
        kc("run", f"{app}{i}", "-n", ns, "--image=busybox", f"--labels=app={app}",
           f"--overrides={{\"spec\":{{\"nodeName\":\"{node}\"}}}}")  # fmt: skip
    for _ in range(100):
        pods = kc.json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
        if len(pods) == n and all(p["status"].get("phase") == "Running" for p in pods):
            return
        time.sleep(0.05)
    raise AssertionError("pods did not start")


def test_drain_evicts_through_the_eviction_api(kc: Kubectl, ns: str) -> None:
    """``kubectl drain`` cordons the node and evicts its pods through pods/eviction (a budget that allows
    it: maxUnavailable 3); ``kubectl get pdb`` shows the allowed disruptions first."""
    node = f"{ns}-node"[:60]
    kc("apply", "-f", "-", stdin=orjson.dumps(node_object(node)).decode())
    _running_pods(kc, ns, node, 3, "w")
    kc("create", "pdb", "wpdb", "-n", ns, "--selector=app=w", "--max-unavailable=3")
    for _ in range(100):
        if kc.json("get", "pdb", "wpdb", "-n", ns).get("status", {}).get("disruptionsAllowed") == 3:
            break
        time.sleep(0.05)
    assert kc("get", "pdb", "wpdb", "-n", ns).stdout.splitlines()[1].split()[1:4] == ["N/A", "3", "3"]
    before = kc.srv.request_counts().get("create pods/eviction", 0)
    out = kc("drain", node, "--pod-selector=app=w", "--force", "--timeout=20s")
    assert "drained" in out.stdout
    assert kc.srv.request_counts().get("create pods/eviction", 0) - before >= 3
    alive = [
        p for p in kc.json("get", "pods", "-n", ns)["items"] if not p["metadata"].get("deletionTimestamp")
    ]
    assert alive == [] and kc.json("get", "node", node)["spec"].get("unschedulable") is True
    kc("delete", "node", node)


def test_eviction_statuses_from_a_raw_client(kc: Kubectl, ns: str) -> None:
    """The Eviction subresource answers 201 (deleted), 429 with a DisruptionBudget cause, 404, as upstream."""
    from kubernetes import client

    node = f"{ns}-node"[:60]
    kc("apply", "-f", "-", stdin=orjson.dumps(node_object(node)).decode())
    _running_pods(kc, ns, node, 2, "e")
    kc("create", "pdb", "epdb", "-n", ns, "--selector=app=e", "--max-unavailable=0")
    v1 = client.CoreV1Api(kc.srv.api_client())
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="e0", namespace=ns))
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_pod_eviction("e0", ns, body)
    status = orjson.loads(e.value.body)
    assert e.value.status == 429 and status["reason"] == "TooManyRequests"
    assert status["details"]["causes"][0] == {
        "reason": "DisruptionBudget",
        "message": "The disruption budget epdb needs 2 healthy pods and has 2 currently",
    }
    assert len(kc.json("get", "pods", "-n", ns)["items"]) == 2
    kc("delete", "pdb", "epdb", "-n", ns)
    v1.create_namespaced_pod_eviction("e0", ns, body)
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_pod_eviction(
            "nope", ns, client.V1Eviction(metadata=client.V1ObjectMeta(name="nope"))
        )
    assert e.value.status == 404
    kc("delete", "node", node)


def test_rollout_undo_reuses_the_revision_replicaset(kc: Kubectl, ns: str) -> None:
    """``kubectl rollout undo`` scales the earlier revision's ReplicaSet up again (renumbered as the
    newest revision) instead of making a new one."""
    kc("create", "deployment", "d1", "-n", ns, "--image=nginx:1", "--replicas=2")
    for _ in range(100):
        if len(kc.json("get", "rs", "-n", ns)["items"]) == 1:
            break
        time.sleep(0.05)
    first = kc.json("get", "rs", "-n", ns)["items"][0]["metadata"]["name"]
    kc("set", "image", "deploy/d1", "-n", ns, "nginx=nginx:2")
    for _ in range(100):
        if len(kc.json("get", "rs", "-n", ns)["items"]) == 2:
            break
        time.sleep(0.05)
    assert "rolled back" in kc("rollout", "undo", "deploy/d1", "-n", ns).stdout
    for _ in range(100):
        rs = {r["metadata"]["name"]: r for r in kc.json("get", "rs", "-n", ns)["items"]}
        if rs[first]["spec"]["replicas"] == 2:
            break
        time.sleep(0.05)
    assert len(rs) == 2 and rs[first]["spec"]["replicas"] == 2
    assert rs[first]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert sum(r["spec"]["replicas"] for r in rs.values()) == 2
    image = kc.json("get", "deploy", "d1", "-n", ns)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "nginx:1"


# --------------------------------------------------------------------- the scheduler, driven by kubectl


@pytest.fixture(scope="module")
def sched(kc: Kubectl) -> Iterator[Any]:
    from kube import KubeConfig
    from kube.scheduler import KubeScheduler

    s = KubeScheduler(kc.srv.api_client(), KubeConfig(), backoff_initial=0.1, backoff_max=0.5).start()
    try:
        yield s
    finally:
        s.stop()


def _nodes(kc: Kubectl, ns: str, spec: list[tuple[str, dict[str, str]]], **kw: Any) -> list[str]:
    """Create nodes labelled ``t=<ns>`` (the test's pods select them, so tests never share nodes)."""
    names = []
    for name, labels in spec:
        full = f"{ns[:40]}-{name}"
        kc(
            "apply",
            "-f",
            "-",
            stdin=orjson.dumps(node_object(full, labels={"t": ns, **labels}, **kw)).decode(),
        )
        names.append(full)
    return names


def _deploy(ns: str, name: str, replicas: int, extra: dict[str, Any], cpu: str = "1") -> str:
    spec: dict[str, Any] = {
        "schedulerName": "fluxlite",
        "nodeSelector": {"t": ns},
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        **extra,
    }
    return orjson.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }).decode()  # fmt: skip


def _placement(kc: Kubectl, ns: str, app: str, want: int, timeout: float = 15.0) -> dict[str, str | None]:
    """pod -> node (None: pending) once ``want`` pods of ``app`` are bound (or the timeout passes)."""
    from kube.testing._resources import resource

    end = time.monotonic() + timeout
    while True:  # read the in-process server's store (kubectl's own reads are tested elsewhere)
        pods = kc.srv.store.list(resource("", "v1", "pods"), ns)[0]
        got = {
            p["metadata"]["name"]: p["spec"].get("nodeName")
            for p in pods
            if (p["metadata"].get("labels") or {}).get("app") == app
            and not p["metadata"].get("deletionTimestamp")
        }
        if sum(1 for n in got.values() if n) >= want or time.monotonic() > end:
            return got
        time.sleep(0.05)


def test_required_anti_affinity_one_per_host_and_the_rest_pending(kc: Kubectl, sched: Any, ns: str) -> None:
    """Required anti-affinity on the hostname: one replica per node; the fourth stays Pending and says why."""
    nodes = _nodes(kc, ns, [("a", {}), ("b", {}), ("c", {})])
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    kc("apply", "-f", "-", stdin=_deploy(ns, "web", 3, {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}))  # fmt: skip
    got = _placement(kc, ns, "web", 3)
    assert sorted(n for n in got.values() if n) == sorted(nodes)
    kc("scale", "deploy/web", "-n", ns, "--replicas=4")
    time.sleep(1.0)
    got = _placement(kc, ns, "web", 4, timeout=1.0)
    pending = [p for p, n in got.items() if n is None]
    assert len(pending) == 1 and sorted(n for n in got.values() if n) == sorted(nodes)
    events = kc.json("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={pending[0]}")[
        "items"
    ]
    assert any("anti-affinity" in e["message"] for e in events if e["reason"] == "FailedScheduling")


def test_required_affinity_follows_the_zone_and_spread_balances(kc: Kubectl, sched: Any, ns: str) -> None:
    """Required pod affinity (zone) puts the app beside its database; a topology spread (maxSkew 1,
    zones) of 4 replicas lands 2 and 2; preferred node affinity picks the labelled node."""
    _nodes(kc, ns, [("a1", {}), ("a2", {})], zone="zone-a")
    _nodes(kc, ns, [("b1", {"disk": "ssd"}), ("b2", {})], zone="zone-b", cpu="8")
    db_node = {"nodeSelector": {"t": ns, "topology.kubernetes.io/zone": "zone-b"}}
    kc("apply", "-f", "-", stdin=_deploy(ns, "db", 1, db_node))
    assert all(n and "-b" in n for n in _placement(kc, ns, "db", 1).values())
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}  # fmt: skip
    kc("apply", "-f", "-", stdin=_deploy(ns, "app", 3, {"affinity": aff}))
    got = _placement(kc, ns, "app", 3)
    assert len(got) == 3 and all(n and f"{ns[:40]}-b" in n for n in got.values()), got
    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "spread"}}}]  # fmt: skip
    kc("apply", "-f", "-", stdin=_deploy(ns, "spread", 4, {"topologySpreadConstraints": spread}))
    got = _placement(kc, ns, "spread", 4)
    zones = [n.split("-")[-1][0] for n in got.values() if n]
    assert sorted(zones) == ["a", "a", "b", "b"], got
    pref = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}  # fmt: skip
    kc("apply", "-f", "-", stdin=_deploy(ns, "fast", 1, {"affinity": pref}))
    assert list(_placement(kc, ns, "fast", 1).values()) == [f"{ns[:40]}-b1"]


def test_allocatable_pods_caps_a_node(kc: Kubectl, sched: Any, ns: str) -> None:
    """A node's ``status.allocatable.pods`` is a limit: with 2 pod slots per node, 5 one-core pods on
    two 32-core nodes place 4 and leave one Pending."""
    nodes = _nodes(kc, ns, [("a", {}), ("b", {})])
    for n in nodes:
        kc("patch", "node", n, "--subresource=status", "--type=merge", "-p",
           '{"status":{"allocatable":{"pods":"2"},"capacity":{"pods":"2"}}}')  # fmt: skip
    time.sleep(0.3)
    kc("apply", "-f", "-", stdin=_deploy(ns, "many", 5, {}))
    got = _placement(kc, ns, "many", 5, timeout=3.0)
    per = {n: sum(1 for v in got.values() if v == n) for n in nodes}
    assert per == dict.fromkeys(nodes, 2) and sum(1 for v in got.values() if v is None) == 1, got


def test_preemption_evicts_the_fewest_lowest_pods_and_honours_the_budget(
    kc: Kubectl, sched: Any, ns: str
) -> None:
    """A pending pod of a higher PriorityClass evicts (Eviction API) the fewest lower-priority pods on
    the graph, records status.nominatedNodeName and is bound there; a budget that forbids the
    evictions it would need leaves the pod Pending and evicts nothing."""
    (node,) = _nodes(kc, ns, [("a", {})], cpu="4")
    for name, value in ((f"{ns}-low", 10), (f"{ns}-mid", 20), (f"{ns}-high", 1000)):
        kc("create", "priorityclass", name[:60], f"--value={value}")
    kc("apply", "-f", "-", stdin=_deploy(ns, "low", 2, {"priorityClassName": f"{ns}-low"[:60]}))
    kc("apply", "-f", "-", stdin=_deploy(ns, "mid", 2, {"priorityClassName": f"{ns}-mid"[:60]}))
    _placement(kc, ns, "low", 2)
    _placement(kc, ns, "mid", 2)  # the node's 4 cores are taken
    kc("apply", "-f", "-", stdin=_deploy(ns, "vip", 1, {"priorityClassName": f"{ns}-high"[:60]}))
    got = _placement(kc, ns, "vip", 1)
    assert list(got.values()) == [node]
    vip = kc.json("get", "pods", "-n", ns, "-l", "app=vip")["items"][0]
    assert vip["spec"]["priority"] == 1000 and vip["status"].get("nominatedNodeName") == node
    mid = kc.json("get", "pods", "-n", ns, "-l", "app=mid")["items"]
    assert sum(1 for m in mid if m["spec"].get("nodeName") == node) == 2  # only a low pod was a victim
    events = kc.json("get", "events", "-n", ns)["items"]
    assert sum(1 for e in events if e["reason"] == "Preempted") == 1
    # a budget that allows no disruption of "mid": a 2-core pod would need both low... and mid ones
    kc("create", "pdb", "midpdb", "-n", ns, "--selector=app=mid", "--min-available=2")
    time.sleep(0.3)
    kc("apply", "-f", "-", stdin=_deploy(ns, "vip2", 1, {"priorityClassName": f"{ns}-high"[:60]}, cpu="3"))
    got = _placement(kc, ns, "vip2", 1, timeout=2.0)
    assert list(got.values()) == [None]
    mid = kc.json("get", "pods", "-n", ns, "-l", "app=mid")["items"]
    assert (
        sum(
            1 for m in mid if m["spec"].get("nodeName") == node and not m["metadata"].get("deletionTimestamp")
        )
        == 2
    )


def _gang_pod(ns: str, name: str, cpu: str) -> str:
    return orjson.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"app": "gang", "scheduling.x-k8s.io/pod-group": "gb", "fluence.group-size": "5"}},
        "spec": {"schedulerName": "fluxlite", "nodeSelector": {"t": ns},
                 "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]},
    }).decode()  # fmt: skip


def test_gang_that_cannot_fit_says_so_for_the_gang_then_fits_whole(kc: Kubectl, sched: Any, ns: str) -> None:
    """Five 8-core members on two 16-core nodes: none is bound and each says "gang gb: 5 pods of 8 cores,
    at most 4 fit now"; a third node arrives and all five are bound at once."""
    _nodes(kc, ns, [("a", {}), ("b", {})], cpu="16")
    items = [orjson.loads(_gang_pod(ns, f"g{i}", "8")) for i in range(5)]
    kc("apply", "-f", "-", stdin=orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}).decode())
    time.sleep(1.0)
    assert all(n is None for n in _placement(kc, ns, "gang", 5, timeout=0.5).values())
    events = kc.json("get", "events", "-n", ns, "--field-selector", "involvedObject.name=g0")["items"]
    msgs = [e["message"] for e in events if e["reason"] == "FailedScheduling"]
    assert any("gang gb: 5 pods of 8 cores, at most 4 fit now" in m for m in msgs), msgs
    _nodes(kc, ns, [("c", {})], cpu="16")
    got = _placement(kc, ns, "gang", 5)
    assert all(got.values()) and len(got) == 5


def test_anti_affinity_inside_a_gang_spreads_its_members_all_or_nothing(
    kc: Kubectl, sched: Any, ns: str
) -> None:
    """Members of one gang with required anti-affinity to each other (hostname): three members go to
    three nodes (not packed on one); a four-member gang with the same rule on three nodes places
    none of them and says at most 3 fit."""
    nodes = _nodes(kc, ns, [("a", {}), ("b", {}), ("c", {})], cpu="4")

    def gang(name: str, size: int) -> list[dict[str, Any]]:
        term = {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"}
        out = []
        for i in range(size):
            pod = orjson.loads(_gang_pod(ns, f"{name}-{i}", "1"))
            pod["metadata"]["labels"] = {"app": name, "scheduling.x-k8s.io/pod-group": name,
                                         "fluence.group-size": str(size)}  # fmt: skip
            pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
            out.append(pod)
        return out

    apply = lambda items: kc("apply", "-f", "-",  # noqa: E731
                             stdin=orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}).decode())  # fmt: skip
    apply(gang("spread", 3))
    got = _placement(kc, ns, "spread", 3)
    assert sorted(n for n in got.values() if n) == sorted(nodes), got
    apply(gang("wide", 4))
    time.sleep(1.0)
    assert all(n is None for n in _placement(kc, ns, "wide", 4, timeout=0.5).values())
    events = kc.json("get", "events", "-n", ns, "--field-selector", "involvedObject.name=wide-0")["items"]
    msgs = [e["message"] for e in events if e["reason"] == "FailedScheduling"]
    assert any("gang wide: 4 pods of 1 core, at most 3 fit now" in m for m in msgs), msgs
    with sched.lock:  # the failed gang holds nothing
        assert not any(k.startswith(f"{ns}/wide-") for k in sched.core.pods)


def test_autoscale_scales_the_deployment_from_the_pods_metrics(kc: Kubectl, sched: Any, ns: str) -> None:
    """``kubectl autoscale`` (an autoscaling/v1 HPA, served as v2 too): the test server's HPA
    controller reads the pods' cpu from their ``metrics.fluxlite.io/cpu`` annotation, scales the
    Deployment up (the scheduler binds the new pods) and down again; ``kubectl get hpa`` shows
    the target; a v2 HPA on a Pods metric stops at maxReplicas and says so (ScalingLimited)."""
    _nodes(kc, ns, [("a", {}), ("b", {})], cpu="4")
    kc("apply", "-f", "-", stdin=_deploy(ns, "web", 2, {}, cpu="500m"))
    assert sum(1 for n in _placement(kc, ns, "web", 2).values() if n) == 2
    out = kc("autoscale", "deployment", "web", "-n", ns, "--min=1", "--max=6", "--cpu-percent=50")
    assert "autoscaled" in out.stdout
    kc("annotate", "pods", "-n", ns, "-l", "app=web", "metrics.fluxlite.io/cpu=500m", "--overwrite")
    got = _placement(kc, ns, "web", 4)  # 100 % of the requests against 50 %: twice the pods
    assert sum(1 for n in got.values() if n) == 4 and len(got) == 4, got
    rows = kc("get", "hpa", "-n", ns).stdout.splitlines()
    assert rows[0].split()[:4] == ["NAME", "REFERENCE", "TARGETS", "MINPODS"] and "Deployment/web" in rows[1]
    v1 = kc.json("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-n", ns)
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50 and v1["apiVersion"] == "autoscaling/v1"
    kc("annotate", "pods", "-n", ns, "-l", "app=web", "metrics.fluxlite.io/cpu=50m", "--overwrite")
    end = time.monotonic() + 15
    while time.monotonic() < end and len(_placement(kc, ns, "web", 1, timeout=0.1)) > 1:
        time.sleep(0.2)
    assert len(_placement(kc, ns, "web", 1)) == 1  # 10 % against 50 %: one pod
    hpa = kc.json("get", "hpa", "web", "-n", ns)
    assert hpa["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 10
    kc("apply", "-f", "-", stdin=_deploy(ns, "q", 1, {}, cpu="100m"))
    kc("apply", "-n", ns, "-f", "-", stdin=orjson.dumps({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "q"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "q"},
                 "minReplicas": 1, "maxReplicas": 3,
                 "metrics": [{"type": "Pods", "pods": {"metric": {"name": "queue"},
                                                       "target": {"type": "AverageValue", "averageValue": "10"}}}]},
    }).decode())  # fmt: skip
    assert sum(1 for n in _placement(kc, ns, "q", 1).values() if n) == 1
    kc("annotate", "pods", "-n", ns, "-l", "app=q", "metrics.fluxlite.io/queue=100", "--overwrite")
    got = _placement(kc, ns, "q", 3)
    assert sum(1 for n in got.values() if n) == 3 and len(got) == 3  # 10x the target, capped at 3
    end = time.monotonic() + 10
    while time.monotonic() < end:
        conds = {c["type"]: c for c in kc.json("get", "hpa", "q", "-n", ns).get("status", {}).get("conditions", [])}
        if conds.get("ScalingLimited", {}).get("status") == "True":
            break
        time.sleep(0.2)
    assert conds["ScalingLimited"]["reason"] == "TooManyReplicas"


def test_scale_up_and_down_never_overcommits(kc: Kubectl, sched: Any, ns: str) -> None:
    """kubectl scale 0 -> 12 -> 5 -> 9 on three 4-core nodes: every node holds at most 4 one-core pods,
    the 13th... never exists; scale down frees the cores (the next scale-up reuses them)."""
    nodes = _nodes(kc, ns, [("a", {}), ("b", {}), ("c", {})], cpu="4")
    kc("apply", "-f", "-", stdin=_deploy(ns, "sc", 0, {}))
    for n in (12, 5, 9):
        kc("scale", "deploy/sc", "-n", ns, f"--replicas={n}")
        end = time.monotonic() + 15
        while time.monotonic() < end:
            got = _placement(kc, ns, "sc", n, timeout=0)
            live = {p: v for p, v in got.items() if v}
            if len(got) == n and len(live) == n:
                break
            time.sleep(0.1)
        per = {x: sum(1 for v in live.values() if v == x) for x in nodes}
        assert len(live) == n and max(per.values()) <= 4, (n, per)
    with sched.lock:
        assert sum(1 for k in sched.core.pods if k.startswith(f"{ns}/")) == 9


def test_kill_9_and_restart_double_books_nothing(kc: Kubectl, ns: str) -> None:
    """``fluxlite kube run`` (a process) binds a Deployment's pods, logging each binding at INFO; killed
    with SIGKILL, scaled up meanwhile, restarted: it rebuilds its state from the cluster and no node is
    over-committed."""
    import signal
    import sys

    nodes = _nodes(kc, ns, [("a", {}), ("b", {})], cpu="4")
    name = "fluxlite-k9"
    kc("apply", "-f", "-", stdin=_deploy(ns, "k9", 6, {"schedulerName": name}))

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "fluxlite.cli.main", "kube", "run", "--kubeconfig", str(kc.config),
             "--scheduler-name", name, "--namespace", ns, "--backoff", "0.1,0.5"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    import threading

    def collect(p: subprocess.Popen[str], into: list[str]) -> threading.Thread:
        t = threading.Thread(target=lambda: into.extend(p.stderr or ()), daemon=True)
        t.start()
        return t

    def bound(lines: list[str]) -> int:
        return sum(1 for line in list(lines) if " INFO " in line and "bound " in line)

    proc = start()
    lines: list[str] = []
    reader = collect(proc, lines)
    try:
        got = _placement(kc, ns, "k9", 6, timeout=30)
        assert sum(1 for v in got.values() if v) == 6
        # A pod shows as bound once the API has the Binding; the scheduler logs it right after the
        # answer. Kill it only when it has logged all six (or after 10 s: then the assertion says so).
        deadline = time.monotonic() + 10
        while bound(lines) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        reader.join(timeout=10)
        assert bound(lines) == 6, "".join(lines)
        kc("scale", "deploy/k9", "-n", ns, "--replicas=9")  # one more than the cores: one stays Pending
        proc = start()
        reader = collect(proc, [])
        got = _placement(kc, ns, "k9", 8, timeout=30)
        time.sleep(0.5)
        got = _placement(kc, ns, "k9", 9, timeout=0)
        per = {x: sum(1 for v in got.values() if v == x) for x in nodes}
        assert per == dict.fromkeys(nodes, 4) and sum(1 for v in got.values() if v is None) == 1, got
    finally:
        proc.kill()  # its state is in the cluster: nothing to lose
        proc.wait()
        reader.join(timeout=10)
        if proc.stderr:
            proc.stderr.close()
