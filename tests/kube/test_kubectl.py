"""The stand-in API server as kubectl (a client nobody here wrote) sees it.

One server per module (its state is namespaced per test); kubectl runs as a subprocess with
its own HOME (discovery cache) and the server's kubeconfig (TLS, bearer token).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

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
