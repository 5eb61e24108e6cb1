"""The shared core: graph from Nodes, pod requests, allocate/grow/shrink per pod, gangs."""

from __future__ import annotations

import orjson
import pytest

from fluxlite.check import recount_errors
from fluxlite.errors import BusyError, InputError, UnsatisfiableError
from kube import KubeConfig, KubeCore, PodRequest, node_info, pod_constraint, pod_group, pod_request
from kube.objects import node_object, pod_object

CFG = KubeConfig()


def _core(n: int = 3, **kw: object) -> KubeCore:
    return KubeCore(CFG, [node_info(node_object(f"n{i}", **kw), CFG) for i in range(n)])  # type: ignore[arg-type]


def _state(core: KubeCore) -> dict[str, object]:
    """The engine's whole state (graph, jobs and their vertices) minus the job-id counter."""
    doc = orjson.loads(core.engine.save_state())
    doc.pop("next_jobid")
    return doc


def test_graph_shape_from_nodes() -> None:
    """cluster -> zone -> node -> one core per CPU, one memory vertex per GiB, one gpu per GPU."""
    core = KubeCore(CFG, [node_info(node_object("a", cpu="4", memory="8Gi", gpus=2, zone="z1"), CFG)])
    g = core.engine.graph
    assert core.node_path["a"] == "/cluster0/z1/a"
    types = [g.v_type[v] for v in g.subtree(g.vertex_by_path("/cluster0/z1/a"), "containment")]
    assert types.count("core") == 4 and types.count("memory") == 8 and types.count("gpu") == 2
    props = g.properties(g.vertex_by_path("/cluster0/z1/a"))
    assert props["topology.kubernetes.io/zone"] == "z1" and "kubernetes.io/hostname=a" in props


def test_quantities_round_as_the_graph_units() -> None:
    """Fractional CPU is rounded up to a core, memory up to the unit; capacity is rounded down."""
    info = node_info(node_object("a", cpu="3500m", memory="16318536Ki"), CFG)
    assert info.cores == 3 and info.memory == 15
    pod = pod_object("p", cpu="250m", memory="1500Mi")
    req = pod_request(pod, CFG)
    assert (req.cores, req.memory) == (1, 2)
    with pytest.raises(InputError, match="not a Kubernetes quantity"):
        pod_request(pod_object("p", cpu="lots"), CFG)


def test_pod_request_sums_containers_and_takes_the_init_maximum() -> None:
    """Sum of containers vs the largest init container (sidecars added), plus overhead."""
    pod = pod_object("p", cpu="1", memory="1Gi")
    pod["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "2"}}})
    pod["spec"]["initContainers"] = [
        {"name": "i1", "resources": {"requests": {"cpu": "5"}}},
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
    ]
    assert pod_request(pod, CFG).cores == 5  # max(1+2+1 sidecar, 5)
    pod["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = "2"
    pod["spec"]["overhead"] = {"cpu": "500m"}
    assert pod_request(pod, CFG).cores == 5  # 1 + 2 + 1 + 0.5 -> 5


def test_groups_by_owner_label_or_pod() -> None:
    """ReplicaSet / Job owners and the gang label decide the job; a bare pod is its own."""
    assert (
        pod_group(pod_object("p", owner=("ReplicaSet", "web-5d4")), CFG).key == "ReplicaSet/default/web-5d4"
    )
    assert pod_group(pod_object("p", owner=("Job", "train")), CFG).key == "Job/default/train"
    g = pod_group(pod_object("p", labels={CFG.group_label: "g1", CFG.min_member_label: "4"}), CFG)
    assert (g.key, g.min_member) == ("PodGroup/default/g1", 4)
    assert pod_group(pod_object("solo"), CFG).key == "Pod/default/solo"
    with pytest.raises(InputError, match="not an integer"):
        pod_group(pod_object("p", labels={CFG.group_label: "g", CFG.min_member_label: "x"}), CFG)


def test_first_pod_allocates_then_replicas_grow_the_same_job() -> None:
    """One job per group: MatchAllocate once, MatchGrow for every further replica."""
    core = _core(2, cpu="4", memory="8Gi")
    req = pod_request(pod_object("p"), CFG)
    placed = [core.place(f"p{i}", "rs", req) for i in range(6)]
    assert [p.grew for p in placed] == [False] + [True] * 5
    assert len({p.jobid for p in placed}) == 1 and list(core.engine.jobs) == [placed[0].jobid]
    assert [p.node for p in placed] == ["n0"] * 4 + ["n1"] * 2  # packed (policy low), next to the others
    assert recount_errors(core.engine) == []


def test_release_shrinks_exactly_the_pods_vertices() -> None:
    """A deleted pod frees its own cores and memory; the rest of the job stays; the last one ends the job."""
    core = _core(1, cpu="4", memory="8Gi")
    req = pod_request(pod_object("p", cpu="2", memory="3Gi"), CFG)
    a = core.place("a", "rs", req)
    b = core.place("b", "rs", req)
    with pytest.raises(BusyError):
        core.place("c", "rs", req)
    assert core.release("a")
    c = core.place("c", "rs", req)
    assert {p for p, _n, x in c.items if x} == {p for p, _n, x in a.items if x}
    assert b.jobid == c.jobid and recount_errors(core.engine) == []
    core.release("b")
    core.release("c")
    assert core.engine.jobs == {} and core.groups == {} and recount_errors(core.engine) == []
    assert not core.release("c")  # idempotent


def test_busy_and_unsatisfiable_are_told_apart_and_change_nothing() -> None:
    """No free room: BusyError; no node big enough (or matching): UnsatisfiableError; state unchanged."""
    core = _core(2, cpu="4", memory="8Gi")
    core.place("x", "rs", pod_request(pod_object("x", cpu="4"), CFG))
    core.place("y", "rs", pod_request(pod_object("y", cpu="4"), CFG))
    before = _state(core)
    with pytest.raises(BusyError):
        core.place("z", "rs", pod_request(pod_object("z", cpu="1"), CFG))
    with pytest.raises(UnsatisfiableError):
        core.place("w", "other", pod_request(pod_object("w", cpu="64"), CFG))
    with pytest.raises(UnsatisfiableError):
        core.place("v", "other", pod_request(pod_object("v"), CFG), {"properties": ["disk=nvme"]})
    assert _state(core) == before and "other" not in core.groups


def test_node_selector_and_affinity_become_constraints() -> None:
    """nodeSelector / required node affinity (In, NotIn, Exists, Gt) choose the nodes."""
    nodes = [
        node_info(node_object("a", labels={"disk": "ssd", "gen": "3"}), CFG),
        node_info(node_object("b", labels={"disk": "hdd", "gen": "5"}), CFG),
    ]
    core = KubeCore(CFG, nodes)
    req = pod_request(pod_object("p"), CFG)
    sel = pod_constraint(pod_object("p", node_selector={"disk": "hdd"}), core.nodes)
    assert core.place("p1", "g1", req, sel).node == "b"
    pod = pod_object("p")
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}]},
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["nvme"]}]},
                ]
            }
        }
    }
    assert core.place("p2", "g2", req, pod_constraint(pod, core.nodes)).node == "a"
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]}]
    }
    assert core.place("p3", "g3", req, pod_constraint(pod, core.nodes)).node == "b"


def test_taints_keep_untolerating_pods_away() -> None:
    """A NoSchedule taint excludes a node unless the pod tolerates it."""
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    core = KubeCore(CFG, [node_info(node_object("t", taints=taint), CFG)])
    req = pod_request(pod_object("p"), CFG)
    with pytest.raises(UnsatisfiableError):
        core.place("p", "g", req, pod_constraint(pod_object("p"), core.nodes, core.taint_keys()))
    pod = pod_object("q")
    pod["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    assert core.place("q", "g", req, pod_constraint(pod, core.nodes, core.taint_keys())).node == "t"


def test_gang_is_all_or_nothing() -> None:
    """A gang that does not fit leaves nothing behind; one that fits is placed whole."""
    core = _core(2, cpu="4", memory="8Gi")
    core.place("other", "rs", pod_request(pod_object("o", cpu="3"), CFG))
    before = _state(core)
    req = pod_request(pod_object("m", cpu="2"), CFG)
    with pytest.raises(BusyError):
        core.place_gang([f"m{i}" for i in range(3)], "gang", req)
    assert (
        _state(core) == before and "gang" not in core.groups and not any(k.startswith("m") for k in core.pods)
    )
    placed = core.place_gang(["m0", "m1"], "gang", req)
    assert len({p.jobid for p in placed}) == 1 and recount_errors(core.engine) == []


def test_nodes_added_cordoned_and_removed_without_rebuild() -> None:
    """attach / set-status / remove_subgraph: the engine object and the other jobs stay."""
    core = _core(1, cpu="2", memory="4Gi")
    eng = core.engine
    req = pod_request(pod_object("p", cpu="2"), CFG)
    core.place("p0", "rs", req)
    with pytest.raises(BusyError):
        core.place("p1", "rs", req)
    core.add_node(node_info(node_object("n9", cpu="2", memory="4Gi", zone="zone-b"), CFG))
    assert core.engine is eng and core.place("p1", "rs", req).node == "n9"
    assert (
        core.update_node(node_info(node_object("n0", cpu="2", memory="4Gi", unschedulable=True), CFG))
        == "status"
    )
    core.release("p0")
    with pytest.raises(BusyError):  # n0 is cordoned: free but down
        core.place("p2", "rs", req)
    assert core.remove_node("n9") == ["p1"]
    assert core.engine.graph.vertex_by_path("/cluster0/zone-b") is None  # the empty zone went too
    assert core.engine.jobs == {} and recount_errors(eng) == []


def test_foreign_pods_reduce_the_graph() -> None:
    """A pod another scheduler bound is accounted on its node; ours never double-book it."""
    core = _core(1, cpu="4", memory="8Gi")
    core.account("kube-system/dns", "n0", pod_request(pod_object("d", cpu="3"), CFG))
    with pytest.raises(BusyError):
        core.place("p", "rs", pod_request(pod_object("p", cpu="2"), CFG))
    core.release("kube-system/dns")
    assert core.place("p", "rs", pod_request(pod_object("p", cpu="2"), CFG)).node == "n0"


def test_restore_rebuilds_a_group_from_records() -> None:
    """Bind-time records rebuild the same allocation in a fresh core; new replicas land next to them."""
    core = _core(3, cpu="4", memory="8Gi")
    req = pod_request(pod_object("p"), CFG)
    recs = {}
    for i in range(5):
        pl = core.place(f"p{i}", "rs", req)
        recs[f"p{i}"] = pl.record(core.node_path[pl.node])
    fresh = _core(3, cpu="4", memory="8Gi")
    for k, rec in recs.items():
        fresh.restore(k, "rs", rec)
    assert len(fresh.engine.jobs) == 1 and recount_errors(fresh.engine) == []
    assert fresh.place("p5", "rs", req).node == core.place("p5", "rs", req).node == "n1"
    bad = dict(recs["p0"], own=[["core99", 1, 1]])
    with pytest.raises(InputError):
        fresh.restore("q", "rs", bad)


def test_whole_node_annotation_takes_the_node_exclusively() -> None:
    """``fluxlite.io/policy: node`` asks for a whole node; its release frees all of it."""
    core = _core(2, cpu="4", memory="8Gi")
    whole = pod_request(pod_object("w", annotations={CFG.policy_annotation: "node"}), CFG)
    assert whole.exclusive_node
    pl = core.place("w", "g", whole)
    small = pod_request(pod_object("s", cpu="1"), CFG)
    assert core.place("s", "h", small).node != pl.node  # nothing else fits on a node held whole
    core.release("s")
    with pytest.raises(BusyError):  # pinned to the node held whole: busy, though the other node is free
        core.place("s2", "h", small, {"hostlist": [pl.node]})
    core.release("w")
    assert core.place("s3", "h", small, {"hostlist": [pl.node]}).node == pl.node
    assert recount_errors(core.engine) == []


def test_ephemeral_storage_is_a_graph_resource() -> None:
    """A node's allocatable ephemeral-storage becomes storage vertices (1 GiB each); pods that ask for it
    take them, and a pod that needs more than is left is busy, more than the node has never fits."""
    node = node_object("a", cpu="8")
    node["status"]["allocatable"]["ephemeral-storage"] = "10Gi"
    info = node_info(node, CFG)
    assert info.storage == 10 and info.max_pods == 110
    core = KubeCore(CFG, [info])
    pod = pod_object("p", cpu="1")
    pod["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "6Gi"
    req = pod_request(pod, CFG)
    assert req.storage == 6
    core.place("default/p1", "g1", req)
    assert core.free("a")["storage"] == 4
    before = _state(core)
    with pytest.raises(BusyError):
        core.place("default/p2", "g2", req)
    assert _state(core) == before
    pod["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "11Gi"
    with pytest.raises(UnsatisfiableError):
        core.place("default/p3", "g3", pod_request(pod, CFG))
    assert recount_errors(core.engine) == []


def test_candidates_are_the_first_fitting_nodes_and_the_cursor_moves_back() -> None:
    """A pod's candidates: the first nodes in node order with its units free (the engine's
    aggregates), skipping cordoned and constraint-failing ones; a node with no core left is
    passed over for good until a pod leaves it.  Placements go through them (narrowed)."""
    core = _core(6, cpu="2", memory="4Gi")
    req = PodRequest(cores=1, memory=1)
    js = core.jobspec(req, None)
    assert core.candidates(req, js, limit=3) == ["n0", "n1", "n2"]
    for i in range(4):  # n0 and n1 full
        assert core.place(f"p{i}", "g", req).node == ("n0" if i < 2 else "n1")
    assert core.narrowed == [2, 0]  # p0 and p2: the grow tries the group's nodes first
    assert core.candidates(req, js, limit=2) == ["n2", "n3"] and core._cursor == 2
    assert core.candidates(PodRequest(cores=3, memory=1), js) == []  # fits no node
    core.update_node(node_info(node_object("n2", cpu="2", memory="4Gi", unschedulable=True), CFG))
    assert core.candidates(req, js, limit=2) == ["n3", "n4"]
    sel = core.jobspec(req, {"hostlist": ["n5"]})
    assert core.candidates(req, sel) == ["n5"]
    core.release("p0")  # room on n0 again
    assert core._cursor == 0 and core.candidates(req, js, limit=1) == ["n0"]
    assert core.place("p9", "g", req).node == "n0"
    core.narrow = False
    assert core.candidates(req, js) == []
    assert recount_errors(core.engine) == []
