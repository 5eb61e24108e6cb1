"""CPU time of the engine operations one deadline simulation makes, replayed on another revision.

``record``: runs ``fluxlite sim deadline bench``'s trace for one strategy (1,000
jobs, normal load, uniform types, async) and writes every state-changing engine
call it makes -- exact-item allocations (``Engine._allocate_items``: the static
allocators' whole nodes, the leak policies' cores), cancels
(``Engine.remove_job``) and partial releases (``Traverser.release_groups``) --
to a pickle, with each call's outcome.

``replay``: replays the calls, in order, on a fresh 16x8x4 machine of whatever
``fluxlite`` is importable (run it with ``PYTHONPATH`` pointing at another
checkout to time that revision), checks every outcome against the recording,
and prints the CPU seconds (``time.process_time``) spent in each kind of call,
the median over ``--repeat`` replays.  Only the engine's work is timed: not the
simulator, the allocators' choice of nodes, or the trace.

    python examples/experiments/deadline/engine_ops.py record count /tmp/count.pkl
    python examples/experiments/deadline/engine_ops.py replay /tmp/count.pkl --repeat 5
    PYTHONPATH=/path/to/main python examples/experiments/deadline/engine_ops.py replay /tmp/count.pkl
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
import time
from typing import Any


def record(strategy: str, out: str) -> None:
    from fluxlite.api import Engine
    from fluxlite.match import Traverser
    from fluxlite.sim.deadline.bench import _one

    calls: list[tuple[Any, ...]] = []
    depth = [0]
    alloc, remove, release = Engine._allocate_items, Engine.remove_job, Traverser.release_groups

    def rec(kind: str, real: Any) -> Any:
        def call(self: Any, *args: Any) -> Any:
            depth[0] += 1
            try:
                r = real(self, *args)
            except Exception as exc:
                if depth[0] == 1:
                    calls.append((kind, args, ("error", type(exc).__name__)))
                raise
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                calls.append((kind, args, ("ok", r if kind == "release" else None)))
            return r

        return call

    Engine._allocate_items = rec("alloc", alloc)  # type: ignore[method-assign]
    Engine.remove_job = rec("remove", remove)  # type: ignore[method-assign]
    Traverser.release_groups = rec("release", release)  # type: ignore[method-assign]
    r = _one(strategy, "normal", "uniform", "async", 1000, "auto")
    with open(out, "wb") as f:
        pickle.dump({"strategy": strategy, "calls": calls, "accepted": r["accepted"]}, f)
    print(f"{strategy}: {len(calls)} engine calls, {r['accepted']} accepted")


def replay_once(doc: dict[str, Any]) -> dict[str, float]:
    from fluxlite.sim.deadline.placement import Machine

    eng = Machine(16, 8, 4, strategy=doc["strategy"], backend="grid").engine
    tr = eng.traverser
    spent = {"alloc": 0.0, "remove": 0.0, "release": 0.0}
    clock = time.process_time
    for kind, args, want in doc["calls"]:
        t0 = clock()
        try:
            if kind == "alloc":
                eng._allocate_items(*args)
                got: tuple[Any, ...] = ("ok", None)
            elif kind == "remove":
                eng.remove_job(*args)
                got = ("ok", None)
            else:
                got = ("ok", tr.release_groups(*args))
        except Exception as exc:
            got = ("error", type(exc).__name__)
        spent[kind] += clock() - t0
        if got != want:
            raise SystemExit(f"replay differs from the recording at {kind}{args}: {got} != {want}")
    return spent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="record one simulation's engine calls")
    r.add_argument("strategy")
    r.add_argument("out")
    q = sub.add_parser("replay", help="replay recorded calls and time them")
    q.add_argument("recording")
    q.add_argument("--repeat", type=int, default=3)
    q.add_argument("--json", action="store_true", help="print one JSON line")
    a = p.parse_args(argv)
    if a.cmd == "record":
        record(a.strategy, a.out)
        return 0
    with open(a.recording, "rb") as f:
        doc = pickle.load(f)
    runs = [replay_once(doc) for _ in range(a.repeat)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    med["total"] = statistics.median(sum(r.values()) for r in runs)
    if a.json:
        print(json.dumps(med))
    else:
        print(doc["strategy"], " ".join(f"{k} {v:.3f}" for k, v in med.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
