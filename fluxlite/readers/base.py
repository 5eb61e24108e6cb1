"""The reader interface: turn a resource description into a ResourceGraph.

A reader mirrors one of Fluxion's resource readers (``-f grug|jgf|rv1exec|
hwloc``) and must build exactly what Fluxion builds, because scheduler
output is compared byte for byte with Fluxion's: the same vertices in the
same creation order, the same ``uniq_id``, per-type ``id``, name, rank,
size, unit and paths, the same edges, and the same order of each vertex's
out-edges (the matcher visits children in out-edge insertion order).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from fluxlite.graph import ResourceGraph

__all__ = ["Reader"]


@runtime_checkable
class Reader(Protocol):
    """A resource-graph reader for one input format.

    ``name`` is the format name as given to Fluxion's ``-f`` option.
    ``supports_allowlist`` says whether :meth:`load` honours a type
    allowlist (Fluxion's ``-W``); for other readers an allowlist is ignored,
    as Fluxion does.
    """

    name: str
    supports_allowlist: bool

    def load(
        self,
        text: str | bytes,
        graph: ResourceGraph | None = None,
        *,
        rank: int = -1,
        source: str = "<string>",
    ) -> ResourceGraph:
        """Build the resources described by ``text`` into ``graph``; return it.

        Contract:

        * ``graph=None`` builds a new graph; a given graph is extended in
          place (what extending means is format specific: GRUG reuses the
          existing root of a subsystem, JGF reuses vertices whose path and
          rank already exist, hwloc attaches under the containment root).
        * Vertices are created in Fluxion's order, with Fluxion's
          ``uniq_id``, ids, names, ranks, sizes, units and paths; every
          vertex gets a path in each subsystem it belongs to, and each new
          subsystem root is recorded with ``graph.set_root``.
        * ``rank`` is the execution-target rank for formats that take one
          (GRUG, hwloc); -1 means "none / the format's own ranks".
        * Bad input raises :class:`fluxlite.errors.GraphFormatError` with a
          one-line message ``"<source>: <element>: <problem>"``; the graph
          is then left as it was.
        """
        ...
