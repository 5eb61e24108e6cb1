"""``fluxlite sim deadline``: deadline-bound jobs on grid machines, on the real engine.

Subcommands::

    run      one trace under one strategy and communication style
    sweep    strategies x loads x types x comm styles x traces -> one CSV (resumable;
             local processes, or a Dask cluster with --scheduler)
    plot     bar charts with 95 % CIs from a sweep CSV (+ a markdown table);
             or grid occupancy pictures of one run at chosen times (--occupancy)
    bench    one 1,000-job trace on 16x8x4 per strategy: wall time, events/s, peak RSS
    trace    write a generated trace as SWF (with type/earliest-start/deadline columns)

Every subcommand takes ``--json FILE`` for its summary.  Bad input gives a
one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.errors import FluxliteError, InputError

__all__ = ["main"]

STRATEGY_NAMES = ("count", "hilbert", "manhattan", "leak", "leak-noncontig")
LOAD_NAMES = ("normal", "heavy", "very-heavy")
TYPE_NAMES = ("0", "1", "2", "3", "uniform")
COMM_NAMES = ("async", "sync")


def _grid(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"grid must look like 16x8, got {text!r}") from None
    if w < 1 or h < 1:
        raise argparse.ArgumentTypeError(f"grid sides must be >= 1, got {text!r}")
    return w, h


def _csv_list(choices: Sequence[str]):  # type: ignore[no-untyped-def]
    def parse(text: str) -> list[str]:
        vals = [v.strip() for v in text.split(",") if v.strip()]
        if vals == ["all"]:
            return list(choices)
        bad = [v for v in vals if v not in choices]
        if bad or not vals:
            raise argparse.ArgumentTypeError(
                f"{bad[0] if bad else text!r}: choose from {', '.join(choices)} or all"
            )
        return vals

    return parse


def _times(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"times must be seconds separated by commas, got {text!r}") from None


def _machine_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("machine")
    g.add_argument("--grid", type=_grid, default=(16, 8), metavar="WxH", help="nodes on a W x H grid (16x8)")
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
    )


# ---------------------------------------------------------------------------- run
def cmd_run(a: argparse.Namespace) -> int:
    from fluxlite.check import recount_errors
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.sim import simulate
    from fluxlite.sim.deadline.sweep import make_jobs

    spec = _spec(a, a.strategy, a.comm)
    jobs = make_jobs(spec)
    m = Machine(spec.width, spec.height, spec.cores, spec.torus, strategy=a.strategy, backend=a.backend)
    res = simulate(jobs, a.strategy, a.comm, machine=m, snapshots=a.at)
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
        from fluxlite.sim.deadline.placement import Machine
        from fluxlite.sim.deadline.plot import plot_occupancy
        from fluxlite.sim.deadline.sim import simulate
        from fluxlite.sim.deadline.sweep import make_jobs

        spec = _spec(a, a.strategy, a.comm)
        m = Machine(spec.width, spec.height, spec.cores, spec.torus, strategy=a.strategy, backend=a.backend)
        res = simulate(make_jobs(spec), a.strategy, a.comm, machine=m, snapshots=a.at)
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
    )
    jobs = make_jobs(spec)
    to_swf(jobs, a.out, cores=spec.width * spec.height * spec.cores)
    span = (jobs[-1].submit - jobs[0].submit) / 86400.0
    print(f"{a.out}: {len(jobs)} jobs over {span:.2f} days")
    _json_out(a.json, {"swf": a.out, "jobs": len(jobs), "span_days": span})
    return 0


# ---------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluxlite sim deadline",
        description="Deadline-bound jobs on grid machines: static allocators (count, hilbert, manhattan) "
        "reserve at submission; leak policies (leak, leak-noncontig) grow and shrink jobs at run time. "
        "All on the fluxlite engine, with one SimPy virtual clock.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{run,sweep,plot,bench,trace}")

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
    s.add_argument(
        "--strategies",
        type=_csv_list(STRATEGY_NAMES),
        default=list(STRATEGY_NAMES),
        metavar="LIST",
        help=f"comma-separated strategies (default all: {','.join(STRATEGY_NAMES)})",
    )
    s.add_argument(
        "--loads", type=_csv_list(LOAD_NAMES), default=list(LOAD_NAMES), metavar="LIST",
        help=f"comma-separated loads (default all: {','.join(LOAD_NAMES)})",
    )
    s.add_argument(
        "--types", type=_csv_list(TYPE_NAMES), default=list(TYPE_NAMES), metavar="LIST",
        help=f"comma-separated runtime-behaviour types (default all: {','.join(TYPE_NAMES)})",
    )
    s.add_argument(
        "--comms", type=_csv_list(COMM_NAMES), default=list(COMM_NAMES), metavar="LIST",
        help=f"comma-separated communication styles (default all: {','.join(COMM_NAMES)})",
    )  # fmt: skip
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
        description="Bar charts (accepted / cancelled / completed, 95% CI) per comm style and a markdown "
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
        description="One 1,000-job trace on the 16x8x4 machine per strategy, each in a fresh process: "
        "wall time (median of --repeat), events per second, peak RSS. Target: <= 2 s per trace.",
    )
    b.add_argument(
        "--strategies",
        type=_csv_list(STRATEGY_NAMES),
        default=list(STRATEGY_NAMES),
        metavar="LIST",
        help=f"comma-separated strategies (default all: {','.join(STRATEGY_NAMES)})",
    )
    b.add_argument("--load", choices=LOAD_NAMES, default="normal", help="load (normal)")
    b.add_argument("--type", choices=TYPE_NAMES, default="uniform", dest="jtype", help="job type (uniform)")
    b.add_argument("--comm", choices=COMM_NAMES, default="async", help="communication style (async)")
    b.add_argument("--jobs", type=int, default=1000, help="jobs per trace (1000)")
    b.add_argument("--repeat", type=int, default=3, help="runs per strategy (median; 3)")
    b.add_argument(
        "--backend", choices=("auto", "grid", "interim"), default="auto", help="who chooses nodes (auto; see run)"
    )
    b.add_argument("--json", metavar="FILE", help="write the measurements as JSON")
    b.set_defaults(fn=cmd_bench)

    t = sub.add_parser(
        "trace", help="write a trace as SWF", description="Write a generated (or rescaled SWF) trace as SWF."
    )
    _workload_args(t, multi=False)
    _machine_args(t)
    t.add_argument("--out", "-o", required=True, help="the SWF file to write (.gz compresses)")
    t.add_argument("--json", metavar="FILE", help="write the file name, job count and span as JSON")
    t.set_defaults(fn=cmd_trace)
    return p


def cmd_bench(a: argparse.Namespace) -> int:
    from fluxlite.sim.deadline.bench import run_bench

    return run_bench(a)


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
        return int(a.fn(a) or 0)
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite sim deadline {a.cmd}: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted (finished sweep runs are kept; rerun to resume)\n")
        return 130
