"""Synthetic clusters: cluster -> [rack ->] node -> socket -> core/gpu/memory.

:func:`generate_graph` builds the graph through the GRUG generator, so the
result is exactly what Fluxion's GRUG reader makes of the equivalent recipe
(vertex order, ``uniq_id``, ids, names, ranks and paths): for example
``generate_graph(nodes=128)`` equals loading ``bench/graphs/L0.graphml``.
Ids follow the usual recipes: racks and sockets count from 0 under their
parent, nodes are numbered across the whole cluster, and cores, gpus and
memory across their node.
"""

from __future__ import annotations

from fluxlite.errors import InputError
from fluxlite.graph import ResourceGraph
from fluxlite.readers._common import no_gc
from fluxlite.readers.grug import MULTIPLY, Recipe, RecipeEdge, RecipePool, build_from_recipe

__all__ = ["generate_graph", "generate_recipe"]


def _edge(key: str, src: int, dst: int, scale: int, scope: int) -> RecipeEdge:
    return RecipeEdge(
        key,
        src,
        dst,
        e_subsystem="containment",
        relation="contains",
        rrelation="in",
        gen_method=MULTIPLY,
        id_scope=scope,
        id_start=0,
        id_stride=1,
        multi_scale=scale,
        as_tgt_subsystem="containment",
        as_tgt_uplvl=1,
        as_src_uplvl=1,
    )


def generate_recipe(
    racks: int = 0,
    nodes: int = 1,
    sockets: int = 2,
    cores: int = 16,
    gpus: int = 0,
    memory: int = 0,
    memory_unit: str = "GB",
    cluster: str = "cluster",
) -> Recipe:
    """The GRUG recipe :func:`generate_graph` uses (see there for the arguments)."""
    for name, val in (
        ("racks", racks),
        ("nodes", nodes),
        ("sockets", sockets),
        ("cores", cores),
        ("gpus", gpus),
        ("memory", memory),
    ):
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            raise InputError(f"generate: {name} must be a non-negative integer, got {val!r}")
    if not cluster:
        raise InputError("generate: cluster basename must not be empty")

    def pool(
        key: str, size: int = 1, unit: str = "", root: int = 0, basename: str | None = None
    ) -> RecipePool:
        return RecipePool(key, key, basename or key, unit, size, root, "containment")

    r = Recipe()
    r.pools.append(pool("cluster", root=1, basename=cluster))
    parent = 0
    if racks:
        r.pools.append(pool("rack"))
        r.edges.append(_edge("cluster2rack", 0, 1, racks, 0))
        parent = 1
    node = len(r.pools)
    r.pools.append(pool("node"))
    r.edges.append(_edge("parent2node", parent, node, nodes, 1 if racks else 0))
    sock = len(r.pools)
    r.pools.append(pool("socket"))
    r.edges.append(_edge("node2socket", node, sock, sockets, 0))
    for kind, count, size, unit in (
        ("core", cores, 1, ""),
        ("gpu", gpus, 1, ""),
        ("memory", memory, 1, memory_unit),
    ):
        if count:
            k = len(r.pools)
            r.pools.append(pool(kind, size=size, unit=unit))
            r.edges.append(_edge(f"socket2{kind}", sock, k, count, 1))
    return r


def generate_graph(
    racks: int = 0,
    nodes: int = 1,
    sockets: int = 2,
    cores: int = 16,
    gpus: int = 0,
    memory: int = 0,
    memory_unit: str = "GB",
    cluster: str = "cluster",
) -> ResourceGraph:
    """Build a regular cluster graph with Fluxion's GRUG conventions.

    ``racks=0`` puts nodes directly under the cluster; otherwise each of the
    ``racks`` racks holds ``nodes`` nodes.  Each node has ``sockets``
    sockets, each socket ``cores`` cores, ``gpus`` gpus and ``memory``
    memory vertices of size 1 ``memory_unit``.  The cluster vertex is named
    ``<cluster>0``.  Nodes get ranks 0, 1, ... in order and their subtree
    inherits the rank.  O(size of the graph).
    """
    recipe = generate_recipe(racks, nodes, sockets, cores, gpus, memory, memory_unit, cluster)
    g = ResourceGraph()
    with no_gc():
        build_from_recipe(recipe, g, source="generate")
    return g
