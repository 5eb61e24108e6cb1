"""The stand-in Kubernetes API server, driven by the official ``kubernetes`` client over HTTP."""

from __future__ import annotations

import http.client
import json
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.testing import ApiServer, ApiServerProcess
from kube.testing._patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from kube.testing._resources import resource

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, watch  # noqa: E402


@pytest.fixture
def server():
    srv = ApiServer(bookmark_interval=0.2).start()
    yield srv
    srv.stop()


@pytest.fixture
def v1(server):
    return client.CoreV1Api(server.api_client())


@pytest.fixture
def apps(server):
    return client.AppsV1Api(server.api_client())


def _tls(srv) -> ssl.SSLContext:
    """A client TLS context that trusts the server's CA (and nothing else)."""
    return ssl.create_default_context(cadata=srv.ca_pem.decode())


def _open(srv, request, **kw):
    return urllib.request.urlopen(request, context=_tls(srv), **kw)


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def pod_body(name=None, scheduler="fluxlite", cpu="1", labels=None, generate=None):
    meta = {"name": name} if name else {"generateName": generate}
    if labels:
        meta["labels"] = labels
    return {
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def node_body(name, cpu="4", labels=None):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}],
        },
    }


def bind(v1, name, node, annotations=None):
    meta = {"name": name, **({"annotations": annotations} if annotations else {})}
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"kind": "Node", "name": node}}
    return v1.create_namespaced_binding("default", body, _preload_content=False)


def api_error(call, *args, **kwargs):
    with pytest.raises(client.ApiException) as info:
        call(*args, **kwargs)
    return info.value.status, json.loads(info.value.body)


def test_discovery_version_and_health(server):
    """Discovery, /version and /healthz answer as a real server does."""
    api = server.api_client()
    assert client.VersionApi(api).get_code().git_version.startswith("v1.")
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"apps", "batch", "events.k8s.io"} <= groups
    names = {r.name for r in client.CoreV1Api(api).get_api_resources().resources}
    assert {"pods", "pods/binding", "pods/status", "nodes", "nodes/status", "events"} <= names
    scale = next(
        r for r in client.AppsV1Api(api).get_api_resources().resources if r.name == "replicasets/scale"
    )
    assert (scale.kind, scale.group, scale.version) == ("Scale", "autoscaling", "v1")
    with _open(server, server.url + "/healthz") as resp:
        assert resp.read() == b"ok"


def test_nodes_crud_cordon_and_status(server, v1):
    """Nodes: create, list with selectors, cordon by patch (tainted by the lifecycle controller), status, delete."""
    v1.create_node(node_body("n1", labels={"topology.kubernetes.io/zone": "a"}))
    v1.create_node(node_body("n2", labels={"topology.kubernetes.io/zone": "b"}))
    nodes = v1.list_node()
    assert [n.metadata.name for n in nodes.items] == ["n1", "n2"]
    assert int(nodes.metadata.resource_version) >= 2
    assert [
        n.metadata.name for n in v1.list_node(label_selector="topology.kubernetes.io/zone in (b)").items
    ] == ["n2"]
    assert [n.metadata.name for n in v1.list_node(field_selector="metadata.name=n1").items] == ["n1"]
    node = v1.read_node("n1")
    assert node.status.allocatable["cpu"] == "4" and node.metadata.uid and node.metadata.creation_timestamp
    v1.patch_node("n1", {"spec": {"unschedulable": True}})
    tainted = wait_for(lambda: v1.read_node("n1").spec.taints)
    assert [(t.key, t.effect) for t in tainted] == [("node.kubernetes.io/unschedulable", "NoSchedule")]
    assert [n.metadata.name for n in v1.list_node(field_selector="spec.unschedulable=true").items] == ["n1"]
    v1.patch_node("n1", {"spec": {"unschedulable": None}})
    wait_for(lambda: not v1.read_node("n1").spec.taints)
    # status subresource: conditions merge by type; a status write leaves the spec alone
    v1.patch_node_status(
        "n1", {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}
    )
    node = v1.read_node("n1")
    assert [(c.type, c.status, c.reason) for c in node.status.conditions] == [
        ("Ready", "False", "KubeletDown")
    ]
    assert node.status.allocatable["cpu"] == "4"
    tainted = wait_for(lambda: v1.read_node("n1").spec.taints)
    assert sorted((t.key, t.effect) for t in tainted) == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/not-ready", "NoSchedule"),
    ]
    v1.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    wait_for(lambda: not v1.read_node("n1").spec.taints)
    # pods bound to a deleted node are garbage-collected
    v1.create_namespaced_pod(
        "default", {**pod_body("on-n2"), "spec": {**pod_body("x")["spec"], "nodeName": "n2"}}
    )
    wait_for(lambda: v1.read_namespaced_pod("on-n2", "default").status.phase == "Running")
    deleted = json.loads(
        v1.delete_node("n2", _preload_content=False).data
    )  # the Node, as a real server answers
    assert (deleted["kind"], deleted["metadata"]["name"]) == ("Node", "n2")
    status, body = api_error(v1.read_node, "n2")
    assert (
        status == 404 and body["reason"] == "NotFound" and body["details"] == {"name": "n2", "kind": "nodes"}
    )


def test_pod_defaults_field_selectors_and_binding(server, v1):
    """Pods get the real defaults; binding sets nodeName, PodScheduled and annotations; a second binding is 409."""
    v1.create_node(node_body("n1"))
    pod = v1.create_namespaced_pod("default", pod_body("p1"))
    assert pod.status.phase == "Pending" and pod.status.qos_class == "Burstable"
    assert pod.spec.scheduler_name == "fluxlite" and pod.spec.node_name is None
    other = v1.create_namespaced_pod("default", pod_body("p2", scheduler=None))
    assert other.spec.scheduler_name == "default-scheduler"
    mine = v1.list_namespaced_pod("default", field_selector="spec.schedulerName=fluxlite,spec.nodeName=")
    assert [p.metadata.name for p in mine.items] == ["p1"]
    resp = bind(v1, "p1", "n1", annotations={"fluxlite.io/jobid": "7"})
    assert resp.status == 201
    assert json.loads(resp.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    pod = v1.read_namespaced_pod("p1", "default")
    assert pod.spec.node_name == "n1" and pod.metadata.annotations == {"fluxlite.io/jobid": "7"}
    assert [(c.type, c.status) for c in pod.status.conditions if c.type == "PodScheduled"] == [
        ("PodScheduled", "True")
    ]
    assert (
        v1.list_namespaced_pod("default", field_selector="spec.schedulerName=fluxlite,spec.nodeName=").items
        == []
    )
    assert [
        p.metadata.name for p in v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1").items
    ] == ["p1"]
    with pytest.raises(client.ApiException) as info:
        bind(v1, "p1", "n2")
    body = json.loads(info.value.body)
    assert info.value.status == 409 and body["reason"] == "Conflict"
    assert 'pod p1 is already assigned to node "n1"' in body["message"]
    # the kubelet stand-in starts it: Running and Ready
    wait_for(lambda: v1.read_namespaced_pod("p1", "default").status.phase == "Running")
    counts = server.request_counts()
    assert counts["create pods/binding"] == 2 and counts["create pods"] == 2 and counts["create nodes"] == 1
    status, body = api_error(
        v1.create_namespaced_pod_binding,
        "nope",
        "default",
        {"metadata": {"name": "nope"}, "target": {"name": "n1"}},
        _preload_content=False,
    )
    assert status == 404 and body["message"] == 'pods "nope" not found'


def test_binding_response_quirk_of_the_python_client(server, v1):
    """The real answer to a binding is a Status; the generated client cannot read it as a V1Binding."""
    v1.create_namespaced_pod("default", pod_body("p1"))
    body = {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "n1"}}
    with pytest.raises(ValueError):
        v1.create_namespaced_binding("default", body)
    assert v1.read_namespaced_pod("p1", "default").spec.node_name == "n1"  # the binding itself succeeded


def test_pod_status_subresource_and_spec_immutability(server, v1):
    """PodScheduled=False goes through pods/status and merges by type; the pod spec is immutable (422)."""
    v1.create_namespaced_pod("default", pod_body("p1"))
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available",
    }
    v1.patch_namespaced_pod_status("p1", "default", {"status": {"conditions": [cond]}})
    v1.patch_namespaced_pod_status(
        "p1", "default", {"status": {"conditions": [{"type": "Initialized", "status": "True"}]}}
    )
    pod = v1.read_namespaced_pod("p1", "default")
    got = {c.type: (c.status, c.reason, c.message) for c in pod.status.conditions}
    assert got == {
        "PodScheduled": ("False", "Unschedulable", "0/2 nodes are available"),
        "Initialized": ("True", None, None),
    }
    assert pod.status.phase == "Pending"
    # a write to the main resource ignores status; metadata patches work
    v1.patch_namespaced_pod(
        "p1", "default", {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Running"}}
    )
    pod = v1.read_namespaced_pod("p1", "default")
    assert pod.metadata.labels == {"a": "b"} and pod.status.phase == "Pending"
    status, body = api_error(v1.patch_namespaced_pod, "p1", "default", {"spec": {"nodeName": "n1"}})
    assert status == 422 and body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "spec"
    # JSON merge patch and JSON patch are served too
    v1.patch_namespaced_pod(
        "p1",
        "default",
        {"metadata": {"labels": {"a": None, "c": "d"}}},
        _content_type="application/merge-patch+json",
    )
    v1.patch_namespaced_pod(
        "p1", "default", [{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}]
    )
    pod = v1.read_namespaced_pod("p1", "default")
    assert pod.metadata.labels == {"c": "d"} and pod.metadata.annotations == {"x": "y"}
    status, body = api_error(
        v1.patch_namespaced_pod, "p1", "default", [{"op": "test", "path": "/metadata/name", "value": "q"}]
    )
    assert status == 422 and body["reason"] == "Invalid"
    status, body = api_error(v1.patch_namespaced_pod, "p1", "default", [{"op": "frobnicate", "path": "/x"}])
    assert status == 400 and body["reason"] == "BadRequest"
    assert v1.read_namespaced_pod("p1", "default").metadata.resource_version == pod.metadata.resource_version


def test_error_statuses(server, v1):
    """AlreadyExists, stale update, invalid objects, unknown paths and verbs: the real codes and Status shapes."""
    v1.create_namespaced_pod("default", pod_body("p1"))
    status, body = api_error(v1.create_namespaced_pod, "default", pod_body("p1"))
    assert status == 409 and body["reason"] == "AlreadyExists" and body["status"] == "Failure"
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["code"] == 409
    assert body["message"] == 'pods "p1" already exists'
    pod = v1.read_namespaced_pod("p1", "default")
    old_rv = pod.metadata.resource_version
    v1.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"v": "2"}}})
    pod.metadata.resource_version = old_rv
    status, body = api_error(v1.replace_namespaced_pod, "p1", "default", pod)
    assert (
        status == 409 and body["reason"] == "Conflict" and "the object has been modified" in body["message"]
    )
    status, body = api_error(
        v1.create_namespaced_pod, "default", {"metadata": {"name": "bad"}, "spec": {"containers": []}}
    )
    assert status == 422 and body["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}
    ]
    status, body = api_error(v1.create_namespaced_pod, "nowhere", pod_body("p9"))
    assert status == 404 and body["message"] == 'namespaces "nowhere" not found'
    status, body = api_error(v1.list_namespaced_pod, "default", field_selector="spec.bogus=1")
    assert status == 400 and body["reason"] == "BadRequest"
    for method, path, code in [
        ("GET", "/api/v1/frobs", 404),
        ("GET", "/apis/nope/v1", 404),
        ("POST", "/api/v1/namespaces/default/pods/p1", 405),
    ]:
        request = urllib.request.Request(
            server.url + path,
            data=b"{}" if method == "POST" else None,
            method=method,
            headers={"Authorization": f"Bearer {server.token}"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            _open(server, request)
        assert info.value.code == code and json.loads(info.value.read())["code"] == code


def test_bearer_token_is_checked(server):
    """No token: 401 except health and version (anonymous); a wrong token: 401 everywhere; nothing changes."""
    pods = "/api/v1/namespaces/default/pods"
    for headers, path, method, code in [
        ({}, "/healthz", "GET", 200),
        ({}, "/version", "GET", 200),
        ({}, pods, "GET", 401),
        ({}, "/openapi/v3", "GET", 401),
        ({"Authorization": "Bearer wrong"}, "/healthz", "GET", 401),
        ({"Authorization": "Basic " + server.token}, pods, "GET", 401),
        ({"Authorization": "Bearer wrong"}, pods, "POST", 401),
        ({"Authorization": f"Bearer {server.token}"}, pods, "GET", 200),
    ]:
        body = orjson.dumps(pod_body("sneaky")) if method == "POST" else None
        request = urllib.request.Request(server.url + path, data=body, method=method, headers=headers)
        try:
            with _open(server, request) as resp:
                got = resp.status
        except urllib.error.HTTPError as err:
            got = err.code
            answer = json.loads(err.read())
            assert answer["reason"] == "Unauthorized" and answer["code"] == 401
        assert got == code, (headers, path, method)
    assert server.store.list(resource("", "v1", "pods"), "default")[0] == []


def test_keep_alive_survives_error_answers(server):
    """An error answered before the body is used still consumes it: the next request on the connection works."""
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=5, context=_tls(server))
    try:
        for path in ("/api/v1/frobs", "/api/v1/namespaces/default/pods/p1"):
            conn.request(
                "POST",
                path,
                body=b'{"metadata": {"name": "x"}}',
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.token}"},
            )
            resp = conn.getresponse()
            assert resp.status in (404, 405) and json.loads(resp.read())["kind"] == "Status"
        conn.request("GET", "/version")
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["major"] == "1"
    finally:
        conn.close()


def test_generate_name_update_and_noop(server, v1):
    """generateName picks a fresh name; a no-op write keeps the resourceVersion; PUT with the current one succeeds."""
    pod = v1.create_namespaced_pod("default", pod_body(generate="web-"))
    assert pod.metadata.name.startswith("web-") and len(pod.metadata.name) == len("web-") + 5
    again = v1.patch_namespaced_pod(pod.metadata.name, "default", {"metadata": {"labels": {}}})
    assert again.metadata.resource_version == pod.metadata.resource_version
    pod.metadata.labels = {"tier": "x"}
    updated = v1.replace_namespaced_pod(pod.metadata.name, "default", pod)
    assert int(updated.metadata.resource_version) > int(pod.metadata.resource_version)


def test_watch_streams_added_modified_deleted(server, v1):
    """A watch from a list's resourceVersion sees exactly the later changes, in order."""
    v1.create_namespaced_pod("default", pod_body("before"))
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_namespaced_pod("default", pod_body("p1"))
    v1.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "y"}}})
    v1.delete_namespaced_pod("p1", "default")
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
        )
    ]
    assert seen == [("ADDED", "p1"), ("MODIFIED", "p1"), ("DELETED", "p1")]


def test_watch_live_and_selector_transitions(server, v1):
    """A live watch with fieldSelector spec.nodeName= sees a pod leave the selection as DELETED when bound."""
    v1.create_node(node_body("n1"))
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    w = watch.Watch()
    seen = []

    import threading

    def writer():
        time.sleep(0.2)
        v1.create_namespaced_pod("default", pod_body("p1"))
        bind(v1, "p1", "n1")

    t = threading.Thread(target=writer)
    t.start()
    for event in w.stream(
        v1.list_namespaced_pod,
        "default",
        field_selector="spec.nodeName=",
        resource_version=rv,
        timeout_seconds=10,
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            w.stop()
    t.join()
    assert seen == [("ADDED", "p1"), ("DELETED", "p1")]


def test_watch_gone_after_compaction(server, v1):
    """After compaction a watch from an old resourceVersion gets an ERROR event with a 410 Expired Status."""
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_namespaced_pod("default", pod_body("p1"))
    server.compact()
    url = f"{server.url}/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {server.token}"})
    with _open(server, request) as resp:
        assert resp.status == 200
        event = json.loads(resp.readline())
    assert event["type"] == "ERROR"
    assert (
        event["object"]["code"] == 410
        and event["object"]["reason"] == "Expired"
        and event["object"]["kind"] == "Status"
    )
    # the python client retries once from the same version, then raises ApiException(410)
    with pytest.raises(client.ApiException) as info:
        for _ in watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=rv):
            pass
    assert info.value.status == 410
    # re-list and watch from the new version works
    fresh = v1.list_namespaced_pod("default").metadata.resource_version
    assert (
        list(
            watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=fresh, timeout_seconds=1)
        )
        == []
    )


def test_open_watch_survives_compaction(server, v1):
    """Compaction only refuses new watches from old versions; a watch already open goes on."""
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_node(node_body("n1"))  # moves the global version past the pod watch's position
    url = f"{server.url}/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3"
    with _open(
        server, urllib.request.Request(url, headers={"Authorization": f"Bearer {server.token}"})
    ) as resp:
        time.sleep(0.2)  # the watch is open and waiting
        server.compact()
        v1.create_namespaced_pod("default", pod_body("p1"))
        event = json.loads(resp.readline())
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "p1")


def test_watch_cache_window_and_bookmarks():
    """A watch older than the cache window is 410; bookmarks carry the current resourceVersion."""
    with ApiServer(watch_cache_size=3, bookmark_interval=0.2, controllers=False) as srv:
        v1 = client.CoreV1Api(srv.api_client())
        rv = v1.list_namespaced_pod("default").metadata.resource_version
        for i in range(5):
            v1.create_namespaced_pod("default", pod_body(f"p{i}"))
        with pytest.raises(client.ApiException) as info:
            list(
                watch.Watch().stream(
                    v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
                )
            )
        assert info.value.status == 410
        latest = v1.list_namespaced_pod("default").metadata.resource_version
        url = f"{srv.url}/api/v1/namespaces/default/pods?watch=1&resourceVersion={latest}&allowWatchBookmarks=true&timeoutSeconds=1"
        with _open(
            srv, urllib.request.Request(url, headers={"Authorization": f"Bearer {srv.token}"})
        ) as resp:
            event = json.loads(resp.readline())
        assert event["type"] == "BOOKMARK" and event["object"]["metadata"]["resourceVersion"] == latest


def test_replicaset_scale_creates_and_deletes_pods(server, v1, apps):
    """The ReplicaSet controller follows the scale subresource; scale-down removes unbound pods first."""
    v1.create_node(node_body("n1", cpu="64"))
    rs = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_body("x")["spec"]},
        },
    }
    created = apps.create_namespaced_replica_set("default", rs)
    uid = created.metadata.uid

    def pods():
        return [
            p
            for p in v1.list_namespaced_pod("default", label_selector="app=web").items
            if not p.metadata.deletion_timestamp
        ]

    wait_for(lambda: len(pods()) == 2)
    pod = pods()[0]
    assert pod.metadata.name.startswith("web-") and pod.spec.scheduler_name == "fluxlite"
    ref = pod.metadata.owner_references[0]
    assert (ref.kind, ref.name, ref.uid, ref.controller) == ("ReplicaSet", "web", uid, True)
    scale = apps.patch_namespaced_replica_set_scale("web", "default", {"spec": {"replicas": 5}})
    assert scale.spec.replicas == 5 and scale.status.selector == "app=web"
    wait_for(lambda: len(pods()) == 5)
    bound = sorted(p.metadata.name for p in pods()[:2])
    for name in bound:
        bind(v1, name, "n1")
    apps.patch_namespaced_replica_set_scale("web", "default", {"spec": {"replicas": 2}})
    wait_for(lambda: len(v1.list_namespaced_pod("default", label_selector="app=web").items) == 2)
    assert sorted(p.metadata.name for p in pods()) == bound
    wait_for(lambda: apps.read_namespaced_replica_set("web", "default").status.replicas == 2)
    assert apps.read_namespaced_replica_set_scale("web", "default").status.replicas == 2
    reasons = {
        e.reason for e in v1.list_namespaced_event("default", field_selector="involvedObject.name=web").items
    }
    assert reasons == {"SuccessfulCreate", "SuccessfulDelete"}
    apps.replace_namespaced_replica_set_scale(
        "web", "default", {"metadata": {"name": "web"}, "spec": {"replicas": 0}}
    )
    wait_for(lambda: v1.list_namespaced_pod("default", label_selector="app=web").items == [])
    status, body = api_error(
        apps.patch_namespaced_replica_set_scale, "web", "default", {"spec": {"replicas": -1}}
    )
    assert status == 422 and body["reason"] == "Invalid"


def test_replicaset_deletion_collects_or_orphans_pods(server, v1, apps):
    """Deleting a ReplicaSet deletes its pods (background) unless propagationPolicy=Orphan."""
    for name, policy in (("a", "Background"), ("b", "Orphan")):
        template = {"metadata": {"labels": {"app": name}}, "spec": pod_body("x")["spec"]}
        body = {
            "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}}, "template": template},
        }
        apps.create_namespaced_replica_set("default", body)
        wait_for(
            lambda name=name: len(v1.list_namespaced_pod("default", label_selector=f"app={name}").items) == 2
        )
        apps.delete_namespaced_replica_set(name, "default", propagation_policy=policy)
    wait_for(lambda: v1.list_namespaced_pod("default", label_selector="app=a").items == [])
    orphans = v1.list_namespaced_pod("default", label_selector="app=b").items
    assert len(orphans) == 2 and all(not p.metadata.owner_references for p in orphans)


def test_kubelet_rejects_overcommitted_pods(server, v1):
    """Binding more than a node's allocatable CPU makes the kubelet fail the late pod with OutOfcpu."""
    v1.create_node(node_body("n1", cpu="4"))
    for name in ("p1", "p2"):
        v1.create_namespaced_pod("default", pod_body(name, cpu="3"))
        bind(v1, name, "n1")
        wait_for(lambda name=name: v1.read_namespaced_pod(name, "default").status.phase != "Pending")
    p1, p2 = (v1.read_namespaced_pod(n, "default") for n in ("p1", "p2"))
    assert p1.status.phase == "Running"
    assert (p2.status.phase, p2.status.reason) == ("Failed", "OutOfcpu")
    # deleting a bound pod is graceful, and the kubelet finishes it
    v1.delete_namespaced_pod("p1", "default")
    wait_for(lambda: [p.metadata.name for p in v1.list_namespaced_pod("default").items] == ["p2"])


def test_kubelet_checks_node_selector_and_affinity(server, v1):
    """A pod bound against its nodeSelector or required node affinity fails with NodeAffinity."""
    v1.create_node(node_body("n1", labels={"disk": "ssd", "rank": "3"}))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]},
                    {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["2"]}]},
                ]
            }
        }
    }
    cases = {
        "sel-ok": {"nodeSelector": {"disk": "ssd"}},
        "sel-bad": {"nodeSelector": {"disk": "hdd"}},
        "aff-ok": {"affinity": affinity},
    }
    bad = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}
                ]
            }
        }
    }
    cases["aff-bad"] = {"affinity": bad}
    for name, extra in cases.items():
        v1.create_namespaced_pod(
            "default", {"metadata": {"name": name}, "spec": {**pod_body("x", cpu="0.1")["spec"], **extra}}
        )
        bind(v1, name, "n1")
    phases = wait_for(
        lambda: (lambda got: got if all(phase != "Pending" for phase, _ in got.values()) else None)(
            {
                p.metadata.name: (p.status.phase, p.status.reason)
                for p in v1.list_namespaced_pod("default").items
            }
        )
    )
    assert phases == {
        "sel-ok": ("Running", None),
        "aff-ok": ("Running", None),
        "sel-bad": ("Failed", "NodeAffinity"),
        "aff-bad": ("Failed", "NodeAffinity"),
    }


def test_kubelet_of_a_late_node_starts_its_pods(server, v1):
    """A pod bound to a node that does not exist yet stays Pending until the node appears."""
    v1.create_namespaced_pod("default", pod_body("p1"))
    bind(v1, "p1", "late")
    time.sleep(0.2)
    assert v1.read_namespaced_pod("p1", "default").status.phase == "Pending"
    v1.create_node(node_body("late"))
    wait_for(lambda: v1.read_namespaced_pod("p1", "default").status.phase == "Running")


def test_events_core_and_events_v1(server, v1):
    """core/v1 and events.k8s.io/v1 Events: create, list by involved object, validation."""
    event = {
        "metadata": {"generateName": "p1."},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "FailedScheduling",
        "message": "0/3 nodes are available",
        "type": "Warning",
        "source": {"component": "fluxlite"},
    }
    v1.create_namespaced_event("default", event)
    got = v1.list_namespaced_event(
        "default", field_selector="involvedObject.name=p1,reason=FailedScheduling"
    ).items
    assert [(e.reason, e.type, e.source.component) for e in got] == [
        ("FailedScheduling", "Warning", "fluxlite")
    ]
    status, body = api_error(
        v1.create_namespaced_event,
        "default",
        {**event, "involvedObject": {"name": "p1", "namespace": "other"}},
    )
    assert status == 422
    ev1 = client.EventsV1Api(server.api_client())
    body = {
        "metadata": {"generateName": "p1."},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "fluxlite.io/scheduler",
        "reportingInstance": "fluxlite-0",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "type": "Warning",
        "note": "no fit",
    }
    ev1.create_namespaced_event("default", body)
    assert [e.note for e in ev1.list_namespaced_event("default").items] == ["no fit"]
    status, _ = api_error(ev1.create_namespaced_event, "default", {**body, "action": None})
    assert status == 422


def test_list_pagination_and_delete_collection(server, v1):
    """limit/continue pages through a list; deletecollection honours the label selector."""
    for i in range(5):
        v1.create_namespaced_pod("default", pod_body(f"p{i}", labels={"batch": "x" if i < 3 else "y"}))
    names, token = [], None
    while True:
        page = v1.list_namespaced_pod("default", limit=2, _continue=token)
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)]
    v1.delete_collection_namespaced_pod("default", label_selector="batch=x")
    assert [p.metadata.name for p in v1.list_namespaced_pod("default").items] == ["p3", "p4"]


def test_kubeconfig_and_cli(tmp_path):
    """The CLI prints its URL and writes a kubeconfig the official loader accepts; SIGTERM stops it."""
    config = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kube.testing", "--port", "0", "--kubeconfig", str(config)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("https://127.0.0.1:")
        api = kubernetes.config.new_client_from_config(config_file=str(config))
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        assert "default" in names and "kube-system" in names
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_cli_sigterm_right_after_the_url_exits_cleanly():
    """SIGTERM arriving the moment the URL is printed stops the server with status 0 (no race).

    The child signals itself from inside ``print`` (right after the URL is written), the earliest
    moment a caller that reads the URL could: deterministic, where a racing parent is not.
    """
    child = (
        "import builtins, os, runpy, signal\n"
        "real = builtins.print\n"
        "def hooked(*a, **k):\n"
        "    real(*a, **k)\n"
        "    if a and str(a[0]).startswith('https://'):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "builtins.print = hooked\n"
        "runpy.run_module('kube.testing', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", child, "--port", "0"], capture_output=True, text=True, timeout=30
    )
    assert proc.stdout.startswith("https://127.0.0.1:")
    assert proc.returncode == 0, proc.stderr


def test_patch_formats():
    """Merge patch, strategic merge (keys, directives) and JSON patch, and their failures."""
    obj = {
        "a": {"b": 1, "c": [1, 2]},
        "conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}],
    }
    assert merge_patch(obj, {"a": {"b": None, "c": [3]}})["a"] == {"c": [3]}
    smp = strategic_merge_patch(
        obj, {"conditions": [{"type": "B", "status": "True"}, {"type": "C", "status": "True"}]}
    )
    assert [(c["type"], c["status"]) for c in smp["conditions"]] == [
        ("A", "True"),
        ("B", "True"),
        ("C", "True"),
    ]
    smp = strategic_merge_patch(obj, {"conditions": [{"type": "A", "$patch": "delete"}]})
    assert [c["type"] for c in smp["conditions"]] == ["B"]
    assert strategic_merge_patch(obj, {"a": {"$patch": "replace", "z": 1}})["a"] == {"z": 1}
    assert strategic_merge_patch({"finalizers": ["x"]}, {"finalizers": ["y", "x"]}) == {
        "finalizers": ["x", "y"]
    }
    assert obj["conditions"][1]["status"] == "False"  # arguments are never modified
    patched = json_patch(
        obj, [{"op": "replace", "path": "/a/b", "value": 2}, {"op": "add", "path": "/a/c/-", "value": 9}]
    )
    assert patched["a"] == {"b": 2, "c": [1, 2, 9]}
    with pytest.raises(PatchError):
        json_patch(obj, [{"op": "test", "path": "/a/b", "value": 5}])
    with pytest.raises(PatchError):
        strategic_merge_patch(obj, {"conditions": [{"status": "True"}]})


def workload_template(app, restart=None):
    spec = pod_body("x")["spec"]
    if restart:
        spec = {**spec, "restartPolicy": restart}
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def test_deployment_owns_a_replicaset_per_template(server, v1, apps):
    """A Deployment creates <name>-<hash> ReplicaSets; a new template scales the old one to 0."""
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": workload_template("web"),
        },
    }
    deployment = apps.create_namespaced_deployment("default", body)
    first = wait_for(lambda: apps.list_namespaced_replica_set("default").items)
    assert len(first) == 1 and first[0].metadata.owner_references[0].uid == deployment.metadata.uid
    pod_hash = first[0].metadata.labels["pod-template-hash"]
    assert first[0].metadata.name == f"web-{pod_hash}"
    pods = wait_for(lambda: (lambda p: p if len(p) == 2 else None)(v1.list_namespaced_pod("default").items))
    assert {p.metadata.owner_references[0].name for p in pods} == {first[0].metadata.name}
    assert all(p.metadata.labels["pod-template-hash"] == pod_hash for p in pods)
    wait_for(lambda: apps.read_namespaced_deployment("web", "default").status.replicas == 2)
    apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}}
    )
    wait_for(lambda: len(apps.list_namespaced_replica_set("default").items) == 2)
    replicas = {r.metadata.name: r.spec.replicas for r in apps.list_namespaced_replica_set("default").items}
    assert replicas[first[0].metadata.name] == 0 and sorted(replicas.values()) == [0, 2]
    apps.delete_namespaced_deployment("web", "default")
    wait_for(
        lambda: (
            not v1.list_namespaced_pod("default").items
            and not apps.list_namespaced_replica_set("default").items
        )
    )


def test_statefulset_creates_ordinals_in_order(server, v1, apps):
    """OrderedReady: <name>-1 appears only once <name>-0 is bound, Running and Ready; scale-down from the top."""
    v1.create_node(node_body("n1", cpu="16"))
    body = {
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": workload_template("db"),
        },
    }
    apps.create_namespaced_stateful_set("default", body)

    def names():
        return sorted(p.metadata.name for p in v1.list_namespaced_pod("default").items)

    wait_for(lambda: names() == ["db-0"])
    time.sleep(0.2)
    assert names() == ["db-0"]  # db-1 waits for db-0 to be Ready
    pod = v1.read_namespaced_pod("db-0", "default")
    assert pod.spec.hostname == "db-0" and pod.spec.subdomain == "db"
    assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == "db-0"
    for i in range(3):
        wait_for(lambda i=i: f"db-{i}" in names())
        bind(v1, f"db-{i}", "n1")
    wait_for(lambda: apps.read_namespaced_stateful_set("db", "default").status.ready_replicas == 3)
    apps.patch_namespaced_stateful_set_scale("db", "default", {"spec": {"replicas": 1}})
    wait_for(lambda: names() == ["db-0"])


def test_job_runs_parallelism_pods_until_completions(server, v1):
    """A Job keeps min(parallelism, completions - succeeded) pods and completes when enough succeed."""
    batch = client.BatchV1Api(server.api_client())
    status, body = api_error(
        batch.create_namespaced_job,
        "default",
        {"metadata": {"name": "bad"}, "spec": {"template": {"spec": pod_body("x")["spec"]}}},
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.template.spec.restartPolicy"
    job = {
        "metadata": {"name": "train"},
        "spec": {"parallelism": 2, "completions": 3, "template": workload_template("t", "Never")},
    }
    created = batch.create_namespaced_job("default", job)
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": created.metadata.uid}

    def active():
        return [
            p
            for p in v1.list_namespaced_pod("default", label_selector="job-name=train").items
            if p.status.phase not in ("Succeeded",)
        ]

    wait_for(lambda: len(active()) == 2)
    for _ in range(3):
        pod = wait_for(active)[0]
        v1.patch_namespaced_pod_status(pod.metadata.name, "default", {"status": {"phase": "Succeeded"}})
    done = wait_for(
        lambda: (lambda j: j if j.status.completion_time else None)(
            batch.read_namespaced_job("train", "default")
        )
    )
    assert done.status.succeeded == 3 and [c.type for c in done.status.conditions] == ["Complete"]
    assert active() == []


def test_leases_for_leader_election(server):
    """coordination.k8s.io/v1 Leases: create, then a stale renew is a 409 Conflict (leader election's guard)."""
    leases = client.CoordinationV1Api(server.api_client())
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 15}
    lease = leases.create_namespaced_lease("kube-system", {"metadata": {"name": "fluxlite"}, "spec": spec})
    stale = lease.metadata.resource_version
    lease.spec.holder_identity = "b"
    leases.replace_namespaced_lease("fluxlite", "kube-system", lease)
    lease.metadata.resource_version = stale
    lease.spec.holder_identity = "c"
    status, body = api_error(leases.replace_namespaced_lease, "fluxlite", "kube-system", lease)
    assert status == 409 and body["details"] == {
        "name": "fluxlite",
        "kind": "leases",
        "group": "coordination.k8s.io",
    }
    assert leases.read_namespaced_lease("fluxlite", "kube-system").spec.holder_identity == "b"


def test_api_server_in_a_child_process():
    """ApiServerProcess: the same server in its own process, with compact and request counts over HTTP."""
    with ApiServerProcess(bookmark_interval=1.0) as srv:
        v1 = client.CoreV1Api(srv.api_client())
        rv = v1.list_namespaced_pod("default").metadata.resource_version
        v1.create_namespaced_pod("default", pod_body("p1"))
        assert srv.compact() > int(rv)
        with pytest.raises(client.ApiException) as info:
            list(
                watch.Watch().stream(
                    v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
                )
            )
        assert info.value.status == 410
        counts = srv.request_counts()
        assert counts["create pods"] == 1 and counts["watch pods"] == 1
        proc = srv._proc
    assert proc.poll() == 0


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", ""]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=8,
)
_conditions = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["A", "B", "C"]), "status": st.sampled_from(["True", "False"])}
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    doc=st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3),
    patch=st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3),
)
def test_merge_patch_properties(doc, patch):
    """RFC 7386: applying a merge patch twice changes nothing more, and the input is never modified."""
    before = json.dumps(doc, sort_keys=True)
    once = merge_patch(doc, patch)
    assert merge_patch(once, patch) == once
    assert json.dumps(doc, sort_keys=True) == before
    for key, value in patch.items():
        assert (key not in once) if value is None else (key in once)


@settings(max_examples=60, deadline=None)
@given(old=_conditions, new=_conditions)
def test_strategic_merge_of_conditions_by_type(old, new):
    """Conditions merge by type: every patched type ends with the patched status, others are kept."""
    old = list({c["type"]: c for c in old}.values())
    new = list({c["type"]: c for c in new}.values())
    merged = strategic_merge_patch({"status": {"conditions": old}}, {"status": {"conditions": new}})[
        "status"
    ]["conditions"]
    by_type = {c["type"]: c["status"] for c in merged}
    assert len(by_type) == len(merged)
    assert by_type == {**{c["type"]: c["status"] for c in old}, **{c["type"]: c["status"] for c in new}}


def test_store_owner_index_follows_every_write() -> None:
    """The store's dependents / unowned-pods index (what the controllers read instead of listing
    every pod) agrees with a scan after creates, owner changes, adoption and deletes."""
    from kube.testing._store import Store

    store = Store()
    pods = resource("", "v1", "pods")

    def ref(uid: str, controller: bool = True) -> dict:
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": uid, "uid": uid, "controller": controller}

    def pod(name: str, *refs: dict) -> dict:
        return {"metadata": {"name": name, "ownerReferences": list(refs)}, "spec": {"containers": [{"name": "c", "image": "x"}]}}

    def scan(uid: str) -> list[str]:
        return [p["metadata"]["name"] for p in store.list(pods, None)[0]
                if any(r["uid"] == uid for r in p["metadata"].get("ownerReferences") or [])]  # fmt: skip

    def check() -> None:
        for uid in ("a", "b"):
            assert [p["metadata"]["name"] for p in store.dependents(pods, uid)] == scan(uid)
        free = [p["metadata"]["name"] for p in store.list(pods, "default")[0]
                if not any(r.get("controller") for r in p["metadata"].get("ownerReferences") or [])]  # fmt: skip
        assert [p["metadata"]["name"] for p in store.unowned_pods("default")] == free

    store.create(pods, "default", pod("p1", ref("a")))
    store.create(pods, "default", pod("p2", ref("a"), ref("b", controller=False)))
    store.create(pods, "default", pod("p3"))
    check()
    store.mutate(pods, "default", "p3", lambda p: {**p, "metadata": {**p["metadata"], "ownerReferences": [ref("b")]}})
    store.mutate(pods, "default", "p1", lambda p: {**p, "metadata": {**p["metadata"], "ownerReferences": []}})
    check()
    store.delete(pods, "default", "p2")
    check()
    assert [p["metadata"]["name"] for p in store.dependents(pods, "b")] == ["p3"]
    assert [p["metadata"]["name"] for p in store.unowned_pods("default")] == ["p1"]


def test_openapi_v2_protobuf_to_a_raw_client() -> None:
    """``/openapi/v2`` answers protobuf to a client that asks only for it (with the dotted media
    type kube-apiserver answers, which Go's mime parser accepts), JSON otherwise; the protobuf
    document starts with its swagger version and carries every definition's name."""
    from kube.testing._openapi import v2_document

    with ApiServer(tls=False) as srv:
        host, port = srv.url.split("//")[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        auth = {"Authorization": f"Bearer {srv.token}"}
        conn.request("GET", "/openapi/v2", headers={**auth, "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200
        assert resp.getheader("Content-Type") == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        assert body.startswith(b"\x0a\x032.0")  # field 1 (swagger), length 3, "2.0"
        names = orjson.loads(v2_document())["definitions"]
        assert all(name.encode() in body for name in names)
        conn.request("GET", "/openapi/v2", headers={**auth, "Accept": "application/json"})
        resp = conn.getresponse()
        assert orjson.loads(resp.read())["swagger"] == "2.0"
        conn.request("GET", "/openapi/v2", headers={**auth, "Accept": "text/plain"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 406
        conn.close()


def _raw_exchange(srv, data: bytes) -> bytes:
    """Send raw bytes over TLS and read the answer until the server closes or 15 s pass (a
    server waiting for a body that never comes answers nothing)."""
    import socket

    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
    with raw, _tls(srv).wrap_socket(raw, server_hostname="127.0.0.1") as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
                if b"\r\n\r\n" in out and b"Connection: close" not in out:
                    break
        except TimeoutError:
            pass
        return out


def test_body_is_not_read_before_authentication_and_is_bounded(server):
    """A caller with a wrong token is answered 401 without the server reading its body (a huge
    Content-Length, no body sent: the answer comes at once and the connection closes); an
    authenticated body over 3 MiB is 413 unread; a short body after a 401 is discarded and the
    keep-alive connection goes on."""
    pods = "/api/v1/namespaces/default/pods"
    out = _raw_exchange(server, f"POST {pods} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
                                "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n".encode())  # fmt: skip
    assert out.startswith(b"HTTP/1.1 401 ") and b"Connection: close" in out, out[:200]
    out = _raw_exchange(server, f"POST {pods} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
                                "Content-Type: application/json\r\nContent-Length: 4194304\r\n\r\n".encode())  # fmt: skip
    assert out.startswith(b"HTTP/1.1 413 ") and b"RequestEntityTooLarge" in out, out[:300]
    # the first create through HTTP builds the OpenAPI schemas (field validation): slow under load
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=60, context=_tls(server))
    try:
        body = orjson.dumps(pod_body("sneaky"))
        conn.request("POST", pods, body=body, headers={"Authorization": "Bearer wrong"})
        resp = conn.getresponse()
        assert resp.status == 401 and json.loads(resp.read())["reason"] == "Unauthorized"
        conn.request("POST", pods, body=body, headers={"Authorization": f"Bearer {server.token}"})
        resp = conn.getresponse()
        assert resp.status == 201 and json.loads(resp.read())["metadata"]["name"] == "sneaky"
    finally:
        conn.close()


def test_request_head_limits(server):
    """The header reader keeps http.server's limits and refuses ambiguous framing."""
    auth = f"Authorization: Bearer {server.token}\r\n"
    many = "".join(f"X-{i}: y\r\n" for i in range(101))
    for head, code in [
        (f"GET /version HTTP/1.1\r\n{many}\r\n", b"431"),
        (f"GET /version HTTP/1.1\r\nX: {'y' * 70000}\r\n\r\n", b"431"),
        (f"POST /api/v1/namespaces/default/pods HTTP/1.1\r\n{auth}Content-Length: 2\r\nContent-Length: 9\r\n\r\n{{}}",
         b"400"),
        ("GET /version HTTP/2.0\r\n\r\n", b"505"),
        ("GET /version\r\n\r\n", b"400"),
        ("GET /version HTTP/1.1\r\nno colon here\r\n\r\n", b"400"),
        (f"GET /version HTTP/1.1\r\n{auth}x-custom: 1\r\n\r\n", b"200"),
    ]:  # fmt: skip
        out = _raw_exchange(server, head.encode())
        assert out[9:12] == code, (head[:60], out[:120])


def test_controller_events_pass_client_gos_spam_filter(server, v1, apps):
    """A ReplicaSet creating 40 pods records 25 SuccessfulCreate Events (client-go's spam
    filter: a burst of 25 per source and object), not 40."""
    rs = {
        "metadata": {"name": "many"},
        "spec": {
            "replicas": 40,
            "selector": {"matchLabels": {"app": "many"}},
            "template": {"metadata": {"labels": {"app": "many"}}, "spec": pod_body("x")["spec"]},
        },
    }
    apps.create_namespaced_replica_set("default", rs)
    wait_for(lambda: len(v1.list_namespaced_pod("default", label_selector="app=many").items) == 40)
    wait_for(lambda: apps.read_namespaced_replica_set("many", "default").status.replicas == 40)
    events = v1.list_namespaced_event("default", field_selector="involvedObject.name=many").items
    assert len(events) == 25 and {e.reason for e in events} == {"SuccessfulCreate"}
