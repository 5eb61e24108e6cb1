"""hwloc-derived graphs: where hwloc puts objects decides which jobspecs Fluxion matches (issue 6, §1).

The topologies are written here in the shapes of real machines (a POWER9
node in hwloc v1 XML with GPUs behind PCI bridges and CPU-less GPU-memory
NUMA nodes; a single-NUMA v1 node; an AMD node in v2 XML whose L3 caches
split each package), then loaded with ``-f hwloc`` and ``-W``.  What is
asserted follows from Fluxion's reader (resource_reader_hwloc.cpp walks
the tree hwloc 2 builds: normal, memory, I/O children) and its matcher
(after the first match a jobspec must follow the graph level by level;
siblings of one type are refused).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fluxlite.api import Engine
from fluxlite.readers import load_graph
from tests.fluxlite.repl_helpers import Session, outcome, state, write_jobspec

POLICIES = ["first", "low", "high", "lonode", "hinode", "locality", "firstnodex"]


def cs(bits: int) -> str:
    """An hwloc bitmap string: 32-bit hex words, most significant first."""
    words = []
    while True:
        words.append(bits & 0xFFFFFFFF)
        bits >>= 32
        if not bits:
            break
    return ",".join(f"0x{w:08x}" for w in reversed(words))


def sets(lo: int, n: int, node: int | None = None) -> str:
    cpus = cs(((1 << n) - 1) << lo) if n else "0x0"
    nodes = cs(1 << node) if node is not None else "0x0"
    return f'cpuset="{cpus}" complete_cpuset="{cpus}" nodeset="{nodes}" complete_nodeset="{nodes}"'


def cores(lo: int, ncores: int, pus: int = 2) -> str:
    out = []
    for c in range(ncores):
        base = lo + c * pus
        p = "".join(f'<object type="PU" os_index="{base + k}" {sets(base + k, 1)}/>' for k in range(pus))
        out.append(f'<object type="Core" os_index="{lo // pus + c}" {sets(base, pus)}>{p}</object>')
    return "".join(out)


def gpus(first: int, n: int) -> str:
    devs = "".join(
        f'<object type="PCIDev" pci_busid="0004:0{first + k}:00.0" pci_type="0302 [10de:1db1] [10de:1212] a1">'
        f'<object type="OSDev" name="card{first + k}" osdev_type="1"/>'
        f'<object type="OSDev" name="cuda{first + k}" osdev_type="5"/></object>'
        for k in range(n)
    )
    return f'<object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0004:[00-0a]">{devs}</object>'


def power9_v1(host: str = "sierra7") -> str:
    """v1 XML shaped like a POWER9 node: Group > NUMANode > Group > Socket (+ GPUs), GPU-memory NUMA nodes."""
    half = 8  # PUs per socket (4 cores x 2)
    socks = "".join(
        f'<object type="NUMANode" os_index="{s}" {sets(s * half, half, s)} local_memory="1000">'
        f'<object type="Group" {sets(s * half, half, s)} depth="1">'
        f'<object type="Socket" os_index="{s}" {sets(s * half, half, s)}>{cores(s * half, 4)}</object>'
        f"{gpus(2 * s, 2)}</object></object>"
        for s in range(2)
    )
    gpumem = "".join(
        f'<object type="NUMANode" os_index="{250 + k}" {sets(0, 0, 250 + k)} local_memory="16">'
        f'<object type="Group" {sets(0, 0, 250 + k)} depth="1"/></object>'
        for k in range(2)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc.dtd">\n<topology>'
        f'<object type="Machine" os_index="0" {sets(0, 2 * half)}><info name="HostName" value="{host}"/>'
        f'<object type="Group" {sets(0, 2 * half)} depth="0">{socks}</object>{gpumem}</object></topology>'
    )


def one_numa_v1(host: str = "quartz3") -> str:
    """v1 XML of a 2-socket node with one NUMA node spanning it (the NUMA node is the sockets' parent)."""
    socks = "".join(
        f'<object type="Socket" os_index="{s}" {sets(s * 8, 8, 0)}>{cores(s * 8, 4)}</object>'
        for s in range(2)
    )
    return (
        "<topology>"
        f'<object type="Machine" os_index="0" {sets(0, 16, 0)}><info name="HostName" value="{host}"/>'
        f'<object type="NUMANode" os_index="0" {sets(0, 16, 0)} local_memory="1000">{socks}</object>'
        "</object></topology>"
    )


def amd_v2(host: str = "corona5") -> str:
    """v2 XML: each package has two L3 caches (4 cores each); a GPU behind a bridge of the machine."""

    def l3(lo: int, idx: int) -> str:
        c = "".join(
            f'<object type="L2Cache" cache_size="524288" depth="2" cache_type="0" {sets(lo + 2 * k, 2)}>'
            f'<object type="L1Cache" cache_size="32768" depth="1" cache_type="1" {sets(lo + 2 * k, 2)}>'
            f"{cores(lo + 2 * k, 1)}</object></object>"
            for k in range(4)
        )
        return f'<object type="L3Cache" cache_size="16777216" depth="3" cache_type="0" {sets(lo, 8)}>{c}</object>'

    pkgs = "".join(
        f'<object type="Package" os_index="{p}" {sets(p * 16, 16, p)}>{l3(p * 16, 2 * p)}{l3(p * 16 + 8, 2 * p + 1)}'
        f'<object type="NUMANode" os_index="{p}" {sets(p * 16, 16, p)} local_memory="1000"/></object>'
        for p in range(2)
    )
    gpu = (
        '<object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[00-04]">'
        '<object type="PCIDev" pci_busid="0000:03:00.0" pci_type="0302 [1002:66a1] [1002:0834] 01">'
        '<object type="OSDev" name="rsmi0" osdev_type="1"/></object></object>'
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n<topology version="2.0">'
        f'<object type="Machine" os_index="0" {sets(0, 32, 0)}><info name="HostName" value="{host}"/>'
        f"{pkgs}{gpu}</object></topology>"
    )


def tree(text: str, allow: str) -> dict[str, str]:
    """Path -> type of every vertex loaded with ``-W allow``."""
    g = load_graph(text, format="hwloc", allowlist=allow)
    return {g.path(v): g.v_type[v] for v in g.vertices()}


def session(tmp_path: Path, text: str, allow: str, policy: str = "high") -> Session:
    xml = tmp_path / "topo.xml"
    xml.write_text(text)
    return Session(Engine.from_file(xml, format="hwloc", allowlist=allow, policy=policy))


# ---------------------------------------------------------------------------- jobspecs
SOCKET_CORES_GPUS = """  - type: node
    count: 1
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 4
              - type: gpu
                count: 2"""
NODE_GPU = """  - type: slot
    count: 1
    label: default
    with:
      - type: node
        count: 1
        with:
          - type: gpu
            count: 1"""
NODE_SOCKET_CORE = """  - type: node
    count: 1
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 2"""
SIBLING_SOCKETS = """  - type: slot
    count: 1
    label: default
    with:
      - type: node
        count: 1
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 1
          - type: socket
            count: 1
            with:
              - type: core
                count: 1"""
SIBLING_CORES = """  - type: slot
    count: 1
    label: default
    with:
      - type: node
        count: 1
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 1
              - type: core
                count: 1"""


# ---------------------------------------------------------------------------- reader
def test_v1_gpus_move_to_the_socket_with_their_group() -> None:
    """v1 Group > NUMANode > Group > Socket: the Groups go and the GPUs behind them land under the socket."""
    got = tree(power9_v1(), "node,socket,core,gpu")
    assert got["/cluster0/sierra7/socket0/gpu0"] == "gpu"
    assert got["/cluster0/sierra7/socket1/gpu3"] == "gpu"
    assert got["/cluster0/sierra7/socket1/core7"] == "core"
    assert Counter(got.values()) == {"cluster": 1, "node": 1, "socket": 2, "core": 8, "gpu": 4}


def test_v1_numa_nodes_become_memory_children() -> None:
    """A v1 NUMA node is no longer a level: a single one spanning the node hangs below it as a leaf."""
    got = tree(one_numa_v1(), "node,socket,core,numanode")
    assert got["/cluster0/quartz3/socket1/core7"] == "core"
    assert got["/cluster0/quartz3/numanode0"] == "numanode"
    assert not any(p.startswith("/cluster0/quartz3/numanode0/") for p in got)


def test_v2_caches_that_split_a_package_stay_when_allowlisted() -> None:
    """L3 caches shared by 4 of 8 cores bring structure: -W ...,L3cache keeps them between socket and core."""
    got = tree(amd_v2(), "node,socket,core,L3cache,L2cache")
    assert got["/cluster0/corona5/socket0/L3cache1/core7"] == "core"
    # one L2 per core brings no structure: hwloc drops that level whatever -W says
    assert "cache" not in {t for p, t in got.items() if "L2cache" in p}
    assert not any("L2cache" in p for p in got)
    assert tree(amd_v2(), "node,socket,core")["/cluster0/corona5/socket1/core15"] == "core"


def test_node_rank_without_a_given_rank() -> None:
    """As Fluxion's reader: the node gets rank 0, everything else in a rank-less load keeps -1."""
    g = load_graph(one_numa_v1(), format="hwloc", allowlist="node,socket,core")
    ranks = {g.v_type[v]: g.v_rank[v] for v in g.vertices()}
    assert ranks == {"cluster": -1, "node": 0, "socket": -1, "core": -1}


# ---------------------------------------------------------------------------- matching
@pytest.mark.parametrize("policy", POLICIES)
def test_socket_with_cores_and_gpus_fills_both_sockets(tmp_path: Path, policy: str) -> None:
    """node > slot > socket > {core[4], gpu[2]} fits each socket once, then nothing is left."""
    sess = session(tmp_path, power9_v1(), "node,socket,core,gpu", policy)
    js = write_jobspec(tmp_path / "j.yaml", SOCKET_CORES_GPUS)
    first, _, _ = sess.run(f"match allocate {js}")
    second, _, _ = sess.run(f"match allocate {js}")
    third, _, _ = sess.run(f"match allocate {js}")
    assert outcome(first) == ("ALLOCATED", 1, "Now")
    if policy.endswith("nodex"):
        # node-exclusive: the first job holds the only node
        assert outcome(second) == ("FAILED", 2, "") and outcome(third) == ("FAILED", 3, "")
    else:
        assert outcome(second) == ("ALLOCATED", 2, "Now") and outcome(third) == ("FAILED", 3, "")
    if policy.endswith("nodex"):
        return
    held = {sess.engine.graph.path(v) for v in sess.engine.traverser.job_vertices(1)}
    sock = next(p for p in held if p.endswith(("socket0", "socket1")))
    assert {p for p in held if "gpu" in p} == {
        f"{sock}/gpu{k}" for k in ((0, 1) if sock[-1] == "0" else (2, 3))
    }


@pytest.mark.parametrize("policy", POLICIES)
def test_gpu_below_the_socket_is_not_a_child_of_the_node(tmp_path: Path, policy: str) -> None:
    """slot > node > gpu: the node matched, so the next level must be gpu; hwloc put the GPUs under sockets."""
    sess = session(tmp_path, power9_v1(), "node,socket,core,gpu", policy)
    js = write_jobspec(tmp_path / "j.yaml", NODE_GPU)
    before = state(sess.engine)
    out, _, _ = sess.run(f"match allocate_with_satisfiability {js}")
    assert out.splitlines()[1:3] == ["INFO: No matching resources found", "INFO: Unsatisfiable request"]
    assert state(sess.engine) == before
    # where hwloc attached the GPU to the machine, the same request matches
    sess2 = session(tmp_path, amd_v2(), "node,socket,core,gpu", policy)
    out, _, _ = sess2.run(f"match allocate {js}")
    assert outcome(out) == ("ALLOCATED", 1, "Now") and "gpu0[1:x]" in out


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("allow", "ok"), [("node,socket,core", True), ("node,socket,core,L3cache", False)])
def test_allowlist_decides_whether_a_level_is_skipped(
    tmp_path: Path, policy: str, allow: str, ok: bool
) -> None:
    """node > socket > core matches when -W leaves out the L3 level, and never when the L3 level is loaded."""
    sess = session(tmp_path, amd_v2(), allow, policy)
    js = write_jobspec(tmp_path / "j.yaml", NODE_SOCKET_CORE)
    out, _, _ = sess.run(f"match allocate {js}")
    sat, _, _ = sess.run(f"match satisfiability {js}")
    if ok:
        assert outcome(out) == ("ALLOCATED", 1, "Now") and "Satisfiable request" in sat
    else:
        assert outcome(out) == ("FAILED", 1, "") and "Unsatisfiable request" in sat
        assert sess.engine.jobs == {}


ALL_POLICIES = [*POLICIES, "lonodex", "hinodex", "variation"]


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_sibling_sockets_are_refused(tmp_path: Path, policy: str) -> None:
    """Two socket requests side by side under one node are refused, as Fluxion's match() does."""
    sess = session(tmp_path, one_numa_v1(), "node,socket,core", policy)
    js = write_jobspec(tmp_path / "j.yaml", SIBLING_SOCKETS)
    out, _, _ = sess.run(f"match allocate {js}")
    assert outcome(out) == ("FAILED", 1, "") and sess.engine.jobs == {}


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_sibling_cores_are_refused(tmp_path: Path, policy: str) -> None:
    """socket > {core[1], core[1]}: siblings of one type are refused (Fluxion's sibling test 003)."""
    sess = session(tmp_path, one_numa_v1(), "node,socket,core", policy)
    js = write_jobspec(tmp_path / "j.yaml", SIBLING_CORES)
    before = state(sess.engine)
    out, _, _ = sess.run(f"match allocate {js}")
    assert outcome(out) == ("FAILED", 1, "")
    assert state(sess.engine) == before
