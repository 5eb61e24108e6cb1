"""Readers: build a ResourceGraph from GRUG, JGF, R (rv1exec) or hwloc input.

Each reader reproduces the Fluxion reader of the same name (``-f`` option
of resource-query), because scheduler output depends on exactly what the
reader builds.  The registry :data:`READERS` maps a format name to a reader
factory; :func:`load_graph` is the one-call entry point::

    from fluxlite.readers import load_graph
    g = load_graph("../shared/bench/graphs/L0.graphml")           # GRUG
    g = load_graph("tiny.json", format="jgf")

Other entry points: :func:`attach_jgf` (grow a graph by a JGF subgraph),
:func:`read_vertices` (JGF vertices as records), :func:`parse_rv1exec` (an
R document's execution section), :func:`graph_to_jgf` (write a graph as
JGF) and :func:`generate_graph` (a synthetic cluster).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable

from fluxlite.errors import GraphFormatError
from fluxlite.graph import ResourceGraph
from fluxlite.readers._common import decode_hostlist, decode_idset, encode_idset, read_input
from fluxlite.readers.base import Reader
from fluxlite.readers.generate import generate_graph
from fluxlite.readers.grug import GrugReader
from fluxlite.readers.hwloc import HwlocReader
from fluxlite.readers.jgf import (
    DuplicateRootError,
    JgfReader,
    attach_jgf,
    graph_to_jgf,
    locate_vertices,
    parse_jgf,
    read_vertices,
)
from fluxlite.readers.rv1exec import RV1Exec, Rv1execReader, parse_rv1exec

__all__ = [
    "READERS",
    "AllowlistIgnoredWarning",
    "DuplicateRootError",
    "RV1Exec",
    "Reader",
    "ReaderFactory",
    "attach_jgf",
    "decode_hostlist",
    "decode_idset",
    "encode_idset",
    "generate_graph",
    "get_reader",
    "graph_to_jgf",
    "known_format",
    "load_graph",
    "locate_vertices",
    "parse_allowlist",
    "parse_jgf",
    "parse_rv1exec",
    "read_vertices",
    "register",
]

#: A reader factory: called with no arguments, returns a :class:`Reader`.
ReaderFactory = Callable[[], Reader]

#: Format name (as Fluxion's ``-f``) -> reader factory.
READERS: dict[str, ReaderFactory] = {}


class AllowlistIgnoredWarning(UserWarning):
    """An allowlist was given to a reader that does not support one.

    Fluxion ignores it the same way ("WARN: allowlist unsupported").
    """


def register(name: str, factory: ReaderFactory) -> None:
    """Add a reader under ``name``; a name already registered is refused."""
    if name in READERS:
        raise ValueError(f"reader {name!r} is already registered")
    READERS[name] = factory


def known_format(name: str) -> bool:
    """Whether ``name`` is a registered load format."""
    return name in READERS


def get_reader(name: str) -> Reader:
    """A new reader for format ``name`` (GraphFormatError if unknown)."""
    factory = READERS.get(name)
    if factory is None:
        raise GraphFormatError(f"unknown load format {name!r} (known: {', '.join(sorted(READERS))})")
    return factory()


def parse_allowlist(allowlist: str | Iterable[str] | None) -> set[str] | None:
    """Fluxion's ``-W`` list as a set of resource types, or None for "all".

    A comma-separated string or an iterable of names; empty entries are
    dropped; ``cluster`` is always added (resource-query prepends it).
    """
    if allowlist is None:
        return None
    items = allowlist.split(",") if isinstance(allowlist, str) else list(allowlist)
    names = {x.strip() for x in items if x and x.strip()}
    if not names:
        return None
    names.add("cluster")
    return names


def load_graph(
    path_or_text: str | bytes | os.PathLike[str],
    format: str = "grug",
    allowlist: str | Iterable[str] | None = None,
    *,
    rank: int = -1,
    graph: ResourceGraph | None = None,
) -> ResourceGraph:
    """Load a resource graph from a file path or literal text.

    ``format`` is a registered name (``grug``, ``jgf``, ``rv1exec``,
    ``hwloc``).  ``allowlist`` keeps only the listed resource types (see
    :func:`parse_allowlist`); like Fluxion, only readers that support it
    (hwloc) apply it; the others warn (:class:`AllowlistIgnoredWarning`)
    and load everything.  Errors raise GraphFormatError naming the file and
    the element at fault.
    """
    reader = get_reader(format)
    data, source = read_input(path_or_text)
    allow = parse_allowlist(allowlist)
    if allow is not None and reader.supports_allowlist:
        return reader.load(data, graph, rank=rank, source=source, allowlist=allow)  # type: ignore[call-arg]
    if allow is not None:
        warnings.warn(
            AllowlistIgnoredWarning(f"allowlist unsupported by the {format} reader; loading all types"),
            stacklevel=2,
        )
    return reader.load(data, graph, rank=rank, source=source)


register("grug", GrugReader)
register("hwloc", HwlocReader)
register("jgf", JgfReader)
register("rv1exec", Rv1execReader)
# Fluxion's other names for the same readers when a whole graph is loaded:
# rv1exec_force only changes how the resource module picks R's sections, and
# a JGF in shorthand form lists every vertex it loads.
register("rv1exec_force", Rv1execReader)
register("jgf_shorthand", JgfReader)
