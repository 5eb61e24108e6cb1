"""Small JGF utilities for moving subgraphs between instances.

* :func:`jgf_counts` - vertices and edges of a document (n = V + E is the
  size the benchmark fits against);
* :func:`releasable` - a document without the rank-less ancestors (the
  cluster vertex) that the match writer includes but a partial release
  cannot name on their own;
* :func:`subgraph_jgf` - a JGF document for a set of vertices of a graph,
  in the match writer's layout, with the containment edges among them.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from fluxlite.graph import ResourceGraph
from fluxlite.writers.jgf import vertex_json

__all__ = ["jgf_counts", "releasable", "subgraph_jgf"]


def jgf_counts(jgf: bytes | str) -> tuple[int, int]:
    """(vertices, edges) of a JGF document.  O(document)."""
    g = orjson.loads(jgf).get("graph", {})
    return len(g.get("nodes", ())), len(g.get("edges", ()))


def releasable(jgf: bytes | str) -> bytes:
    """The document minus vertices without a broker rank (and edges touching them)."""
    doc = orjson.loads(jgf)
    g = doc.get("graph", {})
    nodes = g.get("nodes", [])
    drop = {n.get("id") for n in nodes if n.get("metadata", {}).get("rank", -1) == -1}
    if not drop:
        return jgf.encode() if isinstance(jgf, str) else jgf
    g["nodes"] = [n for n in nodes if n.get("id") not in drop]
    g["edges"] = [
        e for e in g.get("edges", []) if e.get("source") not in drop and e.get("target") not in drop
    ]
    return orjson.dumps(doc)


def subgraph_jgf(
    g: ResourceGraph,
    vids: Iterable[int],
    *,
    exclusive: Iterable[int] = (),
    subsystem: str = "containment",
) -> bytes:
    """JGF for ``vids`` (each with its full size) and the ``subsystem`` edges among them.  O(len(vids))."""
    order = list(dict.fromkeys(vids))
    inset = set(order)
    excl = set(exclusive)
    size = g.v_size
    uniq = g.v_uniq
    nodes = [vertex_json(g, v, size[v], None, v in excl) for v in order]
    edges = []
    for v in order:
        p = g.parent(v, subsystem)
        if p is not None and p in inset:
            e = f'{{"source": "{uniq[p]}", "target": "{uniq[v]}"'
            if subsystem != "containment":
                e += f', "metadata": {{"subsystem": "{subsystem}"}}'
            edges.append(e + "}")
    text = '{"graph": {"nodes": [' + ", ".join(nodes) + '], "edges": [' + ", ".join(edges) + "]}}"
    return text.encode()
