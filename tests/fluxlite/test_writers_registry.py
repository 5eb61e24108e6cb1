"""Writer registry, protocol conformance, find printing and the emit error type."""

from __future__ import annotations

import errno

import pytest

from fluxlite.errors import FluxliteError, InputError, StateError
from fluxlite.graph import ResourceGraph
from fluxlite.writers import (
    WRITERS,
    EmitError,
    MatchWriter,
    SimpleWriter,
    create_writer,
    format_find_output,
    known_format,
    register,
)

FORMATS = ["simple", "jgf", "jgf_shorthand", "rlite", "rv1", "rv1_nosched", "rv1_shorthand", "pretty_simple"]


def test_registry_has_fluxion_formats_in_order() -> None:
    """The registry lists Fluxion's eight -F formats in known_match_format order."""
    assert list(WRITERS)[: len(FORMATS)] == FORMATS
    assert all(known_format(f) for f in FORMATS)
    assert not known_format("rv1_exec") and not known_format("")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_writer_satisfies_the_protocol(fmt: str) -> None:
    """create_writer returns a fresh MatchWriter that starts empty."""
    w = create_writer(fmt)
    assert isinstance(w, MatchWriter)
    assert w is not create_writer(fmt)
    assert w.empty()
    assert isinstance(w.emit_exclusive_subtrees, bool)


@pytest.mark.parametrize("fmt", FORMATS)
def test_emit_vtx_accepts_the_traverser_call(fmt: str) -> None:
    """Every writer takes emit_vtx(prefix, g, vid, needs, agfilter, exclusive) positionally."""
    g = ResourceGraph()
    n = g.add_vertex("node", "node", "node0", 0, rank=0, paths={"containment": "/node0"})
    c = g.add_vertex("core", "core", "core0", 0, rank=0, paths={"containment": "/node0/core0"})
    e = g.add_edge(n, c)
    w = create_writer(fmt)
    w.emit_vtx("      ---", g, c, 1, {}, True)
    w.emit_edg("      ", g, e)
    w.emit_vtx("      ", g, n, 1, None, False)
    w.emit_tm(0, 3600)
    w.emit_attrs("queue", "default")
    assert not w.empty()
    assert w.emit().endswith("\n")
    w.reset()
    assert w.empty()


def test_unknown_format_and_duplicate_registration() -> None:
    """Unknown names raise InputError; registering a taken name raises StateError."""
    with pytest.raises(InputError):
        create_writer("xml")
    with pytest.raises(StateError):
        register("simple", SimpleWriter)


def test_format_find_output_rules() -> None:
    """Strings print verbatim, None prints nothing, JSON gets jansson text plus a newline."""
    assert format_find_output(None) == ""
    assert format_find_output("      ---node0[1:x]\n") == "      ---node0[1:x]\n"
    assert format_find_output([{"rank": "0", "children": {"core": "0-1"}}]) == (
        '[{"rank": "0", "children": {"core": "0-1"}}]\n'
    )


def test_emit_error_carries_errno() -> None:
    """EmitError is a StateError with the C errno and its strerror text."""
    err = EmitError("nothing gathered", errno.EINVAL)
    assert isinstance(err, StateError) and isinstance(err, FluxliteError)
    assert err.errno == errno.EINVAL and err.strerror == "Invalid argument"
    assert "EINVAL" in str(err)
