"""Consistency check of a live engine: every subtree aggregate against a fresh recount.

Tests use it after every random operation; ``fluxlite instance info
--recount`` lets an operator verify, after grows and shrinks crossed an
instance, that its pruning aggregates still equal what the vertices' own
spans say.  O(V x depth x times): a diagnostic, not for hot paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fluxlite.api import Engine

__all__ = ["recount_errors"]


def recount_errors(eng: Engine, times: Iterable[int] = (0,)) -> list[str]:
    """One message per aggregate (vertex, type, time) that differs from the recount; [] if all agree."""
    tr = eng.traverser
    g = eng.graph
    dom = tr.dom
    times = list(times)
    errors: list[str] = []
    for u, p in enumerate(tr.subplan.get(dom, [])):
        if p is None or not g.is_live(u):
            continue
        below = g.subtree(u, dom)[1:]
        for i, t in enumerate(p.resource_types):
            total = sum(g.v_size[v] for v in below if g.v_type[v] == t)
            if p.resource_total_at(i) != total:
                errors.append(f"{g.path(u, dom)}: total {t} {p.resource_total_at(i)} != recount {total}")
            for at in times:
                used = 0
                for v in below:
                    if g.v_type[v] != t:
                        continue
                    sp = tr.vspans[v]
                    if sp:
                        used += sum(a for (s, e, a) in sp.values() if s <= at < e)
                got = p.avail_resources_at(at, i)
                if got != total - used:
                    errors.append(
                        f"{g.path(u, dom)}: free {t} at {at}: aggregate {got} != recount {total - used}"
                    )
    return errors
