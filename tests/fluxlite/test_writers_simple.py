"""simple / pretty_simple: exact text from hand-derived emit sequences and the conformance files."""

from __future__ import annotations

import re

import pytest

from fluxlite.graph import ResourceGraph
from fluxlite.writers import PrettySimpleWriter, SimpleWriter, create_writer, format_find_output
from tests.conftest import RESOURCE, needs

EXPECTED = RESOURCE / "expected"
LINE = re.compile(r"^(\s*-*)(\S+)\[(\d+):(x|s|exclusive|shared)\]$")


def level(depth: int) -> str:
    """The traverser's level prefix: six spaces and three dashes per level."""
    return "      " + "---" * depth


def chain(names: list[str]) -> tuple[ResourceGraph, list[int]]:
    """A graph with one vertex per name (only the names matter to these writers)."""
    g = ResourceGraph()
    return g, [g.add_vertex(re.sub(r"\d+$", "", n), re.sub(r"\d+$", "", n), n, 0) for n in names]


def test_simple_single_core_allocation() -> None:
    """A 1-core match (basics/001 job 1) prints children first with x/s marks."""
    g, v = chain(["core35", "socket1", "node1", "rack0", "tiny0"])
    w = SimpleWriter()
    for vid, depth, x in zip(v, [5, 4, 3, 2, 1], [True, True, False, False, False]):
        w.emit_vtx(level(depth), g, vid, 1, None, x)
    assert w.emit() == (
        "      ---------------core35[1:x]\n"
        "      ------------socket1[1:x]\n"
        "      ---------node1[1:s]\n"
        "      ------rack0[1:s]\n"
        "      ---tiny0[1:s]\n"
    )
    assert w.empty() and w.emit() == ""


def test_simple_prints_needs() -> None:
    """needs is printed as given (memory0[2:x] in remove/001)."""
    g, v = chain(["memory0"])
    w = SimpleWriter()
    w.emit_vtx(level(5), g, v[0], 2, None, True)
    assert w.emit() == "      ---------------memory0[2:x]\n"


def test_pretty_simple_reverses_emission_order() -> None:
    """pretty_simple lists last-emitted first with exclusive/shared (satisfiability/003)."""
    names = [
        "core0",
        "socket0",
        "core18",
        "socket1",
        "node0",
        "core0",
        "socket0",
        "core18",
        "socket1",
        "node1",
    ]
    names += ["rack0", "tiny0"]
    depths = [5, 4, 5, 4, 3, 5, 4, 5, 4, 3, 2, 1]
    g, v = chain(names)
    w = PrettySimpleWriter()
    for vid, depth, name in zip(v, depths, names):
        w.emit_vtx(level(depth), g, vid, 1, None, name.startswith("core"))
    assert w.emit() == (
        "      ---tiny0[1:shared]\n"
        "      ------rack0[1:shared]\n"
        "      ---------node1[1:shared]\n"
        "      ------------socket1[1:shared]\n"
        "      ---------------core18[1:exclusive]\n"
        "      ------------socket0[1:shared]\n"
        "      ---------------core0[1:exclusive]\n"
        "      ---------node0[1:shared]\n"
        "      ------------socket1[1:shared]\n"
        "      ---------------core18[1:exclusive]\n"
        "      ------------socket0[1:shared]\n"
        "      ---------------core0[1:exclusive]\n"
    )


@pytest.mark.parametrize("fmt", ["simple", "pretty_simple"])
def test_find_output_is_the_text_verbatim(fmt: str) -> None:
    """find prints the emit_json string as is, and nothing when nothing matched."""
    g, v = chain(["core0", "node0"])
    w = create_writer(fmt)
    assert w.emit_json() is None
    assert format_find_output(w.emit_json()) == ""
    w.emit_vtx(level(2), g, v[0], 1, {"core": "used:0, total:1"}, True)
    w.emit_vtx(level(1), g, v[1], 1, None, True)
    text = format_find_output(w.emit_json())
    assert text.count("\n") == 2 and text.endswith("]\n")
    assert w.empty()


def test_edges_times_attrs_are_ignored() -> None:
    """The simple formats ignore edges, times and attributes."""
    g, v = chain(["node0", "core0"])
    e = g.add_edge(v[0], v[1])
    for w in (SimpleWriter(), PrettySimpleWriter()):
        w.emit_edg("", g, e)
        w.emit_tm(0, 3600)
        w.emit_attrs("queue", "batch")
        assert w.empty() and w.emit() == ""


@needs(EXPECTED)
def test_every_conformance_block_reproduces() -> None:
    """Every simple/pretty_simple block in the expected outputs is reproduced exactly."""
    nblocks = 0
    g = ResourceGraph()
    vids: dict[str, int] = {}
    for f in sorted(EXPECTED.glob("*/*.R.out")):
        blocks: list[list[tuple[str, re.Match[str]]]] = [[]]
        for line in f.read_text().splitlines(keepends=True):
            m = LINE.match(line.rstrip("\n"))
            if m:
                blocks[-1].append((line, m))
            elif blocks[-1]:
                blocks.append([])
        for blk in (b for b in blocks if b):
            pretty = blk[0][1].group(4) in ("exclusive", "shared")
            w = create_writer("pretty_simple" if pretty else "simple")
            for _, m in reversed(blk) if pretty else blk:
                vid = vids.get(m.group(2))
                if vid is None:
                    vid = vids[m.group(2)] = g.add_vertex("t", "t", m.group(2), 0)
                w.emit_vtx(m.group(1), g, vid, int(m.group(3)), None, m.group(4) in ("x", "exclusive"))
            assert w.emit() == "".join(line for line, _ in blk), f
            nblocks += 1
    assert nblocks > 1000
