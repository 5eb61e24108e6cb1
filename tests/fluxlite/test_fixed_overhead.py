"""What a small match pays besides its walk: each shortcut kept for speed gives the answer it replaces.

The jobspec file reader, the types ``fluxlite query`` accepts (kept while the
graph is unchanged), and the other per-match caches are checked against the
uncached answers, and against changes that must invalidate them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fluxlite.api import Engine
from fluxlite.cli.query import _known_types, _unknown_type
from fluxlite.jobspec import load_jobspec
from fluxlite.jobspec._parse import _read_bytes
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec

MEMORY = jobspec(
    "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: memory\n        count: 1\n"
)


# ------------------------------------------------------------------ reading jobspec files
def test_read_bytes_reads_whole_files_of_any_size(tmp_path: Path) -> None:
    """Small, empty, and several-chunk files come back byte for byte."""
    for size in (0, 1, 700, 65535, 65536, 65537, 300_001):
        f = tmp_path / f"f{size}"
        data = os.urandom(size)
        f.write_bytes(data)
        assert _read_bytes(str(f)) == data


def test_read_bytes_reads_a_pipe_to_its_end(tmp_path: Path) -> None:
    """A FIFO written in two parts is read until the writer closes it (short reads are not the end)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the writer: two writes with a pause, so the reader sees a short first read
        try:
            fd = os.open(fifo, os.O_WRONLY)
            os.write(fd, b"x" * 100)
            time.sleep(0.05)
            os.write(fd, b"y" * 100)
            os.close(fd)
        finally:
            os._exit(0)
    try:
        assert _read_bytes(str(fifo)) == b"x" * 100 + b"y" * 100
    finally:
        os.waitpid(pid, 0)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    """A missing file and a directory fail as bad input naming the path and the reason."""
    from fluxlite.errors import JobspecError

    with pytest.raises(JobspecError, match="No such file"):
        load_jobspec(tmp_path / "missing.yaml")
    with pytest.raises(JobspecError, match="Is a directory"):
        load_jobspec(tmp_path)


# ------------------------------------------------------------------ types fluxlite query accepts
def _engine() -> Engine:
    return Engine(generate_graph(nodes=2, sockets=1, cores=2), policy="first")


def test_known_types_follow_the_graph() -> None:
    """A type added to the graph becomes known at once, and unknown again once removed."""
    eng = _engine()
    memo: list[object] = []
    assert _unknown_type(eng, MEMORY.resources, memo) == "memory"
    first = _known_types(eng, memo)
    assert _known_types(eng, memo) is first  # unchanged graph: the kept set
    g = eng.graph
    v = g.add_vertex("memory", "memory", "memory0", 0, paths={"containment": "/cluster0/memory0"})
    assert _unknown_type(eng, MEMORY.resources, memo) is None
    g.remove_vertices([v])
    assert _unknown_type(eng, MEMORY.resources, memo) == "memory"


def test_known_types_follow_the_engine_and_the_filters() -> None:
    """Another engine (another graph) or other filter names are never answered from the kept set."""
    memo: list[object] = []
    eng = _engine()
    assert _unknown_type(eng, MEMORY.resources, memo) == "memory"
    other = Engine(generate_graph(nodes=1, sockets=1, cores=1, memory=4), policy="first")
    assert _unknown_type(other, MEMORY.resources, memo) is None
    assert _unknown_type(eng, MEMORY.resources, memo) == "memory"
    with_filter = Engine(
        generate_graph(nodes=1, sockets=1, cores=1), policy="first", prune_filters="ALL:memory"
    )
    assert _unknown_type(with_filter, MEMORY.resources, memo) is None
    # every answer equals the one computed afresh
    for e in (eng, other, with_filter):
        assert _known_types(e, memo) == _known_types(e, [])
