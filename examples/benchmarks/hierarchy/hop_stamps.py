"""Where a nested MatchGrow's time goes between the levels: timestamps at each step, per hop.

    python examples/benchmarks/hierarchy/hop_stamps.py [--bench-dir ../shared/bench] [--requests T8,T1]
        [--reps 15] [--sync-attach]

Starts the five levels of ``fluxlite bench hierarchy`` (L0 on ``graphs/L0.graphml``; L1..L4 each
lease from their parent and are filled) as real instance processes on Unix sockets, each with a
``sitecustomize`` module (written to a temporary directory put first on ``PYTHONPATH``) that wraps
a few methods to record ``time.perf_counter()`` at their entry and exit: the secret interceptor
(``icpt``: gRPC has received the call), ``InstanceServicer.MatchGrow`` (``MG``: the handler thread
runs it), ``Instance.match_grow`` (``mg``), and the level's call to its parent
(``InstanceClient._call``, ``call``).  Linux's ``perf_counter`` is ``CLOCK_MONOTONIC``, one clock for
every process on the machine, so the stamps of two processes compare.  The leaf then grows its job by
each request ``--reps`` times (3 more unmeasured first; each grow shrunk back) and the script prints,
per request, the median of each segment: for instance ``L3 call0 -> L2 icpt`` is the level's request
on its way to the parent (client send, the parent's poller), ``L2 MG1 -> L3 call1`` the answer on its
way back (serialisation, the bytes, the client's parse), ``L2 icpt -> MG0`` gRPC's hand-over to a
handler thread.  What ``fluxlite bench hierarchy`` calls a level's communication is the sum of the
segments outside ``mg0 .. mg1`` of the parent.  Loopback only; the run directory is a temporary one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from _stamped_tree import stamped_tree  # (beside this script)

from hierarchy.bench import FILLER, LEVELS

#: written as sitecustomize.py into the instances' first PYTHONPATH entry
STAMPER = r'''
import functools, json, os, signal, sys, time
REC = []
def _wrap(cls, name, tag, only=None):
    f = getattr(cls, name)
    @functools.wraps(f)
    def w(*a, **k):
        if only is not None and a[1] != only:
            return f(*a, **k)
        REC.append((tag + "0", time.perf_counter()))
        try:
            return f(*a, **k)
        finally:
            REC.append((tag + "1", time.perf_counter()))
    setattr(cls, name, w)
if "--name" in sys.argv:
    from hierarchy import _client, _service
    from hierarchy.instance import Instance
    _wrap(_client.InstanceClient, "_call", "call", only="MatchGrow")
    _wrap(_service.InstanceServicer, "MatchGrow", "MG")
    _wrap(_service.SecretInterceptor, "intercept_service", "icpt")
    _wrap(Instance, "match_grow", "mg")
    def _dump(*_):
        out = os.environ["HOP_STAMPS_OUT"]
        name = sys.argv[sys.argv.index("--name") + 1]
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(REC, f)
    signal.signal(signal.SIGUSR1, _dump)
'''


def _segments(stamps: dict[str, list[tuple[str, float]]], t0: float, t1: float) -> dict[str, float]:
    """The segments of one grow (client call at t0, answer at t1) from each level's first stamps in it."""
    ev = {}
    for lv in LEVELS:
        d: dict[str, float] = {}
        for k, t in stamps[lv]:
            if t0 <= t <= t1:
                d.setdefault(k, t)
        ev[lv] = d
    seg: dict[str, float] = {"client -> L4 icpt": ev["L4"]["icpt0"] - t0}
    order = LEVELS[::-1]  # L4 .. L0
    for i, lv in enumerate(order):
        e = ev[lv]
        seg[f"{lv} icpt -> MG0 (to a handler thread)"] = e["MG0"] - e["icpt0"]
        seg[f"{lv} MG0 -> mg0 (identity)"] = e["mg0"] - e["MG0"]
        if lv != "L0":
            up = order[i + 1]
            seg[f"{lv} mg0 -> call0 (local match, records)"] = e["call0"] - e["mg0"]
            seg[f"{lv} call0 -> {up} icpt (request)"] = ev[up]["icpt0"] - e["call0"]
            seg[f"{up} MG1 -> {lv} call1 (answer)"] = e["call1"] - ev[up]["MG1"]
            seg[f"{lv} call1 -> mg1 (after the answer)"] = e["mg1"] - e["call1"]
        else:
            seg["L0 mg0 -> mg1 (match, encode)"] = e["mg1"] - e["mg0"]
        seg[f"{lv} mg1 -> MG1 (reply message)"] = e["MG1"] - e["mg1"]
    seg["L4 MG1 -> client (answer)"] = t1 - ev["L4"]["MG1"]
    seg["total"] = t1 - t0
    return seg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--requests", default="T8,T1")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sync-attach", action="store_true", help="every level attaches before answering")
    a = ap.parse_args()
    jobspecs = a.bench_dir / "jobspecs"
    reqs = a.requests.split(",")
    js = {n: (jobspecs / f"{n}.yaml").read_bytes() for n in {*reqs, *FILLER.values()}}
    grows: list[tuple[str, float, float]] = []
    root = Path(__file__).resolve().parents[3]
    with stamped_tree(STAMPER, "HOP_STAMPS_OUT", a.bench_dir, root, js, sync_attach=a.sync_attach, prefix="hops-") as (
        clients,
        job,
        collect,
    ):
        for name in reqs:
            for rep in range(3 + a.reps):
                t0 = time.perf_counter()
                g = clients["L4"].match_grow(job, js[name])
                t1 = time.perf_counter()
                for lv in LEVELS:
                    clients[lv].info()  # (waits for any attach after the answer)
                clients["L4"].shrink(job, jgf=g.jgf)
                if rep >= 3:
                    grows.append((name, t0, t1))
        stamps = collect()
    mode = "sync attach" if a.sync_attach else "deferred attach (default)"
    print(f"nested MatchGrow L4 -> L0 and back, {mode}, {a.reps} grows per request, medians in ms")
    for name in reqs:
        segs = [_segments(stamps, t0, t1) for n, t0, t1 in grows if n == name]
        print(f"{name}:")
        for key in segs[0]:
            print(f"  {key:<44} {statistics.median(s[key] for s in segs) * 1e3:8.3f}")


if __name__ == "__main__":
    main()
