"""Small JGF utilities for moving subgraphs between instances.

* :func:`jgf_counts` - vertices and edges of a document (n = V + E is the
  size the benchmark fits against);
* :func:`releasable` - a document without the rank-less ancestors (the
  cluster vertex) that the match writer includes but a partial release
  cannot name on their own;
* :func:`subgraph_jgf` - a JGF document for a set of vertices of a graph,
  in the match writer's layout, with the containment edges among them;
* :func:`document_nodes` - each node's path, rank and type, column-wise for
  a match writer's document.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from fluxlite.readers import read_vertices
from fluxlite.writers.jgf import subgraph_jgf
from jgf import read_columns

__all__ = ["document_nodes", "jgf_counts", "releasable", "subgraph_jgf"]


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


def document_nodes(
    jgf: bytes | str, dom: str, source: str, *, columns_from: int = 0
) -> tuple[Sequence[str], Sequence[int], Sequence[str]]:
    """Each node's path (``dom``'s, else its first), rank and type, in document order.

    A match writer's document (one subsystem, a path per node) at least
    ``columns_from`` bytes long is read as columns (:func:`jgf.read_columns`,
    without an object per node); any other document, or one the columnar
    reader turns away, by :func:`read_vertices`, which gives the same answer
    or the document's error (naming ``source``).  O(document).
    """
    cols = read_columns(jgf) if len(jgf) >= columns_from else None
    if cols is not None and len(cols.paths) == 1:
        paths = next(iter(cols.paths.values()))
        if None not in paths:
            return paths, cols.rank, cols.type  # type: ignore[return-value]
    nodes = read_vertices(jgf, source=source)
    return (
        [n.paths.get(dom) or next(iter(n.paths.values()), "") for n in nodes],
        [n.rank for n in nodes],
        [n.type for n in nodes],
    )
