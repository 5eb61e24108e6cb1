"""Tests of the readers package surface: registry, load_graph, allowlist, generate."""

from __future__ import annotations

import pytest

from fluxlite.errors import GraphFormatError, InputError
from fluxlite.graph import ResourceGraph
from fluxlite.readers import (
    READERS,
    AllowlistIgnoredWarning,
    Reader,
    generate_graph,
    get_reader,
    graph_to_jgf,
    known_format,
    load_graph,
    parse_allowlist,
    register,
)
from tests.conftest import BENCH, need


def test_registry_has_fluxion_format_names() -> None:
    """The built-in readers are registered under Fluxion's -f names and satisfy the protocol."""
    assert {"grug", "jgf", "rv1exec", "hwloc"} <= set(READERS)
    for name in ("grug", "jgf", "rv1exec", "hwloc"):
        reader = get_reader(name)
        assert isinstance(reader, Reader) and reader.name == name
    assert known_format("jgf") and not known_format("xml")


def test_register_refuses_duplicates() -> None:
    """register() refuses a name that is already taken."""
    with pytest.raises(ValueError, match="already registered"):
        register("grug", READERS["grug"])


def test_unknown_format_is_an_error() -> None:
    """load_graph with an unknown format names the known ones."""
    with pytest.raises(GraphFormatError, match="unknown load format 'xml'"):
        load_graph("{}", format="xml")


def test_load_graph_accepts_path_text_and_bytes() -> None:
    """A path, its text and its bytes load the same graph."""
    path = need(BENCH / "graphs" / "L4.graphml")
    a = load_graph(path)
    b = load_graph(path.read_text())
    c = load_graph(path.read_bytes())
    d = load_graph(str(path))
    assert graph_to_jgf(a) == graph_to_jgf(b) == graph_to_jgf(c) == graph_to_jgf(d)


def test_allowlist_parsing() -> None:
    """-W lists drop empty entries and always include the cluster."""
    assert parse_allowlist(None) is None
    assert parse_allowlist(" , ") is None
    assert parse_allowlist("core,,gpu") == {"cluster", "core", "gpu"}
    assert parse_allowlist(["node"]) == {"cluster", "node"}


def test_allowlist_ignored_by_grug_like_fluxion() -> None:
    """Readers without allowlist support warn and load every type, as Fluxion does."""
    path = need(BENCH / "graphs" / "L4.graphml")
    with pytest.warns(AllowlistIgnoredWarning):
        g = load_graph(path, allowlist="core")
    assert g.types() == {"cluster": 1, "node": 1, "socket": 2, "core": 32}


def test_generate_equals_grug_l0() -> None:
    """generate_graph(nodes=128) is the GRUG L0 graph, byte for byte as JGF."""
    g = generate_graph(nodes=128)
    assert graph_to_jgf(g) == need(BENCH / "jgf" / "L0.json").read_bytes()


def test_generate_with_racks_gpus_memory() -> None:
    """Racks, gpus and memory follow GRUG naming, ids, ranks and units."""
    g = generate_graph(
        racks=2, nodes=2, sockets=2, cores=2, gpus=1, memory=2, memory_unit="GB", cluster="tiny"
    )
    assert g.v_name[g.roots["containment"]] == "tiny0"
    node3 = g.vertex_by_path("/tiny0/rack1/node3")
    assert node3 is not None and (g.v_id[node3], g.v_rank[node3]) == (3, 3)
    sock1 = g.vertex_by_path("/tiny0/rack1/node3/socket1")
    assert sock1 is not None
    assert [g.v_name[c] for c in g.children(sock1)] == ["core2", "core3", "gpu1", "memory2", "memory3"]
    mem = g.vertex_by_path("/tiny0/rack1/node3/socket1/memory3")
    assert mem is not None and (g.v_size[mem], g.v_unit[mem], g.v_rank[mem]) == (1, "GB", 3)
    assert len(g) == 1 + 2 + 4 * (1 + 2 * (1 + 2 + 1 + 2))


def test_generate_rejects_bad_counts() -> None:
    """Negative or non-integer counts are input errors."""
    with pytest.raises(InputError, match="nodes must be a non-negative integer"):
        generate_graph(nodes=-1)


def test_generate_cluster_only() -> None:
    """With no nodes the graph is the cluster vertex alone."""
    g = generate_graph(nodes=0)
    assert isinstance(g, ResourceGraph) and len(g) == 1 and g.path(g.roots["containment"]) == "/cluster0"
