"""Grid and torus machines: the graph generator and :class:`GridInfo`, the geometry of a loaded graph.

A grid machine is an ordinary resource graph, cluster -> node -> core, whose
nodes carry properties ``x`` and ``y`` and whose ``network`` subsystem links
grid neighbours (with wrap-around on a torus).  :class:`GridInfo` reads that
geometry back from any graph (generated, or loaded from JGF/GraphML) and
precomputes what the allocators need: curve orders, distance matrices and
the cores of every node, all indexed by grid index ``y * width + x``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

import numpy as np

from fluxlite.errors import InputError
from fluxlite.graph import ResourceGraph
from fluxlite.grid.curves import hilbert_order, snake_order

__all__ = ["GridInfo", "generate_grid", "parse_grid_size"]

NETWORK = "network"


def parse_grid_size(text: str) -> tuple[int, int]:
    """``"16x8"`` -> (16, 8); raises :class:`InputError` for anything else."""
    w, sep, h = text.lower().partition("x")
    try:
        width, height = int(w), int(h)
    except ValueError:
        width = height = 0
    if not sep or width < 1 or height < 1:
        raise InputError(f"grid size must be WIDTHxHEIGHT with positive integers, got {text!r}")
    return width, height


def generate_grid(
    width: int, height: int, cores: int = 4, torus: bool = False, cluster: str = "cluster"
) -> ResourceGraph:
    """A ``width`` x ``height`` grid (or torus) of nodes with ``cores`` cores each.

    Containment is ``/<cluster>0/node<i>/core<j>`` with ``i = y * width + x``
    (node ``rank = i``, core ids restart at 0 on every node); nodes carry the
    properties ``x`` and ``y``.  The ``network`` subsystem has one edge per
    direction between grid neighbours, relation ``neighbour`` (wrap-around
    edges too when ``torus``).  O(width * height * cores).
    """
    for name, val in (("width", width), ("height", height), ("cores", cores)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise InputError(f"generate: grid {name} must be a positive integer, got {val!r}")
    if not cluster:
        raise InputError("generate: cluster basename must not be empty")
    g = ResourceGraph()
    root_path = f"/{cluster}0"
    root = g.add_vertex("cluster", cluster, f"{cluster}0", 0, paths={"containment": root_path})
    g.set_root("containment", root)
    nodes = []
    for i in range(width * height):
        y, x = divmod(i, width)
        npath = f"{root_path}/node{i}"
        v = g.add_vertex(
            "node",
            "node",
            f"node{i}",
            i,
            rank=i,
            properties={"x": str(x), "y": str(y)},
            paths={"containment": npath},
        )
        g.add_edge(root, v, "containment", "contains")
        for j in range(cores):
            c = g.add_vertex("core", "core", f"core{j}", j, rank=i, paths={"containment": f"{npath}/core{j}"})
            g.add_edge(v, c, "containment", "contains")
        nodes.append(v)
    for i, v in enumerate(nodes):
        for j in _geometric_neighbours(i, width, height, torus):
            g.add_edge(v, nodes[j], NETWORK, "neighbour")
    return g


def _geometric_neighbours(i: int, width: int, height: int, torus: bool) -> list[int]:
    y, x = divmod(i, width)
    out: list[int] = []
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        nx, ny = x + dx, y + dy
        if torus:
            nx %= width
            ny %= height
        elif not (0 <= nx < width and 0 <= ny < height):
            continue
        j = ny * width + nx
        if j != i and j not in out:
            out.append(j)
    return out


class GridInfo:
    """The geometry of a grid machine, by grid index ``i = y * width + x``.

    Built from the node vertices' ``x``/``y`` properties; a graph whose
    ``network`` edges wrap around is a torus.  Read-only: allocation state
    lives in the engine, never here.
    """

    def __init__(
        self,
        width: int,
        height: int,
        torus: bool,
        node_vid: Sequence[int],
        cores: Sequence[Sequence[int]],
    ) -> None:
        self.width = width
        self.height = height
        self.torus = torus
        self.n = width * height
        #: grid index -> node vertex handle
        self.node_vid: list[int] = list(node_vid)
        #: node vertex handle -> grid index
        self.index_of: dict[int, int] = {v: i for i, v in enumerate(self.node_vid)}
        #: grid index -> core vertex handles of that node
        self.cores: list[tuple[int, ...]] = [tuple(c) for c in cores]
        #: core vertex handle -> grid index of its node
        self.node_of_core: dict[int, int] = {c: i for i, cs in enumerate(self.cores) for c in cs}
        self._nbrs = [tuple(_geometric_neighbours(i, width, height, torus)) for i in range(self.n)]
        idx = np.arange(self.n)
        self.xs = idx % width
        self.ys = idx // width

    @classmethod
    def from_graph(cls, g: ResourceGraph, subsystem: str = "containment") -> GridInfo:
        """Read the geometry of ``g``; :class:`InputError` when its nodes have no grid coordinates."""
        coords: dict[tuple[int, int], int] = {}
        for v in g.by_type("node"):
            p = g.properties(v)
            if "x" not in p or "y" not in p:
                raise InputError(
                    f"node {g.path(v, subsystem) or g.v_name[v]} has no x/y properties: "
                    "not a grid machine (make one with fluxlite graph generate --grid WxH)"
                )
            try:
                xy = (int(p["x"]), int(p["y"]))
            except ValueError:
                raise InputError(f"node {g.v_name[v]}: x/y properties must be integers") from None
            if xy in coords:
                raise InputError(f"two nodes at grid position {xy}: {g.v_name[coords[xy]]}, {g.v_name[v]}")
            coords[xy] = v
        if not coords:
            raise InputError("the graph has no node vertices: not a grid machine")
        width = max(x for x, _ in coords) + 1
        height = max(y for _, y in coords) + 1
        if min(min(x, y) for x, y in coords) < 0 or len(coords) != width * height:
            raise InputError(
                f"grid coordinates do not fill a {width}x{height} rectangle ({len(coords)} nodes)"
            )
        node_vid = [coords[(i % width, i // width)] for i in range(width * height)]
        torus = False
        net = g.out.get(NETWORK)
        if net is not None:
            pos = {v: (i % width, i // width) for i, v in enumerate(node_vid)}
            for v in node_vid:
                for e in net[v]:
                    a, b = pos[v], pos.get(g.e_dst[e], pos[v])
                    if abs(a[0] - b[0]) + abs(a[1] - b[1]) > 1:
                        torus = True
                        break
                if torus:
                    break
        cores = []
        for v in node_vid:
            cores.append([c for c in g.subtree(v, subsystem) if g.v_type[c] == "core"])
        return cls(width, height, torus, node_vid, cores)

    # ------------------------------------------------------------ geometry
    def xy(self, i: int) -> tuple[int, int]:
        return i % self.width, i // self.width

    def index(self, x: int, y: int) -> int:
        return y * self.width + x

    def neighbours(self, i: int) -> tuple[int, ...]:
        """Grid indices of the neighbours of ``i`` (wrap-around on a torus)."""
        return self._nbrs[i]

    @cached_property
    def dist(self) -> np.ndarray:
        """n x n matrix of Manhattan hop distances (torus-aware)."""
        dx = np.abs(self.xs[:, None] - self.xs[None, :])
        dy = np.abs(self.ys[:, None] - self.ys[None, :])
        if self.torus:
            dx = np.minimum(dx, self.width - dx)
            dy = np.minimum(dy, self.height - dy)
        return (dx + dy).astype(np.int64)

    @cached_property
    def dist2(self) -> np.ndarray:
        """n x n matrix of squared Euclidean distances (torus-aware): a tie-break towards discs."""
        dx = np.abs(self.xs[:, None] - self.xs[None, :])
        dy = np.abs(self.ys[:, None] - self.ys[None, :])
        if self.torus:
            dx = np.minimum(dx, self.width - dx)
            dy = np.minimum(dy, self.height - dy)
        return (dx * dx + dy * dy).astype(np.int64)

    def distance(self, i: int, j: int) -> int:
        """Manhattan hops between grid indices ``i`` and ``j`` (wrap-around on a torus)."""
        ax, ay = i % self.width, i // self.width
        bx, by = j % self.width, j // self.width
        dx, dy = abs(ax - bx), abs(ay - by)
        if self.torus:
            dx = min(dx, self.width - dx)
            dy = min(dy, self.height - dy)
        return dx + dy

    def compactness(self, indices: Iterable[int]) -> int:
        """Sum of pairwise Manhattan distances of a partition (each pair once); lower is more compact."""
        idx = np.fromiter(indices, dtype=np.int64)
        if len(idx) < 2:
            return 0
        return int(self.dist[np.ix_(idx, idx)].sum() // 2)

    def connected(self, indices: Iterable[int]) -> bool:
        """True if the nodes form one connected region of the grid."""
        s = set(indices)
        if not s:
            return True
        start = next(iter(s))
        seen = {start}
        stack = [start]
        while stack:
            u = stack.pop()
            for w in self._nbrs[u]:
                if w in s and w not in seen:
                    seen.add(w)
                    stack.append(w)
        return len(seen) == len(s)

    @cached_property
    def hilbert_order(self) -> np.ndarray:
        """Grid indices along the generalized Hilbert curve."""
        return hilbert_order(self.width, self.height)

    @cached_property
    def hilbert_pos(self) -> np.ndarray:
        """Grid index -> position on the Hilbert curve."""
        pos = np.empty(self.n, dtype=np.int64)
        pos[self.hilbert_order] = np.arange(self.n)
        return pos

    @cached_property
    def snake_order(self) -> np.ndarray:
        """Grid indices in boustrophedon order (row by row, alternating direction)."""
        return snake_order(self.width, self.height)

    @cached_property
    def snake_pos(self) -> np.ndarray:
        pos = np.empty(self.n, dtype=np.int64)
        pos[self.snake_order] = np.arange(self.n)
        return pos
