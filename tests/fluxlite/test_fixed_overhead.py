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
    eng.traverser.prune.add("cluster", "memory")  # a filter name is known too
    assert _unknown_type(eng, MEMORY.resources, memo) is None


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


# ------------------------------------------------------------------ primed requests kept per jobspec
LABELLED = """version: 1
resources:
  - type: node
    count: 1
    label: big
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 1
            exclusive: true
            with:
              - type: core
                count: 2
attributes:
  system:
    duration: 60
tasks:
  - command: [app]
    slot: default
    count:
      per_slot: 1
"""


def _fresh(eng: Engine, resources: object) -> tuple[dict, dict, dict]:
    """What priming gives without any kept answer."""
    from fluxlite.match.labels import labels_by_type

    tr = eng.traverser
    dfv: dict = {}
    ud: dict = {}
    saved = set(tr.exclusive_types)
    tr.prime_jobspec(resources, dfv, ud)
    tr.exclusive_types = saved
    return dfv, ud, labels_by_type(resources)


@pytest.mark.parametrize("policy", ["first", "low", "lonodex"])
def test_reused_jobspec_matches_like_fresh_ones(policy: str) -> None:
    """One jobspec object matched again and again gives, match by match, what a freshly parsed copy gives."""
    from fluxlite.jobspec import parse_jobspec

    def engine() -> Engine:
        return Engine(generate_graph(nodes=3, sockets=2, cores=2), policy=policy)

    reused, fresh = engine(), engine()
    js = parse_jobspec(LABELLED)
    for op in ("allocate", "allocate", "allocate_orelse_reserve", "satisfiability", "allocate", "allocate"):
        a = reused.match(js, op=op, fmt="jgf")
        b = fresh.match(parse_jobspec(LABELLED), op=op, fmt="jgf")
        assert (a.ok, a.jobid, a.at, a.text, a.errno) == (b.ok, b.jobid, b.at, b.text, b.errno)
        if a.ok and op != "satisfiability":
            assert '"label": "big"' in a.text  # the labels ride along on the kept path too
    assert reused.traverser.exclusive_types == fresh.traverser.exclusive_types  # restored after each match


def test_kept_priming_equals_fresh_and_callers_get_copies() -> None:
    """The kept answer equals a fresh priming, and what a caller changes never reaches the kept copy."""
    from fluxlite.jobspec import parse_jobspec

    eng = _engine()
    tr = eng.traverser
    res = parse_jobspec(LABELLED).resources
    first = tr._primed(res)
    assert first == _fresh(eng, res)
    first[0]["core"] = 999
    first[1].clear()
    tr.exclusive_types = set(tr.base_exclusive_types)  # as run() leaves it after a match
    again = tr._primed(res)
    assert again == _fresh(eng, res)
    assert "socket" in tr.exclusive_types  # the request's exclusive type, added on the kept path as well


def test_mutable_request_trees_are_primed_every_time() -> None:
    """A request tree held in lists can change between matches: it is never answered from a kept copy."""
    from dataclasses import replace

    from fluxlite.jobspec import parse_jobspec

    eng = _engine()
    tr = eng.traverser
    js = parse_jobspec(LABELLED)
    tree = list(js.resources)
    assert tr._primed(tree)[0] == _fresh(eng, tree)[0]
    node = tree[0]
    tree[0] = replace(node, count=replace(node.count, min=2, max=2))
    assert tr._primed(tree)[0] == _fresh(eng, tree)[0]
    assert tr._primed(tree)[0]["core"] == 2 * _fresh(eng, js.resources)[0]["core"]


def test_new_pruning_types_reprime() -> None:
    """Once a type becomes a pruning type, a kept jobspec asking for it is primed again and counts it."""
    eng = _engine()
    tr = eng.traverser
    res = MEMORY.resources
    assert "memory" not in tr._primed(res)[0]
    tr.prune.add("cluster", "memory")
    assert tr._primed(res)[0].get("memory") == 1
    assert tr._primed(res) == _fresh(eng, res)


# ------------------------------------------------------------------ cancel of leaves sharing their dicts
def _per_vertex(eng: Engine) -> list[tuple]:
    """Every leaf's own state as values (shared dicts and private copies compare alike)."""
    tr = eng.traverser
    cols = (tr.vspans, tr.allocs, tr.resvs, tr.tags, tr.xspans)
    return [tuple(None if c[v] is None else sorted(c[v].items()) for c in cols) for v in eng.graph.vertices()]


@pytest.mark.parametrize("seed", range(6))
def test_cancel_in_any_order_restores_the_state(seed: int) -> None:
    """Allocations and reservations of several shapes, cancelled in a random order, leave what was there before."""
    import random

    from tests.fluxlite.helpers import CORE, NODE, SOCKET, TWO_NODES, observable, recount_errors

    rnd = random.Random(seed)
    eng = Engine(generate_graph(nodes=4, sockets=2, cores=4), policy=rnd.choice(["first", "low", "high"]))
    times = [0, 1800, 3600, 5400, 7200, 10800, 14400]
    shapes = [CORE, SOCKET, NODE, TWO_NODES]
    for _ in range(rnd.randrange(0, 4)):
        eng.match(rnd.choice(shapes), op="allocate")
    before = (observable(eng, times), _per_vertex(eng))
    later = []
    for _ in range(rnd.randrange(3, 14)):
        r = eng.match(rnd.choice(shapes), op=rnd.choice(["allocate", "allocate_orelse_reserve"]))
        if r.ok:
            later.append(r.jobid)
    assert later
    rnd.shuffle(later)
    for j in later:
        eng.cancel(j)
        assert not recount_errors(eng, times)
    assert (observable(eng, times), _per_vertex(eng)) == before


# ------------------------------------------------------------------ std::sort over plain keys
@pytest.mark.parametrize("seed", range(40))
def test_keyed_std_sort_moves_like_the_comparator_one(seed: int) -> None:
    """std_sort_keyed leaves items in exactly the order std_sort with the matching comparator does (ties too)."""
    import random

    from fluxlite.match._scoring import std_sort, std_sort_keyed

    rnd = random.Random(seed)
    n = rnd.choice([2, 3, 16, 17, 40, 100, 257, 1000])
    distinct = rnd.choice([1, 2, 5, n])
    items = [(rnd.randrange(distinct), i) for i in range(n)]  # (score, identity)
    for descending in (False, True):
        want = list(items)
        std_sort(want, (lambda a, b: a[0] > b[0]) if descending else (lambda a, b: a[0] < b[0]))
        got = list(items)
        std_sort_keyed([-s for s, _ in got] if descending else [s for s, _ in got], got)
        assert got == want


@pytest.mark.parametrize("seed", range(10))
def test_keyed_heap_fallback_moves_like_the_comparator_one(seed: int) -> None:
    """The heap sort introsort falls back to (deep recursion) gives the same order as its comparator twin."""
    import random

    from fluxlite.match._scoring import _k_partial_sort, _partial_sort

    rnd = random.Random(seed)
    n = rnd.randrange(2, 200)
    items = [(rnd.randrange(rnd.choice([2, 7, n])), i) for i in range(n)]
    middle = rnd.randrange(1, n + 1)
    want = list(items)
    _partial_sort(want, 0, middle, n, lambda a, b: a[0] < b[0])
    got = list(items)
    keys = [s for s, _ in got]
    _k_partial_sort(keys, got, 0, middle, n)
    assert got == want
    assert keys == [s for s, _ in got]


# ------------------------------------------------------------------ a vertex's own timeline
def test_avail_during_matches_a_plain_sweep() -> None:
    """Free units over a window (one span fast path, several spans) equal a sweep over every instant."""
    import random

    from fluxlite.match._vplan import avail_during

    rnd = random.Random(7)
    for _ in range(3000):
        size = rnd.randrange(1, 9)
        spans = {}
        for sid in range(rnd.choice([1, 1, 1, 2, 3])):
            s = rnd.randrange(0, 30)
            spans[sid] = (s, s + rnd.randrange(1, 15), rnd.randrange(0, size + 1))
        at, dur = rnd.randrange(0, 40), rnd.randrange(1, 15)
        used = max(sum(a for s, e, a in spans.values() if s <= t < e) for t in range(at, at + dur))
        assert avail_during(spans, size, at, dur) == size - used
