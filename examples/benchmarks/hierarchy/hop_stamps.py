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
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from hierarchy import InstanceClient, read_secret_file
from hierarchy._launch import TreeSpec, owner_credential, start_tree
from hierarchy.bench import FILLER, LEVELS, fill_levels, nested_nodes

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
    with tempfile.TemporaryDirectory(prefix="hops-", dir="/tmp") as tmp:
        run_dir, site = Path(tmp) / "run", Path(tmp) / "site"
        run_dir.mkdir()
        site.mkdir()
        (site / "sitecustomize.py").write_text(STAMPER)
        root = str(Path(__file__).resolve().parents[3])
        os.environ["PYTHONPATH"] = os.pathsep.join([str(site), root, os.environ.get("PYTHONPATH", "")])
        os.environ["HOP_STAMPS_OUT"] = tmp
        spec = TreeSpec(nodes=nested_nodes(a.bench_dir), transport="unix", policy="first", child_grace=600.0, rpc_timeout=120.0,
                        extra_args=["--sync-attach"] if a.sync_attach else [])  # fmt: skip
        tree = start_tree(spec, run_dir)
        secret, cred = read_secret_file(run_dir / "secret"), owner_credential(run_dir)
        clients = {r["name"]: InstanceClient(r["address"], secret, timeout=120.0, credential=cred)
                   for r in tree.records}  # fmt: skip
        grows: list[tuple[str, float, float]] = []
        try:
            job = fill_levels(clients, js)
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
            for r in tree.records:
                os.kill(r["pid"], signal.SIGUSR1)
            stamps: dict[str, list[tuple[str, float]]] = {}
            deadline = time.monotonic() + 10
            while len(stamps) < len(LEVELS) and time.monotonic() < deadline:
                for lv in LEVELS:
                    f = Path(tmp) / f"{lv}.json"
                    if lv not in stamps and f.exists():
                        with contextlib.suppress(ValueError):  # (still being written)
                            stamps[lv] = [tuple(x) for x in json.loads(f.read_text())]  # type: ignore[misc]
                time.sleep(0.05)
        finally:
            for c in clients.values():
                c.close()
            tree.teardown()
    mode = "sync attach" if a.sync_attach else "deferred attach (default)"
    print(f"nested MatchGrow L4 -> L0 and back, {mode}, {a.reps} grows per request, medians in ms")
    for name in reqs:
        segs = [_segments(stamps, t0, t1) for n, t0, t1 in grows if n == name]
        print(f"{name}:")
        for key in segs[0]:
            print(f"  {key:<44} {statistics.median(s[key] for s in segs) * 1e3:8.3f}")


if __name__ == "__main__":
    main()
