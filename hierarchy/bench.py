"""``fluxlite bench hierarchy``: the nested MatchGrow experiment and the single-level comparison.

**Nested** (five real instance processes on this machine, Unix sockets by
default): L0 loads ``graphs/L0.graphml`` (128 nodes, 2 sockets x 16 cores);
L1..L4 obtain 8, 4, 2 and 1 nodes from their parent by MatchAllocate
(jobspecs T4..T7) and are then filled completely (a filler job at L1..L3,
the growing job at L4).  The leaf grows its job by T1..T8 (64, 32, 16, 8, 4,
2, 1 nodes and one 16-core socket); each request climbs to L0, which
matches, and comes back down through four attach+update steps.  After each
repetition the leaf shrinks the grown subgraph, which goes back up to L0, so
every repetition starts from the same state.  Per level and request size
the medians of:

* match - the level's local match (failing at L4..L1, succeeding at L0);
* communication - the round trip of the call to the parent as seen by the
  level, minus the parent's own server time (gRPC, protobuf, the JGF bytes);
  ``client`` is the benchmark's own call to L4;
* attach+update - ``Engine.attach`` plus ``Engine.update_allocate`` at the
  level;

and least-squares fits ``t = slope*n + intercept`` (n = vertices + edges of
the subgraph) of communication and attach+update per level.

**Single level** (separate processes, for peak RSS): on the 1-node graph
``graphs/L4.graphml``, MatchAllocate of one socket (T8) vs MatchGrow of a
running job by one socket, and the add+update of that socket's subgraph
received from a parent; each with the worker's peak RSS.

Output: the tables on standard output and in ``summary.txt``, raw and
summary CSV files and PNG plots (matplotlib, the ``bench`` extra) in
``--out`` (default ``bench-out/hierarchy``).

**Against a baseline** (``--baseline REF``): the nested experiment of this
checkout and of git revision ``REF`` (``git archive`` into a temporary
directory), each in fresh processes with its own tree on ``PYTHONPATH``,
taking turns for ``--rounds`` rounds (the order alternates), so both are
measured in the same run on the same machine.  ``compare.txt`` gives, per
tree, the medians over all rounds, the ratios this/baseline, the ratio of
each round's two runs (their range says whether the run resolves the
change) and the load average seen during the run.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.errors import FluxliteError, InputError
from fluxlite.revision import extract_revision

__all__ = ["fit_line", "main"]

LEVELS = ["L0", "L1", "L2", "L3", "L4"]
#: request name -> nodes (0 = one socket)
REQUESTS = {"T1": 64, "T2": 32, "T3": 16, "T4": 8, "T5": 4, "T6": 2, "T7": 1, "T8": 0}
#: what each level L1..L4 asks its parent for, and the filler that makes it full
LEVEL_JOBSPEC = {"L1": "T4", "L2": "T5", "L3": "T6", "L4": "T7"}
FILLER = {"L1": "T5", "L2": "T6", "L3": "T7", "L4": "T7"}


def generate_inputs(dest: Path) -> Path:
    """Benchmark inputs of the published shapes, generated into ``dest`` (returned): ``graphs/L0.graphml``
    (128 nodes) and ``graphs/L4.graphml`` (1 node) as GRUG recipes of cluster -> node -> socket[2] ->
    core[16], and ``jobspecs/T1..T8.yaml`` (64 .. 1 nodes of that shape, and one 16-core socket) -
    what ``fluxlite bench match`` generates for the same names."""
    from fluxlite.cli.bench import request_files
    from fluxlite.cli.graph import recipe_to_graphml
    from fluxlite.readers.generate import generate_recipe

    (dest / "graphs").mkdir(parents=True, exist_ok=True)
    (dest / "jobspecs").mkdir(exist_ok=True)
    for name, nodes in (("L0", 128), ("L4", 1)):
        recipe = generate_recipe(nodes=nodes, sockets=2, cores=16)
        (dest / "graphs" / f"{name}.graphml").write_text(recipe_to_graphml(recipe))
    request_files(list(REQUESTS), None, dest / "jobspecs")
    return dest


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares ``y = slope*x + intercept``; returns (slope, intercept, R²)."""
    import numpy as np

    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if len(x) < 2 or np.ptp(x) == 0:
        return 0.0, float(y.mean()) if len(y) else 0.0, 0.0
    a = np.vstack([x, np.ones_like(x)]).T
    (slope, intercept), *_ = np.linalg.lstsq(a, y, rcond=None)
    pred = slope * x + intercept
    ss_res = float(((y - pred) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return float(slope), float(intercept), r2


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------------- nested
def nested_nodes(bench: Path) -> list[Any]:
    """The five levels as tree nodes (:class:`hierarchy._launch.TreeNode`): L0 on ``graphs/L0.graphml``,
    each of L1..L4 leasing ``LEVEL_JOBSPEC`` from the level above."""
    from hierarchy._launch import TreeNode

    graphs, jobspecs = bench / "graphs", bench / "jobspecs"
    nodes = [TreeNode("L0", 0, None, graph=graphs / "L0.graphml", graph_format="grug")]
    for i, lv in enumerate(LEVELS[1:], start=1):
        nodes.append(TreeNode(lv, i, LEVELS[i - 1], jobspec=jobspecs / f"{LEVEL_JOBSPEC[lv]}.yaml"))
    return nodes


def fill_levels(clients: dict[str, Any], js: dict[str, bytes]) -> int:
    """Fill L1..L3 with their filler jobs and L4 with the job that grows (``FILLER``); that job's id."""
    for lv in LEVELS[1:4]:
        clients[lv].match_allocate(js[FILLER[lv]])
    return int(clients["L4"].match_allocate(js[FILLER["L4"]]).jobid)


def run_nested(
    bench: Path,
    reps: int,
    warmup: int,
    transport: str,
    policy: str,
    requests: list[str],
    out: Any,
    sync_attach: bool = False,
    state: bool = False,
) -> list[dict[str, Any]]:
    """Run the five-level experiment; returns one row per (request, repetition, level).

    With ``sync_attach`` every level attaches before answering, so each
    level's attach+update is measured alone; otherwise L1..L3 attach after
    answering (the instances' default) and only the leaf's attach is on the
    critical path.  With ``state`` every instance keeps a state file (in
    the run's temporary directory), as one that must survive a restart
    does: each change is then also written to it.
    """
    mode = "sync" if sync_attach else "deferred"
    from hierarchy import InstanceClient, read_secret_file
    from hierarchy._launch import TreeSpec, owner_credential, start_tree

    jobspecs = bench / "jobspecs"
    js = {name: (jobspecs / f"{name}.yaml").read_bytes() for name in REQUESTS}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="flb-", dir="/tmp") as tmp:
        run_dir = Path(tmp)
        spec = TreeSpec(
            nodes=nested_nodes(bench),
            transport=transport,
            policy=policy,
            child_grace=600.0,
            rpc_timeout=120.0,
            extra_args=["--sync-attach"] if sync_attach else [],
            state=state,
        )
        t0 = time.perf_counter()
        tree = start_tree(spec, run_dir)
        out.write(
            f"[{mode} attach] started L0..L4 as processes in {time.perf_counter() - t0:.1f}s "
            f"({transport} transport{', state files on' if state else ''})\n"
        )
        secret = read_secret_file(run_dir / "secret")
        cred = owner_credential(run_dir)
        clients = {
            r["name"]: InstanceClient(r["address"], secret, timeout=120.0, credential=cred)
            for r in tree.records
        }
        try:
            job = fill_levels(clients, js)
            for lv in LEVELS[1:]:
                free = clients[lv].stat()["free"].get("core", 0)
                if free:
                    raise InputError(f"benchmark setup: {lv} still has {free} free cores")
            l0_free = clients["L0"].stat()["free"]
            leaf = clients["L4"]
            for name in requests:
                for rep in range(warmup + reps):
                    called = time.time()
                    tg = time.perf_counter()
                    g = leaf.match_grow(job, js[name])
                    # the caller has its JGF (written here from the columns when the client asked for them)
                    have_s = time.perf_counter() - tg
                    # a level that attached after answering reports that time in Info (which waits for it)
                    late = {
                        t.instance: clients[t.instance].info()["last_deferred"]
                        for t in g.timings
                        if t.deferred
                    }
                    ts = time.perf_counter()
                    s = leaf.shrink(job, jgf=g.jgf)
                    shrink_ms = (time.perf_counter() - ts) * 1e3  # the whole way up, hand-backs included
                    if s.pending or s.returned == 0:
                        raise InputError(f"benchmark reset failed after {name}: {s}")
                    if rep < warmup:
                        continue
                    tm = g.timings  # L4, L3, L2, L1, L0
                    if [t.instance for t in tm] != LEVELS[::-1]:
                        raise InputError(
                            f"{name}: expected the grow to climb to L0, got {[t.instance for t in tm]}"
                        )
                    n = g.vertices + g.edges
                    # when the leaf serves its next call: after its answer, or after its own attach
                    # when it answered first (a grow of its own job from above, deferred mode)
                    ready = g.rtt_s
                    if tm[0].deferred:
                        ready = max(ready, late[tm[0].instance]["done_at"] - called)
                    for k, t in enumerate(tm):
                        comm = t.upstream_s - tm[k + 1].server_s if k + 1 < len(tm) else float("nan")
                        au = late[t.instance]["attach_update_s"] if t.deferred else t.attach_update_s
                        rows.append(
                            {
                                "mode": mode,
                                "request": name,
                                "nodes": REQUESTS[name],
                                "rep": rep - warmup,
                                "level": t.instance,
                                "n": n,
                                "vertices": g.vertices,
                                "edges": g.edges,
                                "match_ms": t.match_s * 1e3,
                                "comm_ms": comm * 1e3,
                                "attach_update_ms": au * 1e3 if k + 1 < len(tm) else float("nan"),
                                "deferred": t.deferred,
                                "deferred_cpu_ms": late[t.instance]["cpu_s"] * 1e3
                                if t.deferred
                                else float("nan"),
                                "server_ms": t.server_s * 1e3,
                                "upstream_ms": t.upstream_s * 1e3,
                                "rtt_ms": g.rtt_s * 1e3,
                                "client_comm_ms": (g.rtt_s - tm[0].server_s) * 1e3,
                                "have_jgf_ms": have_s * 1e3,
                                "shrink_ms": shrink_ms,
                                "ready_ms": ready * 1e3,
                            }
                        )
                out.write(f"  {mode}: {name} x {reps} done\n")
                out.flush()
            if clients["L0"].stat()["free"] != l0_free:
                raise InputError("benchmark: L0 did not get everything back")
            for lv in LEVELS:
                errs = clients[lv].info(recount=True)["recount_errors"]
                if errs:
                    raise InputError(f"benchmark: {lv} aggregates differ from a recount: {errs[:3]}")
        finally:
            for c in clients.values():
                c.close()
            tree.teardown()
    return rows


# ---------------------------------------------------------------------- single level
def _single_worker(mode: str, bench: Path, reps: int) -> dict[str, Any]:
    """One single-level measurement in this process (see the module docstring).

    Times ``reps`` operations (each followed by an untimed reset), then
    measures one more under tracemalloc (its peak of Python allocations);
    the process's peak RSS covers the interpreter, the graph and all runs.
    """
    import tracemalloc

    from fluxlite.api import Engine
    from fluxlite.jobspec import load_jobspec
    from fluxlite.readers import graph_to_jgf, load_graph
    from hierarchy._jgfsub import jgf_counts

    t8 = load_jobspec(bench / "jobspecs" / "T8.yaml")
    graph = bench / "graphs" / "L4.graphml"
    eng = Engine.from_file(graph, format="grug", policy="first")
    times: dict[str, list[float]] = {"match": [], "attach": []}
    state: dict[str, Any] = {}

    if mode == "allocate":

        def op() -> str:
            t0 = time.perf_counter()
            r = eng.allocate(t8, fmt="jgf")
            times["match"].append(time.perf_counter() - t0)
            state["jobid"] = r.jobid
            return r.text

        def reset() -> None:
            eng.cancel(state["jobid"])

    elif mode == "grow":
        job = eng.allocate(t8, fmt="jgf").jobid

        def op() -> str:
            t0 = time.perf_counter()
            r = eng.grow(job, t8, fmt="jgf")
            times["match"].append(time.perf_counter() - t0)
            state["sock"] = _socket_of(r.text)
            return r.text

        def reset() -> None:
            eng.shrink(job, paths=[state["sock"]])

    elif mode == "attach":
        # the socket a parent would send, and a child whose graph is the rest of the node, all allocated
        # (whichever socket the policy picks for the grow on this graph)
        sub = eng.grow(eng.allocate(t8, fmt="jgf").jobid, t8, fmt="jgf").text
        sock = _socket_of(sub)
        rest = Engine.from_file(graph, format="grug", policy="first")
        rest.remove_subgraph(path=sock)
        child = Engine(load_graph(graph_to_jgf(rest.graph), format="jgf"), policy="first")
        cjob = child.allocate(t8, fmt="jgf").jobid

        def op() -> str:
            t0 = time.perf_counter()
            state["new"] = child.attach(sub, allocate_to=cjob, duration=3600)
            t1 = time.perf_counter()
            times["attach"].append(t1 - t0)  # attach + update, one parse
            return sub

        def reset() -> None:
            # by path: below the node, vertices carry rank -1 (as Fluxion writes them)
            child.shrink(cjob, paths=[sock])
            child.remove_subgraph(path=sock)

    else:
        raise InputError(f"unknown single-level mode {mode!r}")
    text = ""
    for _ in range(reps):
        text = op()
        reset()
    tracemalloc.start()
    op()
    _, op_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    reset()
    v, e = jgf_counts(text)
    return {
        "mode": mode,
        "reps": reps,
        "n": v + e,
        "match_ms": _median(times["match"][:reps]) * 1e3 if times["match"] else None,
        "attach_ms": _median(times["attach"][:reps]) * 1e3 if times["attach"] else None,
        "op_peak_kb": op_peak / 1024.0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def _socket_of(jgf: str) -> str:
    import orjson

    for node in orjson.loads(jgf)["graph"]["nodes"]:
        md = node["metadata"]
        if md["type"] == "socket":
            return str(md["paths"]["containment"])
    raise InputError("no socket in the subgraph")


def run_single(bench: Path, reps: int) -> list[dict[str, Any]]:
    """Each single-level mode in its own process (peak RSS is per process)."""
    out = []
    for mode in ("baseline", "allocate", "grow", "attach"):
        if mode == "baseline":
            code = (
                "import resource, json; from fluxlite.api import Engine; import hierarchy.instance; "
                f"Engine.from_file({str(bench / 'graphs' / 'L4.graphml')!r}, format='grug'); "
                "print(json.dumps({'mode': 'baseline', 'peak_rss_mb': "
                "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))"
            )
            cmd = [sys.executable, "-c", code]
        else:
            cmd = [
                sys.executable,
                "-m",
                "hierarchy.bench",
                "--worker",
                mode,
                "--bench-dir",
                str(bench),
                "--reps",
                str(reps),
            ]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise InputError(f"single-level worker {mode} failed: {r.stderr.strip().splitlines()[-1:]}")
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


# ---------------------------------------------------------------------- report
def summarize(
    rows: list[dict[str, Any]], requests: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Medians per (mode, request, level) and linear fits per (mode, level)."""
    summary = []
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    for mode in modes:
        for name in requests:
            for lv in LEVELS[::-1]:
                rs = [r for r in rows if r["mode"] == mode and r["request"] == name and r["level"] == lv]
                if not rs:
                    continue
                summary.append(
                    {
                        "mode": mode,
                        "request": name,
                        "level": lv,
                        "n": rs[0]["n"],
                        "vertices": rs[0]["vertices"],
                        "edges": rs[0]["edges"],
                        "match_ms": _median([r["match_ms"] for r in rs]),
                        "comm_ms": _median([r["comm_ms"] for r in rs]),
                        "attach_update_ms": _median([r["attach_update_ms"] for r in rs]),
                        "deferred_cpu_ms": _median([r["deferred_cpu_ms"] for r in rs]),
                        "server_ms": _median([r["server_ms"] for r in rs]),
                        "rtt_ms": _median([r["rtt_ms"] for r in rs]),
                        "client_comm_ms": _median([r["client_comm_ms"] for r in rs]),
                        "shrink_ms": _median([r.get("shrink_ms", float("nan")) for r in rs]),
                        # (a run of an older tree has no ready_ms: its leaf attached before answering)
                        "ready_ms": _median([r.get("ready_ms", r["rtt_ms"]) for r in rs]),
                        # (nor have_jgf_ms: the call's time from the client, which then had its JGF)
                        "have_jgf_ms": _median([r.get("have_jgf_ms", r["rtt_ms"]) for r in rs]),
                    }
                )
    fits = []
    for mode in modes:
        ms = [x for x in summary if x["mode"] == mode]
        groups = [(lv, [x for x in ms if x["level"] == lv]) for lv in LEVELS[:0:-1]]
        groups.append(("L1-L4", [x for x in ms if x["level"] != "L0"]))
        for label, ss in groups:
            for q in ("comm_ms", "attach_update_ms", "deferred_cpu_ms"):
                if mode == "deferred" and q == "attach_update_ms":
                    continue  # wall time of idle-priority threads: not a cost
                if mode != "deferred" and q == "deferred_cpu_ms":
                    continue
                pts = [(x["n"], x[q]) for x in ss if x[q] == x[q]]
                if len(pts) < 2:
                    continue
                slope, icpt, r2 = fit_line([p[0] for p in pts], [p[1] for p in pts])
                fits.append(
                    {
                        "mode": mode,
                        "level": label,
                        "quantity": "attach_cpu" if q == "deferred_cpu_ms" else q[:-3],
                        "slope_us_per_elem": slope * 1e3,
                        "intercept_ms": icpt,
                        "r2": r2,
                        "points": len(pts),
                    }
                )
        client = [(x["n"], x["client_comm_ms"]) for x in ms if x["level"] == "L4"]
        if len(client) >= 2:
            slope, icpt, r2 = fit_line([p[0] for p in client], [p[1] for p in client])
            fits.append(
                {
                    "mode": mode,
                    "level": "client",
                    "quantity": "comm",
                    "slope_us_per_elem": slope * 1e3,
                    "intercept_ms": icpt,
                    "r2": r2,
                    "points": len(client),
                }
            )
    return summary, fits


#: issue 19's targets: attach+update slope (µs per vertex+edge), its per-level intercept (ms),
#: the leaf's 64-node MatchGrow with deferred attach (ms)
TARGETS = {"attach_slope_us": 2.0, "attach_intercept_ms": 0.3, "leaf_t1_deferred_ms": 20.0}


def headline(summary: list[dict[str, Any]], fits: list[dict[str, Any]]) -> dict[str, float]:
    """The figures the targets name (NaN where the run did not measure them).

    ``attach_slope_us`` / ``attach_intercept_ms``: the worst level L1..L4 of
    the sync run's fits of attach+update against n; ``comm_*`` likewise for
    communication; ``leaf_t1_*_ms``: the leaf's server time of a 64-node
    MatchGrow (T1) per mode; ``leaf_t8_*_ms``: the same for one socket;
    ``attach_cpu_*``: the worst level L1..L3 of the deferred run's fits of
    the attach's thread CPU time (the same work, much less moved by load).
    """
    nan = float("nan")
    out: dict[str, float] = {}
    for q, key in (("attach_update", "attach"), ("comm", "comm")):
        fs = [f for f in fits if f["mode"] == "sync" and f["level"] in LEVELS and f["quantity"] == q]
        out[f"{key}_slope_us"] = max((f["slope_us_per_elem"] for f in fs), default=nan)
        out[f"{key}_intercept_ms"] = max((f["intercept_ms"] for f in fs), default=nan)
    # the same work's thread CPU time (deferred attach at L1..L3): far less moved by the machine's load
    fs = [
        f for f in fits if f["mode"] == "deferred" and f["level"] in LEVELS and f["quantity"] == "attach_cpu"
    ]
    out["attach_cpu_slope_us"] = max((f["slope_us_per_elem"] for f in fs), default=nan)
    out["attach_cpu_intercept_ms"] = max((f["intercept_ms"] for f in fs), default=nan)
    for req in ("T1", "T8"):
        for mode in ("sync", "deferred"):
            x = next(
                (x for x in summary if x["request"] == req and x["level"] == "L4" and x["mode"] == mode), None
            )
            out[f"leaf_{req.lower()}_{mode}_ms"] = x["server_ms"] if x is not None else nan
            out[f"leaf_{req.lower()}_{mode}_ready_ms"] = x.get("ready_ms", nan) if x is not None else nan
            out[f"leaf_{req.lower()}_{mode}_shrink_ms"] = x.get("shrink_ms", nan) if x is not None else nan
            out[f"leaf_{req.lower()}_{mode}_have_jgf_ms"] = x.get("have_jgf_ms", nan) if x is not None else nan
    return out


def verdict(v: float, limit: float) -> str:
    """A target's verdict.  A negative figure is no cost: a fitted line with a negative intercept (or
    slope) does not describe the run (a loaded machine's noise), so the target is not measured."""
    if v != v:
        return "not measured"
    if v < 0:
        return "not measured (negative fit)"
    return "met" if v <= limit else "NOT met"


def target_lines(summary: list[dict[str, Any]], fits: list[dict[str, Any]]) -> list[str]:
    h = headline(summary, fits)

    return [
        f"  attach+update <= {TARGETS['attach_slope_us']:g} us per vertex+edge (sync run, worst level L1..L4): "
        f"{h['attach_slope_us']:.2f} us -> {verdict(h['attach_slope_us'], TARGETS['attach_slope_us'])}",
        f"  attach+update intercept per level <= {TARGETS['attach_intercept_ms']:g} ms (same fits): "
        f"{h['attach_intercept_ms']:.3f} ms -> {verdict(h['attach_intercept_ms'], TARGETS['attach_intercept_ms'])}",
        f"  (communication per level, for reference: worst slope {h['comm_slope_us']:.2f} us, "
        f"worst intercept {h['comm_intercept_ms']:.3f} ms)",
        f"  leaf MatchGrow of 64 nodes (deferred attach) <= {TARGETS['leaf_t1_deferred_ms']:g} ms: "
        f"{h['leaf_t1_deferred_ms']:.1f} ms at the leaf -> "
        f"{verdict(h['leaf_t1_deferred_ms'], TARGETS['leaf_t1_deferred_ms'])}",
        f"  the same until the leaf is ready again (the leaf answers a grow of its own job from above "
        f"before attaching it): {h['leaf_t1_deferred_ready_ms']:.1f} ms from the client's call -> "
        f"{verdict(h['leaf_t1_deferred_ready_ms'], TARGETS['leaf_t1_deferred_ms'])}",
        f"  (its Shrink, the leaf's call the whole way up to L0 with the hand-backs: "
        f"{h['leaf_t1_deferred_shrink_ms']:.1f} ms; no target)",
    ]


def _f(v: Any, width: int) -> str:
    if not isinstance(v, int | float) or v != v:
        return " " * width
    return f"{v:{width}.3f}"


def report(
    summary: list[dict[str, Any]],
    fits: list[dict[str, Any]],
    single: list[dict[str, Any]],
    reps: int,
    requests: list[str],
) -> str:
    """The printed tables (also written to summary.txt)."""
    lines: list[str] = []
    modes = list(dict.fromkeys(x["mode"] for x in summary))
    base = "sync" if "sync" in modes else (modes[0] if modes else "")
    if summary:
        lines.append(f"Nested MatchGrow, 5 levels (L4 -> L0 and back), {reps} repetitions, medians in ms")
        lines.append(
            "Per level (run with attach before answering, so each level's work is measured alone):"
            if base == "sync"
            else "Per level (L1..L3 attach after answering; their attach+update is wall time at idle priority):"
        )
        lines.append(
            "  comm = the level's round trip to its parent minus the parent's server time (gRPC + protobuf + "
            "JGF bytes)"
        )
        for name in requests:
            ss = [x for x in summary if x["request"] == name and x["mode"] == base]
            if not ss:
                continue
            s0 = ss[0]
            what = f"{REQUESTS[name]} nodes" if REQUESTS[name] else "1 socket (16 cores)"
            lines.append("")
            lines.append(f"{name} ({what})  n = {s0['n']} ({s0['vertices']} vertices + {s0['edges']} edges)")
            lines.append(f"  {'level':<6} {'match':>9} {'comm':>9} {'attach+upd':>11} {'server':>9}")
            for x in ss:
                lines.append(
                    f"  {x['level']:<6} {_f(x['match_ms'], 9)} {_f(x['comm_ms'], 9)} "
                    f"{_f(x['attach_update_ms'], 11)} {_f(x['server_ms'], 9)}"
                )
            for mode in modes:
                leaf = next(
                    (x for x in summary if x["request"] == name and x["mode"] == mode and x["level"] == "L4"),
                    None,
                )
                if leaf is None:
                    continue
                label = "attach in sequence" if mode == "sync" else "deferred attach (default)"
                lines.append(
                    f"  leaf MatchGrow total, {label}: {leaf['server_ms']:.3f} ms at the leaf, "
                    f"{leaf['rtt_ms']:.3f} ms client round trip, "
                    f"{leaf.get('have_jgf_ms', leaf['rtt_ms']):.3f} ms until the client has the JGF, "
                    f"leaf ready again {leaf['ready_ms']:.3f} ms"
                )
        lines.append("")
        lines.append(
            "Linear fits t = slope*n + intercept over the request sizes (medians), n = vertices + edges"
        )
        lines.append(
            f"  {'run':<9} {'level':<7} {'quantity':<14} {'slope us/elem':>13} {'intercept ms':>13} {'R^2':>7}"
        )
        for f in fits:
            lines.append(
                f"  {f['mode']:<9} {f['level']:<7} {f['quantity']:<14} {f['slope_us_per_elem']:13.3f} "
                f"{f['intercept_ms']:13.3f} {f['r2']:7.4f}"
            )
        lines.append("")
        lines.append("Targets (issue 19)")
        lines.extend(target_lines(summary, fits))
    if single:
        lines.append("")
        lines.append("Single level, 1-node graph (2 sockets x 16 cores), one socket (T8), medians in ms")
        lines.append(
            f"  {'operation':<44} {'match':>8} {'add+upd':>8} {'op alloc KB':>11} {'peak RSS MB':>12}"
        )
        names = {
            "baseline": "load graph only (reference)",
            "allocate": "MatchAllocate T8",
            "grow": "MatchGrow T8 (job holds the other socket)",
            "attach": "MatchGrow from a parent: attach + update T8",
        }
        for x in single:
            lines.append(
                f"  {names[x['mode']]:<44} {_f(x.get('match_ms'), 8)} {_f(x.get('attach_ms'), 8)} "
                f"{_f(x.get('op_peak_kb'), 11)} {x['peak_rss_mb']:12.1f}"
            )
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def _plain_ticks(ax: Any) -> None:
    from matplotlib.ticker import ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        fmt = ScalarFormatter()
        fmt.set_scientific(False)
        axis.set_major_formatter(fmt)


def plot(summary: list[dict[str, Any]], fits: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """PNG plots of time vs subgraph size per level; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = list(dict.fromkeys(x["mode"] for x in summary))
    base = "sync" if "sync" in modes else modes[0]
    ss = [x for x in summary if x["mode"] == base]
    made = []
    for q, title, levels in (
        ("comm_ms", "communication (RPC + JGF) per level", LEVELS[:0:-1]),
        ("attach_update_ms", "attach + update per level", LEVELS[:0:-1]),
        ("match_ms", "match per level", LEVELS[::-1]),
        ("server_ms", "server time per level (L4 = leaf MatchGrow total)", LEVELS[::-1]),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for lv in levels:
            pts = sorted((x["n"], x[q]) for x in ss if x["level"] == lv and x[q] == x[q])
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=lv, markersize=4)
            fit = next(
                (f for f in fits if f["mode"] == base and f["level"] == lv and f["quantity"] == q[:-3]), None
            )
            if fit is not None:
                import numpy as np

                xs = list(np.geomspace(pts[0][0], pts[-1][0], 50))
                ax.plot(
                    xs,
                    [fit["slope_us_per_elem"] / 1e3 * x + fit["intercept_ms"] for x in xs],
                    ":",
                    color=ax.lines[-1].get_color(),
                    linewidth=1,
                )
        if q == "comm_ms":
            pts = sorted((x["n"], x["client_comm_ms"]) for x in ss if x["level"] == "L4")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "s--", label="client->L4", markersize=4)
        ax.set_xscale("log")
        data = [x[q] for x in ss if x["level"] in levels and x[q] == x[q]]
        if q != "comm_ms":  # communication spans less than a decade: linear time axis
            ax.set_yscale("log")
            if data:
                ax.set_ylim(min(data) / 1.5, max(data) * 1.5)
        _plain_ticks(ax)
        ax.set_xlabel("subgraph size n = vertices + edges")
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"{title} ({base} attach)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        p = out_dir / f"{q[:-3]}_vs_n.png"
        fig.savefig(p, dpi=120)
        plt.close(fig)
        made.append(p)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for mode in modes:
        pts = sorted((x["n"], x["server_ms"]) for x in summary if x["mode"] == mode and x["level"] == "L4")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{mode} attach", markersize=4)
    t = TARGETS["leaf_t1_deferred_ms"]
    ax.axhline(t, color="grey", linestyle=":", linewidth=1, label=f"{t:g} ms target (64 nodes, deferred)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_ticks(ax)
    ax.set_xlabel("subgraph size n = vertices + edges")
    ax.set_ylabel("median leaf MatchGrow time (ms)")
    ax.set_title("leaf MatchGrow total through 5 levels")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    p = out_dir / "leaf_total_vs_n.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    made.append(p)
    return made


# ---------------------------------------------------------------------- against a baseline
#: CSV columns that hold numbers (the rest are strings or booleans)
_TEXT_FIELDS = {"mode", "request", "level", "deferred", "tree"}


def _read_rows(path: Path, tree: str, rnd: int) -> list[dict[str, Any]]:
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row: dict[str, Any] = {
                k: (v if k in _TEXT_FIELDS else float(v) if v not in ("", "nan") else float("nan"))
                for k, v in r.items()
            }
            row["deferred"] = r.get("deferred") == "True"
            row["tree"], row["round"] = tree, rnd
            rows.append(row)
    return rows


def run_against(a: argparse.Namespace, bench: Path, requests: list[str], out_dir: Path) -> dict[str, Any]:
    """This checkout and ``a.baseline`` in turns (see the module docstring); returns the comparison."""
    import os

    repo = Path(__file__).resolve().parent.parent
    rows: list[dict[str, Any]] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="fluxlite-bench-base-") as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        try:
            built = extract_revision(a.baseline, base)
        except InputError as exc:
            raise InputError(f"--baseline {a.baseline}: {exc}") from None
        trees = {"this": repo, "baseline": base}
        turns = [
            (r, name) for r in range(a.rounds) for name in (("this", "baseline") if r % 2 == 0 else ("baseline", "this"))
        ]  # fmt: skip
        it: Any = turns
        if not a.no_progress:
            from tqdm import tqdm

            it = tqdm(turns, desc="bench hierarchy vs baseline", unit="run", file=sys.stderr)
        for r, name in it:
            run_out = Path(tmp) / f"{name}-{r}"
            cmd = [
                sys.executable, "-m", "hierarchy.bench", "--skip-single", "--no-plots",
                "--reps", str(a.reps), "--warmup", str(a.warmup), "--bench-dir", str(bench),
                "--transport", a.transport, "--policy", a.policy, "--requests", ",".join(requests),
                "--modes", a.modes, "--out", str(run_out), *(["--state"] if a.state else []),
            ]  # fmt: skip
            env = {**os.environ, "PYTHONPATH": str(trees[name])}
            loads.append(os.getloadavg()[0])
            done = _run_child(cmd, tmp, env)
            loads.append(os.getloadavg()[0])
            if done.returncode != 0:
                last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
                raise InputError(f"the {name} tree's run {r + 1} failed: {' | '.join(last)}")
            rows += _read_rows(run_out / "nested_raw.csv", name, r)
        labels = {
            "this": _describe(repo, "HEAD") + " (+ work tree)",
            "baseline": f"{a.baseline} = {_describe(repo, a.baseline)} [{built}]",
        }
    per_tree = {}
    for name in ("this", "baseline"):
        summary, fits = summarize([x for x in rows if x["tree"] == name], requests)
        per_tree[name] = {"summary": summary, "fits": fits, "headline": headline(summary, fits)}
    # each round's two runs ran minutes apart at most: their ratio sees less of the machine's drift
    per_round = []
    for r in range(a.rounds):
        heads = {}
        for name in ("this", "baseline"):
            summary, fits = summarize([x for x in rows if x["tree"] == name and x["round"] == r], requests)
            heads[name] = headline(summary, fits)
        per_round.append(heads)
    _write_csv(out_dir / "compare_raw.csv", rows)
    return {
        "trees": per_tree,
        "labels": labels,
        "loads": loads,
        "rounds": a.rounds,
        "reps": a.reps,
        "rows": rows,
        "per_round": per_round,
    }


def _describe(repo: Path, rev: str) -> str:
    r = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%h %s", rev], capture_output=True, text=True
    )
    return r.stdout.strip()[:80] or rev


def _ratio(a: float, b: float) -> float:
    return a / b if b == b and b != 0 and a == a else float("nan")


def compare_report(cmp: dict[str, Any]) -> str:
    """``compare.txt``: the targets' figures per tree, ratios this/baseline and the load average."""
    this, base = cmp["trees"]["this"]["headline"], cmp["trees"]["baseline"]["headline"]
    loads = cmp["loads"]
    lines = [
        f"bench hierarchy, this checkout against a baseline: {cmp['rounds']} rounds x {cmp['reps']} repetitions "
        "per tree, the trees taking turns (order alternating), medians over all rounds",
        f"  this:     {cmp['labels']['this']}",
        f"  baseline: {cmp['labels']['baseline']}",
        f"  load average (1 min) during the run: min {min(loads):.1f}, median {statistics.median(loads):.1f}, "
        f"max {max(loads):.1f}",
        "",
        f"  {'figure':<58} {'this':>9} {'baseline':>9} {'ratio':>6} {'target':>8}",
    ]
    names = [
        (
            "attach_slope_us",
            "attach+update slope, worst level L1..L4 (us/elem, sync)",
            TARGETS["attach_slope_us"],
        ),
        (
            "attach_intercept_ms",
            "attach+update intercept, worst level (ms, sync)",
            TARGETS["attach_intercept_ms"],
        ),
        ("attach_cpu_slope_us", "  the same, thread CPU time, worst of L1..L3 (deferred)", None),
        ("attach_cpu_intercept_ms", "  its intercept (ms, thread CPU time, deferred)", None),
        ("comm_slope_us", "communication slope, worst level (us/elem, sync)", None),
        ("comm_intercept_ms", "communication intercept, worst level (ms, sync)", None),
        (
            "leaf_t1_deferred_ms",
            "leaf MatchGrow 64 nodes, deferred attach (ms)",
            TARGETS["leaf_t1_deferred_ms"],
        ),
        (
            "leaf_t1_deferred_ready_ms",
            "  the leaf ready again, its own attach done (ms)",
            TARGETS["leaf_t1_deferred_ms"],
        ),
        ("leaf_t1_deferred_have_jgf_ms", "  the client's call until it has the JGF (ms)", None),
        ("leaf_t1_sync_ms", "leaf MatchGrow 64 nodes, sync attach (ms)", None),
        ("leaf_t8_deferred_ms", "leaf MatchGrow 1 socket, deferred attach (ms)", None),
        ("leaf_t8_sync_ms", "leaf MatchGrow 1 socket, sync attach (ms)", None),
        ("leaf_t1_deferred_shrink_ms", "leaf Shrink of those 64 nodes, up to L0 (ms, deferred run)", None),
        ("leaf_t1_sync_shrink_ms", "the same, sync run (ms)", None),
    ]
    nan = float("nan")
    for key, label, limit in names:
        a, b = this.get(key, nan), base.get(key, nan)
        tgt = (
            ""
            if limit is None
            else f"<={limit:g} " + {"met": "met", "NOT met": "NOT"}.get(verdict(a, limit), "n/a")
        )
        lines.append(f"  {label:<58} {_f(a, 9)} {_f(b, 9)} {_f(_ratio(a, b), 6)} {tgt:>8}")
    per_round = cmp.get("per_round") or []
    if len(per_round) > 1:
        lines += [
            "",
            "  the ratio round by round (each round's two runs back to back; a range that spans 1.00 is",
            "  not resolved by this run: the machine's drift between rounds is as large as the change)",
        ]
        for key, label, _limit in names:
            rs = [_ratio(h["this"].get(key, nan), h["baseline"].get(key, nan)) for h in per_round]
            shown = [x for x in rs if x == x]
            span = f"{min(shown):.3f} .. {max(shown):.3f}" if shown else "n/a"
            lines.append(f"  {label:<58} {span:>14}   " + " ".join(_f(x, 5) for x in rs))
    lines.append("")
    lines.append("  per level, sync run (this / baseline):")
    lines.append(
        f"  {'level':<7} {'attach slope us':>16} {'attach icpt ms':>16} {'comm slope us':>16} {'comm icpt ms':>16}"
    )
    for lv in LEVELS[:0:-1]:
        cells = []
        for q in ("attach_update", "comm"):
            got = []
            for tree in ("this", "baseline"):
                f = next(
                    (f for f in cmp["trees"][tree]["fits"] if f["mode"] == "sync" and f["level"] == lv and f["quantity"] == q),
                    None,
                )  # fmt: skip
                got.append(f)
            for k in ("slope_us_per_elem", "intercept_ms"):
                vals = [f[k] if f is not None else float("nan") for f in got]
                cells.append(f"{vals[0]:7.3f}/{vals[1]:<7.3f}")
        lines.append(f"  {lv:<7} " + " ".join(f"{c:>16}" for c in cells))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- CLI
def _run_child(cmd: list[str], cwd: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one tree's measurement; if this process is stopped, stop it with SIGTERM (it then takes its
    instance processes down) rather than leaving it, or killing it with its instances left running."""
    with subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            out, err = proc.communicate()
        except BaseException:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def main(argv: list[str] | None = None) -> int:
    """``fluxlite bench hierarchy`` (see :func:`_cli`); SIGTERM ends the run like Ctrl-C (SystemExit), so
    that the ``finally`` blocks tear the instance trees down (it left them running)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _cli(argv)

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    prev = signal.signal(signal.SIGTERM, stop)
    try:
        return _cli(argv)
    finally:
        signal.signal(signal.SIGTERM, prev)


def _cli(argv: list[str] | None = None) -> int:
    """``fluxlite bench hierarchy [--reps N] [--out DIR] ...`` (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="fluxlite bench hierarchy",
        description="The nested MatchGrow experiment (L0..L4 as five real instance processes; the leaf grows "
        "by T1..T8 and shrinks back each repetition) and the single-level MatchAllocate vs MatchGrow "
        "comparison.  Prints medians per level and request size, linear fits of communication and "
        "attach+update against n = vertices + edges, and writes CSV, PNG plots and summary.txt to --out.",
    )
    p.add_argument("--reps", type=int, default=100, help="repetitions per request size (default 100)")
    p.add_argument("--warmup", type=int, default=2, help="unmeasured repetitions first (default 2)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("bench-out/hierarchy"),
        help="output directory for CSV, PNG and summary.txt (default bench-out/hierarchy)",
    )
    p.add_argument(
        "--bench-dir",
        type=Path,
        default=None,
        help="benchmark inputs with graphs/ and jobspecs/ (default $FLUXLITE_BENCH_DIR, else "
        "$FLUXLITE_SHARED/bench or ../shared/bench; where none is, inputs of the same shape are generated)",
    )
    p.add_argument(
        "--transport", choices=["unix", "tcp"], default="unix", help="how instances talk (default unix)"
    )
    p.add_argument("--policy", default="first", help="match policy of every level (default first)")
    p.add_argument("--requests", default=",".join(REQUESTS), help="comma-separated subset of T1..T8")
    p.add_argument(
        "--single-reps", type=int, default=None, help="repetitions of the single-level runs (default --reps)"
    )
    p.add_argument(
        "--modes",
        default="sync,deferred",
        help="nested runs: sync (every level attaches before answering: per-level costs), deferred (the "
        "instances' default: L1..L3 attach after answering) or both (default sync,deferred)",
    )
    p.add_argument("--skip-nested", action="store_true", help="only the single-level comparison")
    p.add_argument("--skip-single", action="store_true", help="only the nested experiment")
    p.add_argument("--no-plots", action="store_true", help="do not draw PNG plots")
    p.add_argument(
        "--baseline",
        metavar="REF",
        default="",
        help="also measure git revision REF (e.g. main) in the same run: the nested experiment of each tree in "
        "fresh processes, taking turns; writes compare.txt with medians and ratios this/baseline",
    )
    p.add_argument(
        "--rounds", type=int, default=3, help="with --baseline: turns per tree, --reps each (default 3)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar (with --baseline)")
    p.add_argument(
        "--state",
        action="store_true",
        help="every instance keeps a state file (--state of fluxlite instance serve, in the run's temporary "
        "directory), as one that must survive a restart does: each grow and shrink also writes it "
        "(a --baseline revision's bench must know this option too)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    try:
        a = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    prog = "fluxlite bench hierarchy"
    try:
        with tempfile.TemporaryDirectory(prefix="fluxlite-bench-inputs-") as tmp:
            return _main(a, prog, tmp)
    except FluxliteError as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130


def _main(a: argparse.Namespace, prog: str, tmp: str) -> int:
    from fluxlite.cli.bench import find_bench_dir

    bench = a.bench_dir or find_bench_dir()
    if bench is None:
        bench = generate_inputs(Path(tmp))
        if not a.worker:
            print(f"{prog}: no benchmark inputs found ($FLUXLITE_BENCH_DIR, $FLUXLITE_SHARED/bench, "
                  "../shared/bench): generated graphs and jobspecs of the same shape")  # fmt: skip
    if a.worker:
        print(json.dumps(_single_worker(a.worker, bench, a.reps)))
        return 0
    if a.reps < 1:
        raise InputError("--reps must be at least 1")
    requests = [x.strip() for x in a.requests.split(",") if x.strip()]
    bad = [x for x in requests if x not in REQUESTS]
    if bad:
        raise InputError(f"--requests: unknown {', '.join(bad)} (known: {', '.join(REQUESTS)})")
    for sub in ("graphs/L0.graphml", "graphs/L4.graphml", *(f"jobspecs/{t}.yaml" for t in REQUESTS)):
        if not (bench / sub).is_file():
            raise InputError(f"benchmark input {bench / sub} not found (give --bench-dir)")
    a.out.mkdir(parents=True, exist_ok=True)
    out = sys.stdout
    rows: list[dict[str, Any]] = []
    modes = [x.strip() for x in a.modes.split(",") if x.strip()]
    if not modes or any(m not in ("sync", "deferred") for m in modes):
        raise InputError(f"--modes: expected sync, deferred or both, got {a.modes!r}")
    cmp = None
    if a.baseline:
        if a.rounds < 1:
            raise InputError("--rounds must be at least 1")
        if a.skip_nested:
            raise InputError("--baseline compares the nested experiment: drop --skip-nested")
        cmp = run_against(a, bench, requests, a.out)
        rows = [
            {k: v for k, v in r.items() if k not in ("tree", "round")}
            for r in cmp["rows"]
            if r["tree"] == "this"
        ]
    elif not a.skip_nested:
        for mode in modes:
            rows += run_nested(
                bench,
                a.reps,
                a.warmup,
                a.transport,
                a.policy,
                requests,
                out,
                sync_attach=mode == "sync",
                state=a.state,
            )
    single = [] if a.skip_single else run_single(bench, a.single_reps or a.reps)
    summary, fits = summarize(rows, requests)
    text = report(summary, fits, single, a.reps * (a.rounds if a.baseline else 1), requests)
    out.write("\n" + text)
    (a.out / "summary.txt").write_text(text)
    if cmp is not None:
        ctext = compare_report(cmp)
        out.write("\n" + ctext)
        (a.out / "compare.txt").write_text(ctext)
    if cmp is None:  # with a baseline, compare_raw.csv holds every row, tagged by tree
        _write_csv(a.out / "nested_raw.csv", rows)
    _write_csv(a.out / "nested_summary.csv", summary)
    _write_csv(a.out / "nested_fits.csv", fits)
    _write_csv(a.out / "single_level.csv", single)
    if summary and not a.no_plots:
        try:
            made = plot(summary, fits, a.out)
            out.write(f"plots: {', '.join(str(x) for x in made)}\n")
        except ImportError:
            sys.stderr.write(
                f"{prog}: matplotlib is not installed, so no plots were drawn "
                "(pip install 'fluxlite[bench]'); the CSV files are written\n"
            )
    out.write(
        f"results in {a.out}/ (summary.txt, {'compare.txt, compare_raw.csv' if cmp else 'nested_raw.csv'}, "
        "nested_summary.csv, nested_fits.csv, single_level.csv)\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
