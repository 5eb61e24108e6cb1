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

import orjson

from fluxlite.writers.jgf import subgraph_jgf

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
