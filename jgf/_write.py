"""Writing JGF: Fluxion-layout node/edge objects and their serialisation.

Fluxion writes a whole graph as ``{"graph": {"nodes": [...], "edges": [...]}}``
with jansson's default layout: no newlines, ``", "`` between members and
``": "`` after keys.  :func:`dumps` reproduces that byte for byte
(``style="fluxion"``), or writes orjson's compact or indented form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import orjson

from jgf._read import JGFError

__all__ = ["dumps", "edge_dict", "node_dict", "write"]

Style = Literal["fluxion", "compact", "indent"]


def node_dict(
    *,
    uniq_id: int,
    type: str,
    name: str,
    id: int,
    paths: Mapping[str, str],
    basename: str | None = None,
    rank: int = -1,
    exclusive: bool = False,
    unit: str = "",
    size: int = 1,
    properties: Mapping[str, str] | None = None,
    status: int = 0,
    key: str | None = None,
) -> dict[str, Any]:
    """A JGF node in the layout Fluxion writes for a whole graph.

    Key order: ``type, basename, name, id, uniq_id, rank, exclusive, unit,
    size, [properties], paths, [status]``; ``properties`` only when not
    empty, ``status`` only when the vertex is down (1).  The node's JGF id
    is ``key`` or, by default, the decimal ``uniq_id``.
    """
    md: dict[str, Any] = {
        "type": type,
        "basename": type if basename is None else basename,
        "name": name,
        "id": id,
        "uniq_id": uniq_id,
        "rank": rank,
        "exclusive": exclusive,
        "unit": unit,
        "size": size,
    }
    if properties:
        md["properties"] = dict(properties)
    md["paths"] = dict(paths)
    if status:
        md["status"] = status
    return {"id": str(uniq_id) if key is None else key, "metadata": md}


def edge_dict(source: str | int, target: str | int, subsystem: str = "containment") -> dict[str, Any]:
    """A JGF edge in Fluxion's layout: ``{"source", "target", "metadata": {"subsystem"}}``."""
    return {"source": str(source), "target": str(target), "metadata": {"subsystem": subsystem}}


def _fluxion_layout(obj: Any) -> bytes:
    """jansson's default layout (``", "`` and ``": "``, one line) via orjson.

    orjson's indented form already uses ``": "`` and indents by two spaces
    per level; newlines only occur as layout (JSON strings escape them).
    Joining the lines, deepest indentation first, gives jansson's spacing:
    a comma keeps one space, everything else none.
    """
    out = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    depth = 0
    while b"\n" + b"  " * (depth + 1) in out:
        depth += 1
    for k in range(depth, -1, -1):
        pad = b"  " * k
        out = out.replace(b",\n" + pad, b", ").replace(b"\n" + pad, b"")
    return out


def dumps(obj: Any, *, style: Style = "fluxion") -> bytes:
    """Serialise a JSON value with orjson.

    ``fluxion``: one line with ``", "``/``": "`` separators (jansson's
    default, as in Fluxion's JGF files); ``compact``: orjson's compact form;
    ``indent``: two-space indentation.  Non-JSON values raise JGFError.
    """
    if style not in ("fluxion", "compact", "indent"):
        raise JGFError(f"unknown JGF style {style!r}")
    try:
        if style == "indent":
            return orjson.dumps(obj, option=orjson.OPT_INDENT_2)
        if style == "compact":
            return orjson.dumps(obj)
        return _fluxion_layout(obj)
    except TypeError as exc:
        raise JGFError(f"cannot serialise: {exc}") from exc


def write(
    nodes: Iterable[Mapping[str, Any]],
    edges: Iterable[Mapping[str, Any]],
    *,
    style: Style = "fluxion",
    free_ranks: str | None = None,
) -> bytes:
    """JGF bytes for the given node and edge objects (see :func:`node_dict`)."""
    doc: dict[str, Any] = {"graph": {"nodes": list(nodes), "edges": list(edges)}}
    if free_ranks is not None:
        doc["free_ranks"] = free_ranks
    return dumps(doc, style=style)
