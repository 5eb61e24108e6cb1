"""Jobspec labels carried to the matched vertices (Fluxion's per-match ``ephemeral`` data).

Fluxion's ``dom_dfv`` stores the label of the jobspec resource a vertex
matched (``resource.label``, for any type, not only slots) in the vertex's
ephemeral map, and its JGF writer prints that map as
``"ephemeral": {"label": ...}`` in the vertex's metadata (rv1 embeds the
same JGF).  fluxlite derives the label from the request by type: a vertex
of type T gets label L when every resource of type T in the jobspec carries
the label L.  A type requested at several places with different labels (or
with and without one) gets none: which request a vertex matched is not
kept by the walk, and no label is better than a wrong one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def labels_by_type(resources: Iterable[Any]) -> dict[str, str]:
    """Type -> label for the types whose every request carries one and the same label.  O(jobspec)."""
    seen: dict[str, str | None] = {}
    stack = list(resources)
    while stack:
        r = stack.pop()
        stack.extend(r.with_)
        if r.type == "slot":
            continue
        label = r.label or None
        if r.type in seen and seen[r.type] != label:
            label = None
        seen[r.type] = label
    return {t: lab for t, lab in seen.items() if lab}


class LabelWriter:
    """A match writer that adds ``{"label": L}`` as ephemeral data to the vertices it emits."""

    def __init__(self, writer: Any, labels: Mapping[str, str]) -> None:
        self._w = writer
        self._eph = {t: {"label": lab} for t, lab in labels.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._w, name)

    def emit_vtx(
        self,
        prefix: Any,
        g: Any,
        vid: int,
        needs: int,
        agfilter: Mapping[str, str] | None = None,
        exclusive: bool = False,
        ephemeral: Mapping[str, str] | None = None,
    ) -> Any:
        eph = self._eph.get(g.v_type[vid])
        if eph is not None:
            ephemeral = eph if not ephemeral else {**ephemeral, **eph}
        return self._w.emit_vtx(prefix, g, vid, needs, agfilter, exclusive, ephemeral)


def with_labels(writer: Any, resources: Iterable[Any]) -> Any:
    """``writer`` itself when the jobspec has no labels to carry, else a :class:`LabelWriter` over it."""
    labels = labels_by_type(resources)
    return LabelWriter(writer, labels) if labels else writer
