"""Tests of the hwloc reader on a small hand-written hwloc v2 topology."""

from __future__ import annotations

import pytest

from fluxlite.errors import GraphFormatError
from fluxlite.readers import load_graph
from fluxlite.readers.hwloc import HwlocReader


def _package(os_index: int) -> str:
    cores = "".join(
        f'<object type="L2Cache" cache_size="262144" depth="2" cache_type="0">'
        f'<object type="L1Cache" cache_size="32768" depth="1" cache_type="1">'
        f'<object type="Core" os_index="{2 * os_index + c}">'
        f'<object type="PU" os_index="{4 * os_index + 2 * c}"/><object type="PU" os_index="{4 * os_index + 2 * c + 1}"/>'
        f"</object></object></object>"
        for c in range(2)
    )
    return (
        f'<object type="Package" os_index="{os_index}">'
        f'<object type="L3Cache" cache_size="8388608" depth="3" cache_type="0">{cores}</object></object>'
    )


def topology(host: str = "fluke7") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'
        '<topology version="2.0"><object type="Machine" os_index="0">'
        f'<info name="HostName" value="{host}"/>'
        f"{_package(0)}{_package(1)}"
        '<object type="NUMANode" os_index="0" local_memory="1000"/>'
        '<object type="Bridge"><object type="PCIDev">'
        '<object type="OSDev" name="cuda0" osdev_type="5"/></object>'
        '<object type="PCIDev"><object type="OSDev" name="sda" osdev_type="0">'
        '<info name="Size" value="500107608"/><info name="LinuxDeviceID" value="8:0"/></object></object>'
        "</object></object></topology>"
    )


def test_hwloc_topology_becomes_node_subtree() -> None:
    """Machine/Package/Core/PU/NUMANode/coproc/block map to Fluxion's types, depth first."""
    g = HwlocReader().load(topology(), rank=3)
    names = [g.v_name[v] for v in g.vertices()]
    assert names == [
        "cluster0",
        "fluke7",
        "socket0",
        "core0",
        "pu0",
        "pu1",
        "core1",
        "pu2",
        "pu3",
        "socket1",
        "core2",
        "pu4",
        "pu5",
        "core3",
        "pu6",
        "pu7",
        "numanode0",
        "gpu0",
        "storage1",
    ]
    node = g.vertex_by_path("/cluster0/fluke7")
    assert node is not None and (g.v_type[node], g.v_id[node], g.v_basename[node], g.v_rank[node]) == (
        "node",
        7,
        "fluke",
        3,
    )
    disk = g.vertex_by_path("/cluster0/fluke7/storage1")
    assert disk is not None and g.v_size[disk] == 500 and g.properties(disk) == {"LinuxDeviceID": "8:0"}
    assert g.v_rank[g.roots["containment"]] == -1
    assert {g.v_rank[v] for v in g.vertices()} == {-1, 3}


def test_allowlist_filters_types_and_reparents() -> None:
    """With -W core,gpu only those types stay; they hang from the nearest kept ancestor."""
    g = load_graph(topology(), format="hwloc", allowlist="core,gpu")
    root = g.roots["containment"]
    assert [g.v_name[c] for c in g.children(root)] == ["core0", "core1", "core2", "core3", "gpu0"]
    assert g.types() == {"cluster": 1, "core": 4, "gpu": 1}


def test_allowlist_keeps_caches_by_level_name() -> None:
    """Cache kinds are allowlisted as L1cache/L2cache/L3cache (kept only if they bring structure)."""
    g = load_graph(topology(), format="hwloc", allowlist=["node", "socket", "L3cache"])
    assert g.types() == {"cluster": 1, "node": 1, "socket": 2}


def test_several_ranks_attach_under_one_cluster() -> None:
    """Loading a second rank's topology into the graph attaches it under the same cluster."""
    r = HwlocReader()
    g = r.load(topology("fluke7"), rank=0)
    r.load(topology("fluke8"), g, rank=1)
    root = g.roots["containment"]
    assert [g.v_name[c] for c in g.children(root)] == ["fluke7", "fluke8"]
    assert g.v_rank[g.vertex_by_path("/cluster0/fluke8/socket1/core3/pu7")] == 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<topology><object type='Machine'>", "malformed XML"),
        ("<graphml/>", "not an hwloc topology"),
        ("<topology><object/></topology>", "<object> without a type"),
        (
            topology().replace('<info name="Size" value="500107608"/>', ""),
            'OSDev "sda": block device without a Size',
        ),
    ],
    ids=["malformed", "not hwloc", "no type", "no size"],
)
def test_bad_hwloc_xml(text: str, expected: str) -> None:
    """Malformed topologies raise one GraphFormatError line naming the element."""
    with pytest.raises(GraphFormatError) as info:
        load_graph(text, format="hwloc")
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_hwloc_graph_round_trips_through_jgf() -> None:
    """An hwloc-built graph (with properties) round-trips through JGF."""
    from fluxlite.readers import graph_to_jgf

    g = HwlocReader().load(topology(), rank=0)
    g2 = load_graph(graph_to_jgf(g), format="jgf")
    assert [g2.vertex_dict(v) for v in g2.vertices()] == [g.vertex_dict(v) for v in g.vertices()]
