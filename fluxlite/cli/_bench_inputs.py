"""Benchmark inputs shared by ``fluxlite bench match`` and its side-by-side run with Fluxion
(``bench_fluxion``): the graph and request names, generated jobspecs, and where each input is read
from (``../shared/bench`` when present, generated otherwise).  Imports nothing of the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: graph name -> nodes (2 sockets x 16 cores each)
BENCH_GRAPHS = {"L0": 128, "N1024": 1024, "N8192": 8192, "N16384": 16384}
#: request name -> nodes (0: one socket of 16 cores)
BENCH_REQUESTS = {"T1": 64, "T2": 32, "T3": 16, "T4": 8, "T5": 4, "T6": 2, "T7": 1, "T8": 0}
#: requests with or_slot alternatives (``--traverser flexible`` only; not run unless named):
#: A4 is T4's 8 nodes, each with a slot of both sockets or of one socket; A8 is
#: T8's socket with a slot of 16 or of 8 cores.  The flexible traverser prefers
#: the alternative that places more slots, and keeps the slot count (1): one
#: 16-core socket per node for A4, 8 cores of a socket for A8
BENCH_ALT_REQUESTS = {"A4": 8, "A8": 0}

_REQUEST_TAIL = """attributes:
  system:
    duration: 3600
tasks:
  - command: [ "app" ]
    slot: default
    count:
      per_slot: 1
"""
_NODE_REQUEST = (
    """version: 1
resources:
  - type: node
    count: {n}
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 2
            with:
              - type: core
                count: 16
"""
    + _REQUEST_TAIL
)
_SOCKET_REQUEST = (
    """version: 1
resources:
  - type: slot
    count: 1
    label: default
    with:
      - type: socket
        count: 1
        with:
          - type: core
            count: 16
"""
    + _REQUEST_TAIL
)


_ALT_NODE_REQUEST = """version: 1
resources:
  - type: node
    count: {n}
    with:
      - type: slot
        count: 1
        label: both
        with:
          - type: socket
            count: 2
            with:
              - type: core
                count: 16
      - type: slot
        count: 1
        label: one
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 16
""" + _REQUEST_TAIL.replace("slot: default", "slot: one")
_ALT_SOCKET_REQUEST = """version: 1
resources:
  - type: socket
    count: 1
    with:
      - type: slot
        count: 1
        label: whole
        with:
          - type: core
            count: 16
      - type: slot
        count: 1
        label: half
        with:
          - type: core
            count: 8
""" + _REQUEST_TAIL.replace("slot: default", "slot: half")


def _graph_source(name: str, bench_dir: Path | None, fmt: str, tmp: Path) -> tuple[str, str]:
    """(source path or 'generate', reader format) for one benchmark graph."""
    if fmt == "jgf":
        if bench_dir is not None and (bench_dir / "jgf" / f"{name}.json").is_file():
            return str(bench_dir / "jgf" / f"{name}.json"), "jgf"
        # write the JGF of the (loaded or generated) graph once, outside the measured process
        out = tmp / f"{name}.json"
        if not out.exists():
            from fluxlite.readers import load_graph
            from fluxlite.readers.generate import generate_graph
            from fluxlite.readers.jgf import graph_to_jgf

            grug = bench_dir / "graphs" / f"{name}.graphml" if bench_dir is not None else None
            if grug is not None and grug.is_file():
                g = load_graph(grug, format="grug")
            else:
                g = generate_graph(nodes=BENCH_GRAPHS[name], sockets=2, cores=16)
            out.write_bytes(graph_to_jgf(g))
            del g
        return str(out), "jgf"
    if bench_dir is not None and (bench_dir / "graphs" / f"{name}.graphml").is_file():
        return str(bench_dir / "graphs" / f"{name}.graphml"), "grug"
    return "generate", "generate"


def request_files(names: Sequence[str], bench_dir: Path | None, tmp: Path) -> list[tuple[str, str]]:
    out = []
    for name in names:
        if name in BENCH_ALT_REQUESTS:
            n = BENCH_ALT_REQUESTS[name]
            path = tmp / f"{name}.yaml"
            path.write_text(_ALT_NODE_REQUEST.format(n=n) if n else _ALT_SOCKET_REQUEST)
            out.append((name, str(path)))
            continue
        path = bench_dir / "jobspecs" / f"{name}.yaml" if bench_dir is not None else None
        if path is None or not path.is_file():
            n = BENCH_REQUESTS[name]
            path = tmp / f"{name}.yaml"
            path.write_text(_NODE_REQUEST.format(n=n) if n else _SOCKET_REQUEST)
        out.append((name, str(path)))
    return out
