"""``fluxlite bench``: benchmarks that ship with the project.

``fluxlite bench match``
    The matcher on the published benchmark graphs (128 / 1,024 / 16,384
    nodes of 2 sockets x 16 cores) with the requests T1..T8 (64, 32, 16, 8,
    4, 2, 1 nodes; one 16-core socket), as Fluxion's figures were measured:
    each request is allocated again and again until the graph is full, then
    once more.  Per graph: load time and peak RSS (each graph in its own
    process); per policy and request: median and max ms per successful
    match (reading and parsing the jobspec and writing the ``simple`` output
    included, as Fluxion's ELAPSE does), ms of the failing match on the full
    graph, ms of ``allocate_orelse_reserve`` on the full graph and ms per
    cancel -- next to Fluxion's figure where ``bench/README.md`` has one --
    and the cost per allocated vertex: the vertices one job of the request
    holds (its resources and the ancestors it shares) and the median match
    time divided by them, in microseconds.  Each operation is timed with the
    garbage-collector upkeep ``fluxlite query`` does after it
    (:mod:`fluxlite.gcpolicy`; ``--gc default`` leaves CPython's settings).

``fluxlite bench hierarchy``
    The nested MatchGrow experiment (see ``fluxlite bench hierarchy --help``).

Graphs and jobspecs come from ``--bench-dir`` (default ``$FLUXLITE_BENCH_DIR``,
else ``$FLUXLITE_SHARED/bench``, else ``../shared/bench`` next to the checkout or the working directory); a
graph that is not there is generated with the same shape.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["BENCH_GRAPHS", "BENCH_REQUESTS", "find_bench_dir", "main", "main_bench"]

from fluxlite.cli._bench_inputs import (
    BENCH_ALT_REQUESTS,
    BENCH_GRAPHS,
    BENCH_REQUESTS,
    _graph_source,
    request_files,
)


def find_bench_dir(given: str | os.PathLike[str] | None = None) -> Path | None:
    """The directory of benchmark inputs: ``given``, ``$FLUXLITE_BENCH_DIR``, ``$FLUXLITE_SHARED/bench``,
    or ``../shared/bench`` (beside the working directory or the checkout); None if there is none."""
    if given:
        return Path(given)
    env = os.environ.get("FLUXLITE_BENCH_DIR")
    if env:
        return Path(env)
    shared = os.environ.get("FLUXLITE_SHARED")
    if shared and (Path(shared) / "bench").is_dir():
        return Path(shared) / "bench"
    here = Path(__file__).resolve().parents[2]
    for base in (Path.cwd(), here):
        cand = base.parent / "shared" / "bench"
        if cand.is_dir():
            return cand
    return None


def fluxion_figures(bench_dir: Path | None) -> dict[tuple[str, str, str], float]:
    """(graph, request, policy) -> Fluxion's median ms, from the table in ``bench/README.md``."""
    out: dict[tuple[str, str, str], float] = {}
    if bench_dir is None:
        return out
    try:
        text = (bench_dir / "README.md").read_text()
    except OSError:
        return out
    graph = ""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.match(r"T\d", cells[1]):
            continue
        name = cells[0].split()[0]
        if name:
            graph = name
        req = cells[1].split()[0]
        for policy, cell in (("first", cells[2]), ("low", cells[3])):
            if re.fullmatch(r"[0-9.]+", cell):
                out[(graph, req, policy)] = float(cell)
    return out


# ---------------------------------------------------------------------- worker (one graph per process)
def _peak_rss_mb() -> float:
    """Peak RSS of this process in MB.

    Linux's ``ru_maxrss`` survives exec: a worker forked from a driver that
    once held a big graph would report the driver's peak.  ``VmHWM`` is the
    peak of this process's own memory, so it is used where it exists.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _worker(cfg: dict[str, Any]) -> int:
    """Load one graph, run every (policy, request); print one JSON object per line."""
    from fluxlite.api import Engine
    from fluxlite.gcpolicy import OperationGC
    from fluxlite.jobspec import load_jobspec
    from fluxlite.readers import load_graph

    t0 = time.perf_counter()
    c0 = time.process_time()
    if cfg["source"] == "generate":
        from fluxlite.readers.generate import generate_graph

        graph = generate_graph(nodes=cfg["nodes"], sockets=2, cores=16)
    else:
        graph = load_graph(Path(cfg["source"]), format=cfg["format"])
    load_s = time.perf_counter() - t0
    load_cpu_s = time.process_time() - c0
    gc.collect()
    gc.freeze()
    _emit(
        {
            "kind": "load",
            "graph": cfg["graph"],
            "format": cfg["format"],
            "seconds": load_s,
            "cpu_seconds": load_cpu_s,
            "rss_mb": _peak_rss_mb(),
            "vertices": len(graph),
            "edges": graph.num_edges,
        }
    )
    if cfg.get("load_only"):
        return 0
    budget = cfg["budget"]
    for policy in cfg["policies"]:
        for req, path in cfg["requests"]:
            # a fresh engine per run, as Fluxion's figures come from a fresh resource-query per run
            t = time.perf_counter()
            eng = Engine(
                graph,
                policy=policy,
                prune_filters=cfg["prune"],
                traverser_policy=cfg.get("traverser", "simple"),
            )
            eng.traverser.fresh = cfg.get("fresh", True)
            init_s = time.perf_counter() - t
            # what a long-running scheduler does: freeze after start-up, and with "upkeep"
            # collect the young generations after each operation (timed with it)
            upkeep = OperationGC(enabled=cfg.get("gc", "upkeep") == "upkeep")
            gc.collect()
            gc.freeze()
            after = upkeep.after
            times: list[float] = []
            nverts = 0
            start = time.perf_counter()
            stopped = False
            while True:
                t = time.perf_counter()
                js = load_jobspec(path)
                r = eng.match(js, op="allocate", fmt=cfg["format_out"])
                after()
                dt = (time.perf_counter() - t) * 1000.0
                if not r.ok:
                    break
                times.append(dt)
                if len(times) == 1:
                    # vertices the job holds (allocated, plus the shared ancestors it is tagged on)
                    nverts = len(eng.traverser.job_vertices(r.jobid))
                if time.perf_counter() - start > budget:
                    stopped = True
                    break
            fail_ms: list[float] = []
            reserve_ms: list[float] = []
            if not stopped:
                fail_ms.append(dt)
                for _ in range(4):
                    t = time.perf_counter()
                    r = eng.match(load_jobspec(path), op="allocate", fmt=cfg["format_out"])
                    after()
                    fail_ms.append((time.perf_counter() - t) * 1000.0)
                for _ in range(5):
                    t = time.perf_counter()
                    r = eng.match(load_jobspec(path), op="allocate_orelse_reserve", fmt=cfg["format_out"])
                    after()
                    reserve_ms.append((time.perf_counter() - t) * 1000.0)
                    if r.ok:
                        eng.cancel(r.jobid)
            cancel_ms: list[float] = []
            for jobid in list(eng.jobs):
                t = time.perf_counter()
                eng.cancel(jobid)
                after()
                cancel_ms.append((time.perf_counter() - t) * 1000.0)
            graph.remove_observer(eng.traverser)
            del eng
            gc.unfreeze()
            _emit(
                {
                    "kind": "match",
                    "graph": cfg["graph"],
                    "policy": policy,
                    "traverser": cfg.get("traverser", "simple"),
                    "gc": cfg.get("gc", "upkeep"),
                    "request": req,
                    "matches": len(times),
                    "full": not stopped,
                    "median_ms": _median(times),
                    "vertices": nverts,
                    "us_per_vertex": (_median(times) or 0.0) * 1000.0 / nverts if nverts else None,
                    "p90_ms": statistics.quantiles(times, n=10)[-1] if len(times) >= 2 else None,
                    "max_ms": max(times) if times else None,
                    "first_ms": times[0] if times else None,
                    "fail_ms": _median(fail_ms),
                    "reserve_ms": _median(reserve_ms),
                    "cancel_ms": _median(cancel_ms),
                    "init_s": init_s,
                    "rss_mb": _peak_rss_mb(),
                }
            )
    return 0


# ---------------------------------------------------------------------- driver
def _run_worker(cfg: dict[str, Any], progress: Any) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "fluxlite.cli.bench", "--worker", json.dumps(cfg)]
    rows: list[dict[str, Any]] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                rows.append(row)
                progress(row)
            err = proc.stderr.read() if proc.stderr is not None else ""
            rc = proc.wait()
        except BaseException:  # Ctrl-C, kill: the worker goes too
            proc.kill()
            raise
    if rc != 0:
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {rc}"
        raise RuntimeError(f"benchmark worker for {cfg['graph']} failed: {last}")
    return rows


def _combine(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Rows of repeated runs as one: medians of the per-run figures, the largest max."""
    if len(runs) == 1:
        return runs[0]
    out = []
    for rows in zip(*runs):
        row = dict(rows[0])
        for key in list(row):
            vals = [
                r[key]
                for r in rows
                if isinstance(r.get(key), int | float) and not isinstance(r.get(key), bool)
            ]
            if not vals or key in ("matches",):
                continue
            row[key] = max(vals) if key.startswith("max") or key == "rss_mb" else statistics.median(vals)
        row["runs"] = len(rows)
        out.append(row)
    return out


def _fmt(x: float | None, width: int = 8, digits: int = 3) -> str:
    if x is None:
        return "-".rjust(width)
    return f"{x:{width}.{digits}f}"


def _print_load(row: dict[str, Any], out: Any) -> None:
    ve = row["vertices"] + row["edges"]
    out.write(
        f"{row['graph']}: {row['vertices']:,} vertices + {row['edges']:,} edges = {ve:,}; "
        f"load ({row['format']}) {row['seconds']:.2f} s ({row.get('cpu_seconds', 0.0):.2f} s CPU), "
        f"peak RSS {row['rss_mb']:.0f} MB\n"
    )


_HEADER = (
    "  policy request  matches  median_ms   max_ms  fluxion_ms  ratio   fail_ms  reserve_ms  cancel_ms"
    "  vertices  us/vertex\n"
)


def _print_match(row: dict[str, Any], fluxion: dict[tuple[str, str, str], float], out: Any) -> None:
    ref = fluxion.get((row["graph"], row["request"], row["policy"]))
    ratio = row["median_ms"] / ref if (ref and row["median_ms"] is not None) else None
    n = f"{row['matches']}{'' if row['full'] else '*'}"
    out.write(
        f"  {row['policy']:<6} {row['request']:<7} {n:>8} {_fmt(row['median_ms'], 10)} {_fmt(row['max_ms'], 8, 2)}"
        f" {_fmt(ref, 11, 2)} {_fmt(ratio, 6, 2)} {_fmt(row['fail_ms'], 9)} {_fmt(row['reserve_ms'], 11)}"
        f" {_fmt(row['cancel_ms'], 10)} {row.get('vertices') or 0:9d} {_fmt(row.get('us_per_vertex'), 10, 2)}\n"
    )
    out.flush()


def _plot(rows: list[dict[str, Any]], fluxion: dict[tuple[str, str, str], float], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, axes = plt.subplots(
        len(policies), len(graphs), figsize=(4.2 * len(graphs), 3.4 * len(policies)), squeeze=False
    )
    for i, pol in enumerate(policies):
        for j, gname in enumerate(graphs):
            ax = axes[i][j]
            sel = [r for r in rows if r["graph"] == gname and r["policy"] == pol and r["median_ms"]]
            xs = list(range(len(sel)))
            ax.bar([x - 0.2 for x in xs], [r["median_ms"] for r in sel], width=0.4, label="fluxlite")
            refs = [fluxion.get((gname, r["request"], pol)) for r in sel]
            if any(refs):
                ax.bar(
                    [x + 0.2 for x, v in zip(xs, refs) if v],
                    [v for v in refs if v],
                    width=0.4,
                    label="Fluxion",
                )
            ax.set_xticks(xs, [r["request"] for r in sel])
            ax.set_yscale("log")
            ax.set_title(f"{gname}, {pol}")
            ax.set_ylabel("median ms per match")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main_match(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="fluxlite bench match",
        description="Time matches of T1..T8 until each graph is full (see the module help for what is measured).",
        epilog="A '*' after the match count: the time budget ran out before the graph was full "
        "(no failing-match or reserve figures then).  Ratios are fluxlite / Fluxion medians; "
        "us/vertex is the median match time per vertex the job holds.",
    )
    p.add_argument("--graphs", default="L0,N1024,N16384", help="comma-separated: L0, N1024, N8192, N16384")
    p.add_argument(
        "--requests",
        default=",".join(BENCH_REQUESTS),
        help="comma-separated subset of T1..T8, or A4 / A8: T4 / T8 with or_slot alternatives "
        "(needs --traverser flexible; not run unless named)",
    )
    p.add_argument(
        "--policies", default="first,low", help="comma-separated match policies (default first,low)"
    )
    p.add_argument(
        "--prune", default="ALL:core", help="pruning filters (default ALL:core, as Fluxion's runs)"
    )
    p.add_argument(
        "--traverser",
        choices=["simple", "flexible"],
        default="simple",
        help="traverser policy, as resource-query -T (default simple; flexible explores or_slot alternatives)",
    )
    p.add_argument(
        "--no-fresh",
        action="store_true",
        help="walk every subtree (no fresh-subtree templates): the plain walk's speed, same results",
    )
    p.add_argument(
        "--gc",
        choices=["upkeep", "default"],
        default="upkeep",
        help="cyclic garbage collection: upkeep (default) freezes after start-up and collects the "
        "young generations after each operation, as fluxlite query does (fluxlite.gcpolicy; "
        "timed with the operation); default leaves CPython's settings after one freeze at "
        "start-up (full collections then pause matches for up to 250 ms on N16384: see max_ms)",
    )
    p.add_argument(
        "--load-format",
        choices=["grug", "jgf", "both"],
        default="grug",
        help="graph input format (both: each graph from GRUG, then from JGF, in separate processes)",
    )
    p.add_argument(
        "--load-only",
        action="store_true",
        help="only load each graph (time and peak RSS), no matches; e.g. "
        "--graphs N16384 --load-format both --load-only --repeat 3",
    )
    p.add_argument(
        "--format", default="simple", help="match output format written per match (default simple)"
    )
    p.add_argument(
        "--budget", type=float, default=60.0, help="seconds per (graph, policy, request) before stopping (60)"
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each graph this many times (fresh processes) and report the median of the medians",
    )
    p.add_argument("--bench-dir", help="benchmark inputs (graphs/, jobspecs/, README.md)")
    f = p.add_argument_group(
        "side by side with Fluxion (--against)",
        "fluxlite query and resource-query on the same GRUG graph, jobspecs and command stream, "
        "alternating fresh processes; cells: empty graph (each request), a failing match, busy "
        "sessions (see fluxlite.cli.bench_fluxion)",
    )
    f.add_argument("--against", metavar="PATH", help="Fluxion's resource-query binary: run side by side")
    f.add_argument("--matches", type=int, default=200, help="empty cells: at most this many matches (200)")
    f.add_argument(
        "--sessions", default="fail,busy", help="extra cells: fail, busy (comma-separated; '' for none)"
    )
    f.add_argument("--queue", type=int, default=60, help="busy: reservations standing before the churn (60)")
    f.add_argument("--rounds", type=int, default=60, help="busy: cancel + new match rounds (60)")
    f.add_argument("--fails", type=int, default=5, help="fail: failing matches after the graph is full (5)")
    f.add_argument("--seed", type=int, default=1, help="busy: seed of the request mix (1)")
    f.add_argument("--timeout", type=float, default=1800.0, help="seconds per process run (1800)")
    f.add_argument(
        "--baseline-tree",
        type=Path,
        metavar="DIR",
        help="also run the fluxlite of this source tree (e.g. `git archive main | tar -x -C DIR`) in the "
        "same alternation, with this Python: adds its median and the ratio to it",
    )
    f.add_argument("--txt", type=Path, help="write the side-by-side table here")
    f.add_argument("--progress", action="store_true", help="progress bar on standard error")
    p.add_argument("--csv", type=Path, help="write every row as CSV here")
    p.add_argument("--json", type=Path, help="write every row as JSON lines here")
    p.add_argument("--plot", type=Path, help="bar chart (PNG) of median ms vs Fluxion's")
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    graphs = [x for x in a.graphs.split(",") if x]
    reqs = [x for x in a.requests.split(",") if x]
    known = {**BENCH_REQUESTS, **BENCH_ALT_REQUESTS}
    bad = [x for x in graphs if x not in BENCH_GRAPHS] + [x for x in reqs if x not in known]
    if bad:
        p.error(f"unknown graph or request: {', '.join(bad)}")
    if a.traverser != "flexible" and any(x in BENCH_ALT_REQUESTS for x in reqs):
        p.error("requests A4 / A8 have or_slot alternatives: add --traverser flexible")
    from fluxlite.match import parse_policy

    policies = [x for x in a.policies.split(",") if x]
    for pol in policies:
        try:
            parse_policy(pol)
        except Exception as exc:
            p.error(str(exc))
    bench_dir = find_bench_dir(a.bench_dir)
    if bench_dir is not None and not bench_dir.is_dir():
        p.error(f"--bench-dir {bench_dir}: not a directory")
    if a.against:
        from fluxlite.cli.bench_fluxion import main_against

        if a.matches < 1 or a.repeat < 1:
            p.error("--matches and --repeat must be at least 1")
        if a.baseline_tree is not None and not (a.baseline_tree / "fluxlite" / "__init__.py").is_file():
            p.error(f"--baseline-tree {a.baseline_tree}: no fluxlite package there")
        return main_against(a, bench_dir)
    fluxion = fluxion_figures(bench_dir)
    out = sys.stdout
    out.write(
        f"fluxlite bench match: inputs {bench_dir or '(generated)'}; traverser {a.traverser}; "
        f"prune {a.prune}; output {a.format}; fresh templates {'off' if a.no_fresh else 'on'}; "
        f"gc {a.gc}; budget {a.budget:g} s per run\n\n"
    )
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fluxlite-bench-") as td:
        tmp = Path(td)
        req_files = request_files(reqs, bench_dir, tmp)
        formats = ["grug", "jgf"] if a.load_format == "both" else [a.load_format]
        for gname, load_format in [(g, f) for g in graphs for f in formats]:
            source, fmt = _graph_source(gname, bench_dir, load_format, tmp)
            cfg = {
                "graph": gname,
                "source": source,
                "format": fmt,
                "nodes": BENCH_GRAPHS[gname],
                "policies": policies,
                "requests": req_files,
                "prune": a.prune,
                "format_out": a.format,
                "budget": a.budget,
                "load_only": a.load_only,
                "traverser": a.traverser,
                "fresh": not a.no_fresh,
                "gc": a.gc,
            }
            header = [False]

            def progress(row: dict[str, Any], header: list[bool] = header) -> None:
                if row["kind"] == "load":
                    _print_load(row, out)
                else:
                    if not header[0]:
                        out.write(_HEADER)
                        header[0] = True
                    _print_match(row, fluxion, out)

            runs: list[list[dict[str, Any]]] = []
            for k in range(a.repeat):
                if a.repeat > 1:
                    sys.stderr.write(f"fluxlite bench match: {gname}, run {k + 1} of {a.repeat}...\n")
                try:
                    runs.append(_run_worker(cfg, progress if a.repeat == 1 else lambda _row: None))
                except RuntimeError as exc:
                    sys.stderr.write(f"fluxlite bench match: {exc}\n")
                    return 1
            combined = _combine(runs)
            if a.repeat > 1:
                for row in combined:
                    progress(row)
            rows.extend(combined)
            out.write("\n")
    matches = [r for r in rows if r["kind"] == "match"]
    ratios = [
        r["median_ms"] / fluxion[(r["graph"], r["request"], r["policy"])]
        for r in matches
        if r["median_ms"] is not None and (r["graph"], r["request"], r["policy"]) in fluxion
    ]
    if ratios:
        out.write(
            f"fluxlite / Fluxion median-ms ratio over {len(ratios)} comparable runs: "
            f"median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}, best {min(ratios):.2f}\n"
        )
    if a.csv:
        keys = sorted({k for r in rows for k in r})
        with a.csv.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
        out.write(f"wrote {a.csv}\n")
    if a.json:
        a.json.write_text("".join(json.dumps(r) + "\n" for r in rows))
        out.write(f"wrote {a.json}\n")
    if a.plot:
        if _plot(matches, fluxion, a.plot):
            out.write(f"wrote {a.plot}\n")
        else:
            sys.stderr.write(
                "fluxlite bench match: --plot needs matplotlib (pip install 'fluxlite[bench]')\n"
            )
    return 0


#: benchmark name -> (module with a ``main(argv)``, one-line description).  Modules
#: outside ``fluxlite`` are imported only when their benchmark runs, so the engine
#: never imports gRPC, boto3 or kubernetes.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "match": ("fluxlite.cli.bench", "matcher speed on the benchmark graphs (T1..T8 until full)"),
    "differential": (
        "fluxlite.cli.bench_differential",
        "random sessions through Fluxion's resource-query and fluxlite query, compared byte for byte",
    ),
    "hierarchy": ("hierarchy.bench", "nested MatchGrow across five instance processes"),
    "grid": ("fluxlite.grid.bench", "grid allocators with deadlines and leak strategies: cost per operation"),
    "deadline": ("fluxlite.sim.deadline.bench", "deadline simulator: one 1,000-job trace per strategy"),
    "batch": (
        "fluxlite.sim.batch.bench",
        "batch queue simulator: ESP with easy, a 10,000-job SWF on 1,024 nodes",
    ),
    "burst": ("providers.bench", "cloud bursting to EC2 (a local moto server): mapping, call, JGF, attach"),
    "kube": ("kube.bench", "ReplicaSet 1 -> 100 -> 0 through the Kubernetes shim (MatchAllocate/Grow, bind)"),
}


def main_bench(argv: Sequence[str]) -> int:
    """``fluxlite bench NAME ...``; ``kill PID`` stops a benchmark as Ctrl-C does, cleaning up after it."""
    from fluxlite.cli._registry import dispatch
    from fluxlite.cli._signals import terminate_unwinds

    with terminate_unwinds():
        return dispatch("fluxlite bench", BENCHMARKS, argv, what="benchmark")


main = main_bench


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(_worker(json.loads(sys.argv[2])))
    sys.exit(main_bench(sys.argv[1:]))
