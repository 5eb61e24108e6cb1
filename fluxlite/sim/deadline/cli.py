"""``fluxlite sim deadline``: deadline-bound jobs on grid machines, on the real engine.

Subcommands::

    run      one trace under one strategy and communication style
    sweep    strategies x loads x types x comm styles x traces -> one CSV (resumable;
             local processes, or a Dask cluster with --scheduler)
    plot     bar charts with 95 % CIs from a sweep CSV (+ a markdown table);
             or grid occupancy pictures of one run at chosen times (--occupancy)
    bench    one 1,000-job trace on 16x8x4 per strategy: wall time, events/s, peak RSS
    reproduce  the journal study's findings beside fluxlite's (REPRODUCTION-deadline.md)
    trace    write a generated trace as SWF (with type/earliest-start/deadline columns)

Every subcommand takes ``--json FILE`` for its summary.  Bad input gives a
one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.errors import FluxliteError, InputError
from fluxlite.sim.deadline.bench import BENCH_DESCRIPTION, add_bench_arguments, run_bench
from fluxlite.sim.deadline.options import (
    COMM_NAMES,
    LOAD_NAMES,
    STRATEGY_NAMES,
    TYPE_NAMES,
    add_list_option,
    grid_size,
)

__all__ = ["main"]


def _times(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"times must be seconds separated by commas, got {text!r}") from None


def _machine_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("machine")
    g.add_argument(
        "--grid", type=grid_size, default=(16, 8), metavar="WxH", help="nodes on a W x H grid (16x8)"
    )
    g.add_argument("--torus", action="store_true", help="wrap-around links (torus) instead of a mesh")
    g.add_argument("--cores", type=int, default=4, help="cores per node (4)")
    g.add_argument(
        "--backend",
        choices=("auto", "grid", "interim"),
        default="auto",
        help="who chooses nodes: the engine's grid allocators (grid), the simulator's own choosers over "
        "the engine's planner (interim), or grid when available (auto)",
    )


def _workload_args(p: argparse.ArgumentParser, multi: bool) -> None:
    g = p.add_argument_group("workload")
    g.add_argument("--jobs", type=int, default=1000, help="jobs per trace (1000)")
    g.add_argument("--seed", type=int, default=0, help="base seed of the traces (0)")
    g.add_argument(
        "--swf",
        metavar="FILE",
        help="take the jobs from an SWF file (Parallel Workloads Archive) instead of the Lublin-Feitelson "
        "model; type/earliest start/deadline from its extension columns, else generated; its inter-arrival "
        "times are rescaled to the load",
    )
    if not multi:
        g.add_argument(
            "--load", choices=LOAD_NAMES, default="normal", help="inter-arrival factor 1500/150/1 s"
        )
        g.add_argument(
            "--type", choices=TYPE_NAMES, default="uniform", dest="jtype", help="runtime-behaviour type"
        )
        g.add_argument("--trace", type=int, default=0, help="trace number (seeds the trace)")
    g.add_argument(
        "--lag",
        choices=("uniform-63d", "half-1h", "none"),
        default="uniform-63d",
        help="earliest start after submission: U(0, 63 days) (the paper's 65-74-day traces; default), "
        "half the jobs up to 1 h later, or none (ablations)",
    )
    g.add_argument(
        "--margin",
        type=float,
        default=0.0,
        help="requested runtime = runtime x (1 + MARGIN): what a static allocator reserves (0: the paper's "
        "t_runtime)",
    )
    m = p.add_argument_group("model (choices the paper leaves open; see docs)")
    m.add_argument(
        "--comm-model",
        default="",
        metavar="K=V,...",
        help="communication cost settings, e.g. gamma=0 (no link load) or beta=0 (no hop cost); "
        "keys kappa, beta, gamma, local, dynamic_phases",
    )
    m.add_argument(
        "--leak-start",
        choices=("core", "empty"),
        default="core",
        help="the leak's one-node check needs a node with a free core (default) or an empty node",
    )
    m.add_argument(
        "--type2-forks",
        choices=("leak", "local"),
        default="leak",
        help="under a leak policy, type-2 forks use the leak's search (default) or stay on the job's nodes",
    )
    m.add_argument(
        "--static-shift",
        choices=("later", "none"),
        default="later",
        help="static strategies: try later start times up to the deadline (default, figures 6 and 8) or "
        "only the earliest start (the count check of figure 6 line 0 over the job's own window)",
    )
    m.add_argument(
        "--manhattan-growth",
        choices=("free", "strict", "first-seed", "strict-first-seed", "no-polish"),
        default="free",
        help="Manhattan grows through free neighbours from every free first node, then a local search "
        "(default, section 3.2's text); strict: by the distance-minimal neighbour, failing when it is busy "
        "(figure 8's lines 10-18 read literally); first-seed: from the first free node only, else the next "
        "start time (figure 8's lines 19-23); strict-first-seed: both; no-polish: the default without the "
        "local search (ablations)",
    )


def _json_out(path: str | None, data: Any) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _spec(a: argparse.Namespace, strategy: str, comm: str) -> Any:
    from fluxlite.sim.deadline.sweep import RunSpec

    return RunSpec(
        strategy,
        a.load,
        a.jtype,
        comm,
        a.trace,
        jobs=a.jobs,
        seed=a.seed,
        width=a.grid[0],
        height=a.grid[1],
        cores=a.cores,
        torus=a.torus,
        swf=a.swf,
        backend=a.backend,
        **_model(a),
    )


def _model(a: argparse.Namespace) -> dict[str, Any]:
    """The modelling options of a command line, checked (bad values: one-line errors)."""
    from fluxlite.sim.deadline.program import parse_comm_model

    if a.margin < 0:
        raise InputError(f"--margin must be >= 0, got {a.margin}")
    parse_comm_model(a.comm_model)
    return {
        "lag": a.lag,
        "margin": a.margin,
        "comm_model": a.comm_model,
        "leak_start": a.leak_start,
        "type2_forks": a.type2_forks,
        "static_shift": a.static_shift,
        "manhattan_growth": a.manhattan_growth,
    }


def _simulate_spec(spec: Any, snapshots: list[float]) -> tuple[Any, Any]:
    """The machine and the result of the run ``spec`` names, with occupancy snapshots."""
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.program import parse_comm_model
    from fluxlite.sim.deadline.sim import simulate
    from fluxlite.sim.deadline.sweep import make_jobs

    m = Machine(spec.width, spec.height, spec.cores, spec.torus, strategy=spec.strategy, backend=spec.backend)
    res = simulate(
        make_jobs(spec),
        spec.strategy,
        spec.comm,
        machine=m,
        snapshots=snapshots,
        model=parse_comm_model(spec.comm_model),
        leak_start=spec.leak_start,
        type2_forks=spec.type2_forks,
        static_shift=spec.static_shift,
        manhattan_growth=spec.manhattan_growth,
    )
    return m, res


# ---------------------------------------------------------------------------- run
def cmd_run(a: argparse.Namespace) -> int:
    from fluxlite.check import recount_errors

    spec = _spec(a, a.strategy, a.comm)
    m, res = _simulate_spec(spec, a.at)
    d = res.summary()
    d.update(load=a.load, type=a.jtype, trace=a.trace, machine=spec.machine, backend=m.backend)
    if a.check:
        errs = recount_errors(m.engine, [0])
        d["recount_errors"] = len(errs)
        if errs:
            sys.stderr.write(
                "fluxlite sim deadline run: aggregates differ from the recount:\n  "
                + "\n  ".join(errs[:5])
                + "\n"
            )
    w = max(len(k) for k in d)
    for k in (
        "strategy",
        "comm",
        "load",
        "type",
        "trace",
        "machine",
        "jobs",
        "accepted",
        "rejected",
        "cancelled",
        "completed",
        "walltime_kills",
        "utilization",
        "compactness",
        "oversubscribed",
        "makespan",
        "events",
        "wall_seconds",
        "backend",
    ):
        v = d[k]
        print(f"{k:<{w}}  {v:.4g}" if isinstance(v, float) else f"{k:<{w}}  {v}")
    if a.occupancy:
        from fluxlite.sim.deadline.plot import plot_occupancy

        coords = [(int(m.geom.x[i]), int(m.geom.y[i])) for i in range(m.nodes)]
        title = f"{a.strategy}, load {a.load}, type {a.jtype}, comm {a.comm}, trace {a.trace}"
        f = plot_occupancy(res.snapshots, coords, m.cpn, Path(a.occupancy), title)
        print(f"occupancy: {f}")
        d["occupancy"] = str(f)
    if a.outcomes:
        import csv

        with open(a.outcomes, "w", newline="") as fh:
            wr = csv.writer(fh)
            wr.writerow(["jobid", "outcome", "start", "end"])
            wr.writerows(res.outcomes)
    _json_out(a.json, d)
    return 1 if d.get("recount_errors") else 0


# ---------------------------------------------------------------------------- sweep
def cmd_sweep(a: argparse.Namespace) -> int:
    from tqdm import tqdm

    from fluxlite.sim.deadline.sweep import plan, sweep

    specs = plan(
        a.strategies,
        a.loads,
        a.types,
        a.comms,
        a.traces,
        jobs=a.jobs,
        seed=a.seed,
        width=a.grid[0],
        height=a.grid[1],
        cores=a.cores,
        torus=a.torus,
        swf=a.swf,
        backend=a.backend,
        **_model(a),
    )
    out = Path(a.out)
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="run", desc="deadline sweep", disable=a.quiet)
        bar.n = done
        bar.refresh()

    try:
        counts = sweep(specs, out, workers=a.workers, scheduler=a.scheduler, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    print(f"{out}: {counts['ran']} runs done, {counts['skipped']} already there, {counts['planned']} planned")
    _json_out(a.json, {"csv": str(out), **counts})
    return 0


# ---------------------------------------------------------------------------- plot
def cmd_plot(a: argparse.Namespace) -> int:
    from fluxlite.sim.deadline.plot import markdown_table, plot_sweep, summarize

    if not a.csv and not a.at:
        raise InputError(
            "plot needs a sweep CSV, or --at T1,T2 (with the run's options) for occupancy pictures"
        )
    outdir = Path(a.out)
    out: dict[str, Any] = {}
    if a.csv:
        files = plot_sweep(Path(a.csv), outdir)
        summary = summarize(Path(a.csv))
        (outdir / "table.md").write_text(markdown_table(summary))
        for f in files:
            print(f"wrote {f}")
        print(f"wrote {outdir / 'table.md'}")
        out.update(figures=[str(f) for f in files], table=str(outdir / "table.md"), summary=summary)
    if a.at:
        from fluxlite.sim.deadline.plot import plot_occupancy

        spec = _spec(a, a.strategy, a.comm)
        m, res = _simulate_spec(spec, a.at)
        coords = [(int(m.geom.x[i]), int(m.geom.y[i])) for i in range(m.nodes)]
        name = f"occupancy-{a.strategy}-{a.load}-type{a.jtype}-{a.comm}-trace{a.trace}.png"
        title = f"{a.strategy}, load {a.load}, type {a.jtype}, comm {a.comm}, trace {a.trace} ({m.backend})"
        f = plot_occupancy(res.snapshots, coords, m.cpn, outdir / name, title)
        print(f"wrote {f}")
        out["occupancy"] = str(f)
    _json_out(a.json, out)
    return 0


# ---------------------------------------------------------------------------- trace
def cmd_trace(a: argparse.Namespace) -> int:
    from fluxlite.sim.deadline.sweep import RunSpec, make_jobs
    from fluxlite.sim.deadline.workload import to_swf

    spec = RunSpec(
        "count",
        a.load,
        a.jtype,
        "async",
        a.trace,
        jobs=a.jobs,
        seed=a.seed,
        width=a.grid[0],
        height=a.grid[1],
        cores=a.cores,
        torus=a.torus,
        swf=a.swf,
        **_model(a),
    )
    jobs = make_jobs(spec)
    to_swf(jobs, a.out, cores=spec.width * spec.height * spec.cores)
    span = (jobs[-1].submit - jobs[0].submit) / 86400.0
    print(f"{a.out}: {len(jobs)} jobs over {span:.2f} days")
    _json_out(a.json, {"swf": a.out, "jobs": len(jobs), "span_days": span})
    return 0


# ---------------------------------------------------------------------------- reproduce
def cmd_reproduce(a: argparse.Namespace) -> int:
    from fluxlite.sim.deadline.reproduce import section

    out = Path(a.out)
    md = section(out, quick=a.quick, progress=None if a.quiet else print, run=not a.no_run)
    dest = out / "deadline" / "REPRODUCTION-deadline.md"
    dest.write_text(md)
    print(f"wrote {dest}")
    _json_out(a.json, {"markdown": str(dest)})
    return 0


# ---------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluxlite sim deadline",
        description="Deadline-bound jobs on grid machines: static allocators (count, hilbert, manhattan) "
        "reserve at submission; leak policies (leak, leak-noncontig) grow and shrink jobs at run time. "
        "All on the fluxlite engine, with one SimPy virtual clock.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{run,sweep,plot,bench,reproduce,trace}")

    r = sub.add_parser(
        "run", help="simulate one trace", description="Simulate one trace and print its metrics."
    )
    r.add_argument("--strategy", "-s", choices=STRATEGY_NAMES, default="hilbert", help="strategy (hilbert)")
    r.add_argument(
        "--comm", choices=COMM_NAMES, default="async", help="async send + sync receive, or sync send"
    )
    _workload_args(r, multi=False)
    _machine_args(r)
    r.add_argument(
        "--at", type=_times, default=[], metavar="T1,T2", help="snapshot times (s) for --occupancy"
    )
    r.add_argument("--occupancy", metavar="PNG", help="draw the grid at the --at times (one colour per job)")
    r.add_argument("--outcomes", metavar="CSV", help="write each job's outcome, start and end")
    r.add_argument(
        "--check", action="store_true", help="compare the engine's aggregates with a recount afterwards"
    )
    r.add_argument("--json", metavar="FILE", help="write the metrics as JSON")
    r.set_defaults(fn=cmd_run)

    s = sub.add_parser(
        "sweep",
        help="run a sweep into one CSV (resumable)",
        description="Run every strategy x load x type x comm x trace not yet in --out, appending one row per "
        "run. Interrupt and rerun freely: finished runs are skipped.",
    )
    add_list_option(s, "--strategies", STRATEGY_NAMES, "strategies")
    add_list_option(s, "--loads", LOAD_NAMES, "loads")
    add_list_option(s, "--types", TYPE_NAMES, "runtime-behaviour types")
    add_list_option(s, "--comms", COMM_NAMES, "communication styles")
    s.add_argument("--traces", type=int, default=20, help="traces per configuration (20)")
    _workload_args(s, multi=True)
    _machine_args(s)
    s.add_argument(
        "--out", "-o", default="deadline-sweep.csv", help="the CSV (appended to; deadline-sweep.csv)"
    )
    s.add_argument("--workers", type=int, default=None, help="local worker processes (default: CPU count)")
    s.add_argument("--scheduler", metavar="ADDR", help="fan out over a Dask cluster (tcp://host:port)")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    s.add_argument("--json", metavar="FILE", help="write the run counts as JSON")
    s.set_defaults(fn=cmd_sweep)

    pl = sub.add_parser(
        "plot",
        help="figures and a table from a sweep CSV",
        description="Bar charts (accepted / cancelled / completed, 95 % CI) per comm style and a markdown "
        "table of means from a sweep CSV; and/or, with --at, grid occupancy pictures (one colour per job) "
        "of the run named by --strategy/--load/--type/--comm/--trace at those times.",
    )
    pl.add_argument("csv", nargs="?", help="the sweep CSV")
    pl.add_argument(
        "--at", type=_times, default=[], metavar="T1,T2", help="occupancy pictures at these times (s)"
    )
    pl.add_argument(
        "--strategy", "-s", choices=STRATEGY_NAMES, default="hilbert", help="(occupancy) strategy"
    )
    pl.add_argument("--comm", choices=COMM_NAMES, default="async", help="(occupancy) communication style")
    _workload_args(pl, multi=False)
    _machine_args(pl)
    pl.add_argument("--out", "-o", default="deadline-plots", help="output directory (deadline-plots)")
    pl.add_argument("--json", metavar="FILE", help="write the summary (means, CIs) as JSON")
    pl.set_defaults(fn=cmd_plot)

    b = sub.add_parser(
        "bench",
        help="speed of one 1,000-job trace per strategy",
        description=BENCH_DESCRIPTION,
    )
    add_bench_arguments(b)
    b.set_defaults(fn=run_bench)

    rp = sub.add_parser(
        "reproduce",
        help="the journal study's findings beside fluxlite's (markdown, figures, data)",
        description="Run (or resume) the reproduction sweep and its ablations under OUT/deadline, draw the "
        "figures in the paper's layout and write OUT/deadline/REPRODUCTION-deadline.md: each published "
        "finding, fluxlite's number and a verdict. The full run is 20 traces per configuration (hours on two "
        "busy cores; resumable); --quick is a smoke run in seconds.",
    )
    rp.add_argument("--out", "-o", required=True, help="output directory (the sweep goes in OUT/deadline)")
    rp.add_argument("--quick", action="store_true", help="small traces, one trace, no ablations")
    rp.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    rp.add_argument(
        "--no-run", action="store_true", help="run nothing: report the data already in OUT/deadline"
    )
    rp.add_argument("--json", metavar="FILE", help="write the markdown's path as JSON")
    rp.set_defaults(fn=cmd_reproduce)

    t = sub.add_parser(
        "trace", help="write a trace as SWF", description="Write a generated (or rescaled SWF) trace as SWF."
    )
    _workload_args(t, multi=False)
    _machine_args(t)
    t.add_argument("--out", "-o", required=True, help="the SWF file to write (.gz compresses)")
    t.add_argument("--json", metavar="FILE", help="write the file name, job count and span as JSON")
    t.set_defaults(fn=cmd_trace)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = build_parser()
    a = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    for name in ("jobs", "traces", "cores", "repeat"):
        v = getattr(a, name, None)
        if v is not None and v < 1:
            p.error(f"--{name} must be >= 1")
    if getattr(a, "workers", None) is not None and a.workers < 1:
        p.error("--workers must be >= 1")
    if getattr(a, "swf", None) and not os.path.exists(a.swf):
        sys.stderr.write(f"fluxlite sim deadline: no such SWF file: {a.swf}\n")
        return 2
    try:
        if a.cmd == "bench":  # kill PID: its worker, the baseline's process and its temporary tree go too
            from fluxlite.cli._signals import terminate_unwinds

            with terminate_unwinds():
                return int(a.fn(a) or 0)
        return int(a.fn(a) or 0)
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite sim deadline {a.cmd}: {exc}\n")
        return 2
    except KeyboardInterrupt as exc:
        signum = int(getattr(exc, "signum", signal.SIGINT))
        done = " (finished sweep runs are kept; rerun to resume)" if a.cmd == "sweep" else ""
        sys.stderr.write(f"fluxlite sim deadline {a.cmd}: stopped by {signal.Signals(signum).name}{done}\n")
        return 128 + signum
