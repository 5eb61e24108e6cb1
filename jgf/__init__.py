"""JSON Graph Format (JGF) as Fluxion reads and writes it.

A standalone package (it imports nothing of fluxlite): parse JGF text with
orjson (:func:`loads`), check it against Fluxion's JGF schema and apply its
defaults (:func:`validate`, :func:`read`), and write JGF bytes from plain
node/edge objects (:func:`write`, :func:`node_dict`, :func:`edge_dict`,
:func:`dumps`).  Every problem raises :class:`JGFError`, a ``ValueError``
whose one-line message names the node or edge at fault::

    >>> import jgf
    >>> doc = jgf.read(b'{"graph": {"nodes": [], "edges": []}}')
    >>> doc.nodes, doc.edges
    ([], [])
"""

from jgf._columns import Columns, columns_jgf, read_columns
from jgf._read import JGFError, loads
from jgf._validate import Document, Edge, Node, read, validate
from jgf._write import dumps, edge_dict, node_dict, write

__all__ = [
    "Columns",
    "Document",
    "Edge",
    "JGFError",
    "Node",
    "columns_jgf",
    "dumps",
    "edge_dict",
    "loads",
    "node_dict",
    "read",
    "read_columns",
    "validate",
    "write",
]
