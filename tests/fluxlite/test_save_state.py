"""``Engine.save_state`` writes the graph again only when it changed, and never a stale one.

The graph's text is kept from the last save with what it depends on (the
graph's version, its status column, its properties); every kind of change
between two saves must show in the next one exactly as a fresh write of
the graph gives it.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from fluxlite.api import Engine
from fluxlite.readers import graph_to_jgf
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import NODE


def _engine() -> Engine:
    return Engine(generate_graph(nodes=4, sockets=2, cores=4), policy="first")


def _fresh(e: Engine) -> object:
    """The graph part of a save written from nothing kept."""
    return orjson.loads(graph_to_jgf(e.graph))


def _saved(e: Engine) -> object:
    return orjson.loads(e.save_state())["graph"]


def _node(e: Engine) -> int:
    return next(v for v in e.graph.vertices() if e.graph.v_type[v] == "node")


def _in_place(e: Engine) -> None:
    """A property set, saved, then changed in place (the same dict)."""
    e.graph.set_property(_node(e), "zone", "a")
    e.save_state()
    e.graph.set_property(_node(e), "zone", "c")


def _remove(e: Engine) -> None:
    e.remove_subgraph(path=e.graph.path(_node(e)))


def _reattach(e: Engine) -> None:
    """A node taken out (and saved without it), then attached again."""
    got = e.allocate(NODE, fmt="jgf")
    e.cancel(got.jobid)
    e.remove_subgraph(path=e.graph.path(_node(e)))
    assert _saved(e) == _fresh(e)
    e.attach(got.text)


CHANGES: dict[str, Callable[[Engine], None]] = {
    "status down": lambda e: e.set_status(e.graph.path(_node(e)), "down"),
    "property": lambda e: e.graph.set_property(_node(e), "zone", "b"),
    "property changed in place": _in_place,
    "subgraph removed": _remove,
    "subgraph attached": _reattach,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_shows_in_the_next_save(change: str) -> None:
    e = _engine()
    first = _saved(e)
    assert first == _fresh(e)
    CHANGES[change](e)
    assert _saved(e) == _fresh(e) != first


def test_an_unchanged_graph_is_not_written_again() -> None:
    """Jobs come and go between two saves: the graph part is the text kept from the first (the same
    object), the jobs part is new, and the state restores to the same engine."""
    e = _engine()
    text = e._graph_text()
    job = e.allocate(NODE).jobid
    assert e._graph_text() is text
    doc = orjson.loads(e.save_state())
    assert [j["jobid"] for j in doc["jobs"]] == [job] and doc["graph"] == _fresh(e)
    back = Engine.restore_state(e.save_state())
    assert back.save_state() == e.save_state()
