"""Matches restricted to named nodes against the full walk, on one graph, in one process.

    python examples/benchmarks/match/restricted.py [NODES [REPEAT]] > restricted.txt

A graph of NODES nodes (4 racks, 2 sockets x 16 cores each, default 5,000)
gets a kube-style session: a pod group's first pod allocated on 8 named
nodes (the shim's affinity tier as an RFC 31 ``hostlist``), MatchGrow of 7
more pods (one per other named node), other pods allocated on the same 8
nodes until they are full, then reservations on them
(``allocate_orelse_reserve``).  Each operation is timed with the
restricted walk and with the full walk (``traverser.restrict = False``),
alternating, on two engines fed the same operations; the answers must be
identical.  Prints medians in ms and the ratio restricted / full.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time

from fluxlite.api import Engine
from fluxlite.jobspec import parse_constraint, parse_jobspec
from fluxlite.readers.generate import generate_graph


def _pod() -> object:
    """A pod, the slot right below the node as the kube shim asks: ``node[1] -> slot[1] -> socket[1] -> core[4]``."""
    socket = {"type": "socket", "count": 1, "with": [{"type": "core", "count": 4}]}
    node = {
        "type": "node",
        "count": 1,
        "with": [{"type": "slot", "count": 1, "label": "default", "with": [socket]}],
    }
    tasks = [{"command": ["app"], "slot": "default", "count": {"per_slot": 1}}]
    doc = {"version": 1, "resources": [node], "attributes": {"system": {"duration": 3600}}, "tasks": tasks}
    return parse_jobspec(json.dumps(doc))


def main(argv: list[str]) -> int:
    nodes = int(argv[0]) if argv else 5000
    repeat = int(argv[1]) if len(argv) > 1 else 3
    per = nodes // 4
    hosts = [
        f"node{i}" for i in (3, per + 7, per + 8, 2 * per + 1, 2 * per + 500, 3 * per, 3 * per + 1, nodes - 1)
    ]
    js = dataclasses.replace(_pod(), constraint=parse_constraint({"hostlist": [",".join(hosts)]}))
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeat):
        engines = {}
        for kind in ("restricted", "full"):
            eng = Engine(generate_graph(racks=4, nodes=per, sockets=2, cores=16), policy="low")
            eng.traverser.restrict = kind == "restricted"
            engines[kind] = eng
        first: dict[str, int] = {}
        # allocate the group's first pod, grow until the 8 nodes are full, then reserve
        for step in range(8 * 8 + 16):
            answers = []
            for kind, eng in engines.items():
                t = time.perf_counter()
                if step == 0:
                    r = eng.match(js, op="allocate_orelse_reserve")
                    first[kind] = r.jobid
                    op = "allocate"
                elif step < 8:
                    r = eng.grow(first[kind], js, fmt="simple")
                    op = "grow"
                elif step < 8 * 8:
                    r = eng.match(js, op="allocate_orelse_reserve")
                    op = "allocate"
                else:
                    r = eng.match(js, op="allocate_orelse_reserve")
                    op = "reserve"
                dt = (time.perf_counter() - t) * 1000.0
                assert r.ok, (kind, step, r.errno)
                times.setdefault((op, kind), []).append(dt)
                answers.append((r.at, r.text))
            assert answers[0] == answers[1], f"step {step}: the answers differ"
    print(
        f"{nodes} nodes ({len(engines['full'].graph)} vertices), 8 named nodes, policy low, {repeat} run(s)"
    )
    print(f"{'operation':10} {'restricted ms':>14} {'full ms':>10} {'ratio':>7} {'count':>6}")
    for op in ("allocate", "grow", "reserve"):
        a = statistics.median(times[op, "restricted"])
        b = statistics.median(times[op, "full"])
        print(f"{op:10} {a:14.3f} {b:10.3f} {a / b:7.3f} {len(times[op, 'full']):6d}")
    print("answers identical: yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
