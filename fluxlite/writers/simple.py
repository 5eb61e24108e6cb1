"""The line-per-vertex formats: ``simple`` and ``pretty_simple``.

``simple`` prints one line per emitted vertex, in emission (post-)order::

    <prefix><name>[<needs>:x]      exclusive
    <prefix><name>[<needs>:s]      shared

``pretty_simple`` prints the same lines with ``exclusive``/``shared`` spelled
out and in *reverse* emission order, which puts parents above their children.
The prefix is the traverser's level prefix (six spaces then three dashes per
level), so nothing here depends on the graph except the vertex name.

For ``find`` both return the whole text as one string (None when empty),
which resource-query prints verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fluxlite.graph import ResourceGraph

__all__ = ["PrettySimpleWriter", "SimpleWriter"]


class SimpleWriter:
    """Fluxion's ``simple`` format (``sim_match_writers_t``)."""

    __slots__ = ("_add", "_out")
    emit_exclusive_subtrees = True
    emits_edges = False

    def __init__(self) -> None:
        self._out: list[str] = []
        self._add = self._out.append

    def emit_vtx(
        self,
        prefix: str,
        g: ResourceGraph,
        vid: int,
        needs: int,
        agfilter: Mapping[str, str] | None = None,
        exclusive: bool = False,
        ephemeral: Mapping[str, str] | None = None,
    ) -> None:
        """Append ``<prefix><name>[<needs>:x|s]``."""
        self._add(f"{prefix}{g.v_name[vid]}[{needs}:{'x' if exclusive else 's'}]\n")

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Edges are not printed."""

    def emit_tm(self, start: int, end: int) -> None:
        """Times are not printed."""

    def emit_attrs(self, key: str, value: str) -> None:
        """Attributes are not printed."""

    def emit(self) -> str:
        """All lines so far; resets."""
        text = "".join(self._out)
        self._out.clear()
        return text

    def emit_json(self) -> str | None:
        """All lines as one string (None if there are none); resets."""
        return self.emit() or None

    def empty(self) -> bool:
        """True when no line is pending."""
        return not any(self._out)

    def reset(self) -> None:
        """Drop pending lines."""
        self._out.clear()


class PrettySimpleWriter:
    """Fluxion's ``pretty_simple`` format (``pretty_sim_match_writers_t``)."""

    __slots__ = ("_add", "_out")
    emit_exclusive_subtrees = True
    emits_edges = False

    def __init__(self) -> None:
        self._out: list[str] = []
        self._add = self._out.append

    def emit_vtx(
        self,
        prefix: str,
        g: ResourceGraph,
        vid: int,
        needs: int,
        agfilter: Mapping[str, str] | None = None,
        exclusive: bool = False,
        ephemeral: Mapping[str, str] | None = None,
    ) -> None:
        """Record ``<prefix><name>[<needs>:exclusive|shared]`` (printed last-first)."""
        self._add(f"{prefix}{g.v_name[vid]}[{needs}:{'exclusive' if exclusive else 'shared'}]\n")

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Edges are not printed."""

    def emit_tm(self, start: int, end: int) -> None:
        """Times are not printed."""

    def emit_attrs(self, key: str, value: str) -> None:
        """Attributes are not printed."""

    def emit(self) -> str:
        """All lines, most recently emitted first; resets."""
        text = "".join(reversed(self._out))
        self._out.clear()
        return text

    def emit_json(self) -> str | None:
        """The emitted text as one string (None if empty); resets."""
        return self.emit() or None

    def empty(self) -> bool:
        """True when no line is pending."""
        return not any(self._out)

    def reset(self) -> None:
        """Drop pending lines."""
        self._out.clear()
