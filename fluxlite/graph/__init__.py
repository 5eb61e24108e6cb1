"""The resource graph: vertices are resources, edges are relations per subsystem.

See :class:`ResourceGraph` for the storage model (rustworkx structure, columnar
attributes, path index).
"""

from fluxlite.graph._store import (
    CONTAINMENT,
    DOWN,
    STATUS_NAMES,
    STATUS_VALUES,
    UP,
    FluxionIds,
    GraphObserver,
    ResourceGraph,
)

__all__ = ["CONTAINMENT", "DOWN", "STATUS_NAMES", "STATUS_VALUES", "UP", "FluxionIds", "GraphObserver", "ResourceGraph"]
