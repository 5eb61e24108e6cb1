"""The match-writer protocol, the format registry and the ``find`` printer.

A match writer receives the vertices and edges of one matched resource set
as the traverser emits them and turns them into text.  The call sequence is
the one Fluxion's DFU traverser uses (``dfu_impl_update.cpp``):

1. ``emit_vtx`` for every selected vertex in post-order (children first),
   ``emit_edg`` for an edge right after its child's subtree was emitted;
2. ``emit_tm(start, end)`` and, when the job has a queue,
   ``emit_attrs("queue", name)``;
3. ``emit()`` returns the text and resets what Fluxion's writer resets.

``find`` uses the same writers but ends with :meth:`MatchWriter.emit_json`,
whose result is printed by :func:`format_find_output`.

Reset semantics deliberately follow Fluxion, quirks included: a writer that
has nothing complete to print keeps its state (e.g. ``jgf`` with vertices but
no edges), ``rlite`` keeps core/gpu ids not yet claimed by a node, ``rv1``
keeps its attributes.  :meth:`MatchWriter.reset` clears everything.
"""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fluxlite.errors import InputError, StateError
from fluxlite.writers._jansson import dumps

if TYPE_CHECKING:
    from fluxlite.graph import ResourceGraph

__all__ = [
    "WRITERS",
    "EmitError",
    "MatchWriter",
    "create_writer",
    "format_find_output",
    "known_format",
    "register",
]


class EmitError(StateError):
    """A writer cannot emit what it holds (Fluxion's writer returned -1 with ``errno``).

    ``errno`` is the C errno value and ``strerror`` its text, so a caller can
    print Fluxion's message, e.g. ``find: ERROR: find writer emit: Invalid
    argument``.  Fluxion raises these in three places: ``rlite`` with nothing
    gathered (``EINVAL``), and ``jgf`` (also inside ``rv1``) holding vertices
    but no edges or edges but no vertices (``ENOENT``).
    """

    def __init__(self, message: str, errno: int, **context: object) -> None:
        self.errno = errno
        self.strerror = os.strerror(errno)
        super().__init__(message, errno=_errno.errorcode.get(errno, str(errno)), **context)


@runtime_checkable
class MatchWriter(Protocol):
    """What the matcher and the REPL need from a match writer.

    ``emit_exclusive_subtrees`` tells the traverser whether to emit the
    non-root vertices of exclusively allocated subtrees (False only for
    ``jgf_shorthand``); ``emits_edges`` False lets it skip ``emit_edg``
    calls that would do nothing (the line formats).
    """

    emit_exclusive_subtrees: bool
    emits_edges: bool

    def emit_vtx(
        self,
        prefix: str,
        g: ResourceGraph,
        vid: int,
        needs: int,
        agfilter: Mapping[str, str] | None,
        exclusive: bool,
        ephemeral: Mapping[str, str] | None = None,
    ) -> None:
        """Record vertex ``vid`` (``needs`` units, ``exclusive`` or shared).

        ``prefix`` is the traverser's level prefix (used by the simple
        formats), ``agfilter`` the pruning-filter usage that ``find
        agfilter=true`` reports and ``ephemeral`` per-match vertex data such
        as a jobspec ``label`` (both written by JGF as sorted maps).
        """
        ...

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Record edge ``eid``."""
        ...

    def emit_tm(self, start: int, end: int) -> None:
        """Record the allocation's start time and expiration (epoch seconds)."""
        ...

    def emit_attrs(self, key: str, value: str) -> None:
        """Record a scheduler attribute (Fluxion emits ``queue``)."""
        ...

    def emit(self) -> str:
        """The text Fluxion's ``writer->emit(out)`` prints; resets the writer.

        Raises :class:`EmitError` where Fluxion's ``emit`` returns -1.
        """
        ...

    def emit_json(self) -> object | str | None:
        """What Fluxion's ``emit_json`` yields for ``find`` (None: nothing); resets.

        Raises :class:`EmitError` where Fluxion's ``emit_json`` returns -1.
        """
        ...

    def empty(self) -> bool:
        """True when there is nothing to emit."""
        ...

    def reset(self) -> None:
        """Forget everything recorded so far (including state Fluxion keeps)."""
        ...


#: format name -> factory; use :func:`register` to add one
WRITERS: dict[str, Callable[[], MatchWriter]] = {}


def register(name: str, factory: Callable[[], MatchWriter]) -> None:
    """Register a writer factory under ``name``; a name can be registered only once."""
    if name in WRITERS:
        raise StateError("match format already registered", format=name)
    WRITERS[name] = factory


def known_format(name: str) -> bool:
    """Is ``name`` a registered match format (Fluxion's ``known_match_format``)?"""
    return name in WRITERS


def create_writer(name: str) -> MatchWriter:
    """A fresh writer for format ``name``; :class:`~fluxlite.errors.InputError` if unknown."""
    factory = WRITERS.get(name)
    if factory is None:
        raise InputError("unknown match format", format=name, known=",".join(WRITERS))
    return factory()


def format_find_output(obj: object) -> str:
    """Text resource-query's ``find`` prints for an ``emit_json`` result.

    A string is printed as is (the simple formats already end each line with
    a newline), None prints nothing, anything else is
    ``json_dumps(o, JSON_INDENT(0))`` followed by a newline.
    """
    if obj is None:
        return ""
    if isinstance(obj, str):
        return obj
    return dumps(obj) + "\n"
