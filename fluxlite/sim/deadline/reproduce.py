"""The deadline study's part of ``REPRODUCTION.md``: the published findings beside fluxlite's.

:func:`section` runs (or resumes) the sweep and the ablations under
``out_dir/deadline/``, draws the figures in the papers' layout (one panel per
load, the runtime-behaviour types on the x axis, one bar per policy, 95 %
confidence intervals) and returns the markdown: per published finding, the
paper's figure or number, fluxlite's, and a verdict; for each disagreement,
the ablations that test a cause.  The sweep is resumable: a rerun only runs
what is missing, and a finished ``out_dir/deadline/sweep.csv`` is reused as is.

The paper is ``../shared/papers/deadline-static-vs-leak-journal.txt``
("the journal"); every modelling choice is listed with its source in
:data:`CHOICES` (the module docstrings of ``workload``, ``sim`` and
``program`` say the same at the code).
"""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fluxlite.sim.deadline.options import LOAD_NAMES, STRATEGY_NAMES, TYPE_NAMES

__all__ = ["ABLATIONS", "CHOICES", "FULL_TRACES", "offered_load", "section"]

#: traces per configuration of the full reproduction (the issue's target; the paper ran 320)
FULL_TRACES = 20

#: the quick (smoke) run: small traces on a small grid, types 0 and 2, one trace, async, no ablations
QUICK: dict[str, Any] = {"jobs": 30, "width": 4, "height": 4, "types": ("0", "2")}

#: (choice, what fluxlite does, source in the papers or "silent", ablation file or "")
CHOICES: tuple[tuple[str, str, str, str], ...] = (
    (
        "machine",
        "16x8 grid of 4-core nodes (512 cores), mesh",
        "journal section 5 (128 nodes, 512 cores, grid topology)",
        "",
    ),
    (
        "loads",
        "submission gaps rescaled to a mean of 1500 / 150 / 1 s",
        "journal section 5 (inter-arrival factor 1500 / 150 / 1; very heavy = one request a second)",
        "",
    ),
    (
        "earliest start",
        "submission + U(0, 63 days)",
        "silent on the rule; the journal's traces last ~65 days (heavy, very heavy) and ~74 days (normal) "
        "at one request a second (section 5), which needs start times weeks after submission; uniform: the "
        "least assumption",
        "lag-half-1h.csv (half at submission, rest within 1 h: the earlier choice); sweep-before.csv",
    ),
    (
        "Manhattan partition",
        "every free node in machine order may be the first node; growth through free neighbours by the least "
        "added total Manhattan distance; then a local search (fluxlite's own)",
        "journal section 3.2 text and figure 9 (the next nodes are tried as a new first node); figure 8's "
        "pseudocode instead takes the next time interval after one failed first node (lines 19-23) and picks "
        "the nearest neighbour before checking it is free (lines 10-18); the papers describe no local search",
        "manhattan-strict, manhattan-first-seed, manhattan-strict-first-seed (each also with lag-half-1h), "
        "manhattan-no-polish",
    ),
    (
        "runtime",
        "the trace's runtime is the program's time on a compact partition of an empty machine",
        "journal section 5 ('adapted to be able to run ... using a compact partition of an empty HPC system "
        "at the given runtime')",
        "",
    ),
    (
        "reservation length",
        "requested = runtime",
        "figures 6 and 8 reserve [t_start, t_start + t_runtime]",
        "margin-0.25.csv (requested = 1.25 x runtime)",
    ),
    (
        "deadline slack",
        "importance x (0.25 + 0.25 log2(cores)), importance U(0.5, 1.5)",
        "silent on the form; section 5 says slack is related to importance and size; chosen to grow with both",
        "",
    ),
    (
        "leak one-node check",
        "at the job's earliest start: first node in snake order from a rotating entry with a free core; "
        "none: rejected (no waiting)",
        "section 4.1 and figure 10 (no advance reservation, started at the earliest possible time, "
        "line 7 rejects); section 5.1 (the check is for one node)",
        "",
    ),
    (
        "'free' node",
        "a node with a free core",
        "ambiguous: 'an empty compute node' (journal 4.1), 'an empty compute node or CPU core' (conference "
        "4), a CPU core is searched at each fork (journal 5)",
        "leak-start-empty.csv (the first node must be empty)",
    ),
    (
        "leak forks",
        "every fork of every type: parent's node, its neighbours, the partition's neighbours; then "
        "oversubscribe (contiguous) or snake search (non-contiguous)",
        "sections 4.1, 4.2 and 5 ('the search for a new CPU core is performed when a process invokes a fork')",
        "type2-local.csv (type-2 forks kept on the job's own nodes: the earlier choice)",
    ),
    (
        "communication",
        "message time v (1 + 0.25 hops)(1 + 0.5 link load); async: wait for the slowest incoming; "
        "sync: also each outgoing in turn",
        "silent on the formula; sections 4.2 and 5.2: cost grows with distance and link load",
        "comm-gamma0.csv (no link-load term)",
    ),
    (
        "cancellation",
        "leak: at the deadline; static: at the end of the reservation (its nodes are released there)",
        "section 5 (termination when the deadline is reached) and section 3.2 (resources released at the "
        "specified end time)",
        "margin-0.25.csv (a longer reservation)",
    ),
)

#: ablation name -> (sweep options, strategies, types)
ABLATIONS: dict[str, tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = {
    "type2-local": ({"type2_forks": "local"}, ("leak", "leak-noncontig"), ("2",)),
    "margin-0.25": ({"margin": 0.25}, ("count", "hilbert", "manhattan"), ("uniform",)),
    "leak-start-empty": ({"leak_start": "empty"}, ("leak", "leak-noncontig"), ("uniform",)),
    "lag-half-1h": ({"lag": "half-1h"}, STRATEGY_NAMES, ("uniform", "0", "1")),
    "comm-gamma0": ({"comm_model": "gamma=0"}, STRATEGY_NAMES, ("uniform",)),
    "static-shift-none": ({"static_shift": "none"}, ("count", "hilbert", "manhattan"), ("uniform",)),
    "manhattan-strict": ({"manhattan_growth": "strict"}, ("manhattan",), ("uniform",)),
    "manhattan-strict-lag-half-1h": (
        {"manhattan_growth": "strict", "lag": "half-1h"},
        ("manhattan",),
        ("uniform",),
    ),
    "manhattan-first-seed": ({"manhattan_growth": "first-seed"}, ("manhattan",), ("uniform",)),
    "manhattan-first-seed-lag-half-1h": (
        {"manhattan_growth": "first-seed", "lag": "half-1h"},
        ("manhattan",),
        ("uniform",),
    ),
    "manhattan-strict-first-seed": ({"manhattan_growth": "strict-first-seed"}, ("manhattan",), ("uniform",)),
    "manhattan-strict-first-seed-lag-half-1h": (
        {"manhattan_growth": "strict-first-seed", "lag": "half-1h"},
        ("manhattan",),
        ("uniform",),
    ),
    "manhattan-no-polish": ({"manhattan_growth": "no-polish"}, ("manhattan",), ("uniform",)),
}

Rows = list[dict[str, str]]


def _read(path: Path) -> Rows:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _mean(rows: Rows, metric: str, **where: str | Iterable[str]) -> tuple[float, int]:
    """Mean of ``metric`` over the rows matching ``where`` (a value or a set of values), and their count."""
    sel = []
    for r in rows:
        ok = True
        for k, v in where.items():
            if (r[k] != v) if isinstance(v, str) else (r[k] not in v):
                ok = False
                break
        if ok:
            sel.append(float(r[metric]))
    return (sum(sel) / len(sel), len(sel)) if sel else (math.nan, 0)


def _fmt(x: float, digits: int = 0) -> str:
    return "n/a" if math.isnan(x) else f"{x:,.{digits}f}"


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.1%}"


def _verdict(ok: bool | None) -> str:
    return "no data" if ok is None else ("reproduces" if ok else "**does not reproduce**")


def _run(out: Path, quick: bool, progress: Callable[[str], None] | None) -> tuple[Path, dict[str, Path]]:
    from fluxlite.sim.deadline.sweep import plan, sweep

    jobs = QUICK["jobs"] if quick else 1000
    traces = 1 if quick else FULL_TRACES
    comms = ("async",) if quick else ("async", "sync")
    types = QUICK["types"] if quick else TYPE_NAMES
    workers = max(1, min(2, os.cpu_count() or 1))
    common: dict[str, Any] = {"jobs": jobs}
    if quick:
        common.update(width=QUICK["width"], height=QUICK["height"])
    main = out / "sweep.csv"
    if progress:
        progress(f"deadline: sweep into {main}")
    sweep(plan(STRATEGY_NAMES, LOAD_NAMES, types, comms, traces, **common), main, workers=workers)
    abl: dict[str, Path] = {}
    if not quick:  # the ablations: one trace per configuration, async, every load
        for name, (opts, strategies, atypes) in ABLATIONS.items():
            path = out / "ablations" / f"{name}.csv"
            if progress:
                progress(f"deadline: ablation {name} into {path}")
            sweep(
                plan(strategies, LOAD_NAMES, atypes, ("async",), 1, jobs=jobs, **opts), path, workers=workers
            )
            abl[name] = path
    return main, abl


def _complete(rows: Rows, comm: str = "async") -> Rows:
    """The rows of ``comm`` from the traces that hold every configuration present (a sweep stopped in
    the middle of a trace would otherwise weigh some configurations more than others)."""
    mine = [r for r in rows if r["comm"] == comm]
    cfgs = {(r["strategy"], r["load"], r["type"]) for r in mine}
    have: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for r in mine:
        have[r["trace"]].add((r["strategy"], r["load"], r["type"]))
    full = {t for t, c in have.items() if c == cfgs}
    return [r for r in mine if r["trace"] in full]


def _findings(rows: Rows, comm: str = "async") -> list[tuple[str, str, str, str]]:
    """(finding with its source, the paper's figure, fluxlite's, verdict) for each published finding."""
    rows = _complete(rows, comm)
    out = []
    a = {"comm": comm}
    leak = ("leak", "leak-noncontig")
    static = ("count", "hilbert", "manhattan")

    def share(
        metric: str, strategy: str | tuple[str, ...], load: str, types: str | tuple[str, ...] = TYPE_NAMES
    ):
        jobs, n = _mean(rows, "jobs", strategy=strategy, load=load, type=types, **a)
        got, _ = _mean(rows, metric, strategy=strategy, load=load, type=types, **a)
        return got / jobs if n else math.nan

    # 1. leak accepts nearly all at every load
    acc = [share("accepted", leak, ld) for ld in LOAD_NAMES]
    ok = None if any(math.isnan(x) for x in acc) else all(x >= 0.9 for x in acc)
    out.append(
        (
            "Leak policies accept nearly all jobs at every load (journal 5.1, figure 14)",
            "nearly all (read: >= 90 %)",
            " / ".join(_pct(x) for x in acc) + " (normal / heavy / very heavy)",
            _verdict(ok),
        )
    )
    # 2. count-only check: 510 / 400 / 260 accepted
    cnt = [share("accepted", "count", ld) for ld in LOAD_NAMES]
    pub = (0.51, 0.40, 0.26)
    ok = None if any(math.isnan(x) for x in cnt) else all(abs(x - p) <= 0.2 * p for x, p in zip(cnt, pub))
    out.append(
        (
            "The count-only check (figure 6, line 0) accepts 510 / 400 / 260 of 1,000 jobs and falls with load "
            "(journal 5.1)",
            "51 % / 40 % / 26 %",
            " / ".join(_pct(x) for x in cnt)
            + f" (falls with load: {'yes' if cnt[0] > cnt[1] > cnt[2] else 'no'})",
            _verdict(ok) + " (within 20 % at each load)",
        )
    )
    # 3. Manhattan vs Hilbert acceptance
    ratio = []
    for ld in ("normal", "very-heavy"):
        m, _ = _mean(rows, "accepted", strategy="manhattan", load=ld, **a)
        h, _ = _mean(rows, "accepted", strategy="hilbert", load=ld, **a)
        ratio.append(m / h if h else math.nan)
    ok = None if any(math.isnan(x) for x in ratio) else (ratio[0] >= 1.0 and 0.35 <= ratio[1] <= 0.65)
    out.append(
        (
            "Manhattan accepts slightly more than Hilbert at normal load and about half as many at very heavy "
            "load (journal 5.1)",
            "ratio > 1 (normal), ~0.5 (very heavy)",
            f"{ratio[0]:.2f} (normal), {ratio[1]:.2f} (very heavy)",
            _verdict(ok) + " (very heavy within 0.35-0.65)",
        )
    )
    # 4. dynamic types: Hilbert completes about half of the leak's under normal load
    dyn = ("2", "3")
    h = share("completed", "hilbert", "normal", dyn)
    lk = share("completed", leak, "normal", dyn)
    r = h / lk if lk else math.nan
    out.append(
        (
            "Dynamic types (2, 3), normal load: Hilbert completes only about half as many jobs as the leak "
            "policies (journal 5.3, figure 17a)",
            "Hilbert / leak ~ 0.5",
            f"Hilbert {_pct(h)}, leak {_pct(lk)} of jobs: ratio {r:.2f}",
            _verdict(None if math.isnan(r) else r <= 0.75) + " (ratio <= 0.75)",
        )
    )
    # 5. static types at very heavy: static better than contiguous leak only for type 0; noncontig better
    h0 = share("completed", "hilbert", "very-heavy", "0")
    l0 = share("completed", "leak", "very-heavy", "0")
    n0 = share("completed", "leak-noncontig", "very-heavy", "0")
    ok = None if math.isnan(h0 + l0 + n0) else (h0 > l0 and n0 > h0)
    out.append(
        (
            "Type 0 at very heavy load: Hilbert completes more than the contiguous leak, the non-contiguous "
            "leak more than Hilbert (journal 5.3)",
            "leak < Hilbert < leak-noncontig",
            f"leak {_pct(l0)}, Hilbert {_pct(h0)}, leak-noncontig {_pct(n0)}",
            _verdict(ok),
        )
    )
    # 6. leak cancellations grow with load
    canc = [share("cancelled", leak, ld) / max(share("accepted", leak, ld), 1e-9) for ld in LOAD_NAMES]
    ok = None if any(math.isnan(x) for x in canc) else canc[0] < canc[1] < canc[2]
    out.append(
        (
            "The leak policies' share of cancelled jobs grows with load (journal 5.2, figure 15)",
            "increasing",
            " / ".join(_pct(x) for x in canc) + " of accepted (normal / heavy / very heavy)",
            _verdict(ok),
        )
    )
    # 7. statics cancel a significant number too; Manhattan cancels least for type 1
    c1 = {s: share("cancelled", s, "normal", "1") for s in (*static, *leak)}
    lowest = min((v for v in c1.values() if not math.isnan(v)), default=math.nan)
    out.append(
        (
            "Manhattan cancels the fewest BSP (type 1) jobs of the four policies (journal 5.2)",
            "Manhattan lowest",
            ", ".join(f"{s} {_pct(v)}" for s, v in c1.items() if s != "count") + " (normal load)",
            _verdict(None if math.isnan(c1["manhattan"]) else c1["manhattan"] <= lowest),
        )
    )
    return out


def _ablation_table(rows: Rows, abl: dict[str, Path]) -> list[str]:
    lines = [
        "| ablation | strategy | load | accepted (default -> ablation) | cancelled | completed |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, path in abl.items():
        arows = _read(path)
        if not arows:
            lines.append(f"| {name} | (not run) | | | | |")
            continue
        keys = sorted(
            {(r["strategy"], r["load"], r["type"]) for r in arows},
            key=lambda k: (
                STRATEGY_NAMES.index(k[0]) if k[0] in STRATEGY_NAMES else 9,
                LOAD_NAMES.index(k[1]),
                TYPE_NAMES.index(k[2]) if k[2] in TYPE_NAMES else 9,
            ),
        )
        for s, ld, t in keys:
            traces = {r["trace"] for r in arows if (r["strategy"], r["load"], r["type"]) == (s, ld, t)}
            cells = []
            for m in ("accepted", "cancelled", "completed"):
                d, n = _mean(rows, m, strategy=s, load=ld, type=t, comm="async", trace=traces)
                x, _ = _mean(arows, m, strategy=s, load=ld, type=t, comm="async")
                cells.append(f"{_fmt(d)} -> {_fmt(x)}" if n else f"(no default) -> {_fmt(x)}")
            lines.append(f"| {name} (type {t}) | {s} | {ld} | " + " | ".join(cells) + " |")
    return lines


def _causes(out: Path) -> list[str]:
    """The causes section: the offered-load table (computed) and ``deadline/CAUSES.md`` (the reading of
    the papers and of the ablations above, written by hand, if present)."""
    md = [
        "### How much of the machine the traces ask for",
        "",
        "Computed from the generator (`fluxlite.sim.deadline.reproduce.offered_load`, trace 0 of each load, "
        "uniform mix): whole nodes x requested time of all jobs over 128 nodes x the span.",
        "",
        *offered_load(),
        "",
    ]
    notes = out / "CAUSES.md"
    if notes.exists():
        md += [notes.read_text().strip(), ""]
    return md


def offered_load(lags: Iterable[str] = ("uniform-63d", "half-1h", "none"), traces: int = 1) -> list[str]:
    """Markdown table: how much of the machine each trace asks for, per lag model and load.

    Offered load = sum over jobs of (whole nodes x requested seconds) over (nodes x the trace's span,
    first submission to last deadline); also over the execution window alone (first earliest start to
    last earliest start + requested).  A pure function of the generator (no simulation): the traces
    of the sweep (``make_jobs``, seeds as in the sweep).
    """
    from fluxlite.sim.deadline.sweep import RunSpec, make_jobs

    lines = [
        "| lag model | load | span (days) | offered load over the span | over the execution window | "
        "mean job (node-hours) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for lag in lags:
        for ld in LOAD_NAMES:
            span = load_span = load_exec = vol = 0.0
            for t in range(traces):
                spec = RunSpec("count", ld, "uniform", "async", t, lag=lag)
                jobs = make_jobs(spec)
                nodes = spec.width * spec.height
                cpn = spec.cores
                demand = sum(math.ceil(j.procs / cpn) * j.requested for j in jobs)
                sp = max(j.deadline for j in jobs) - min(j.submit for j in jobs)
                ex = max(j.earliest_start + j.requested for j in jobs) - min(j.earliest_start for j in jobs)
                span += sp / 86400
                load_span += demand / (nodes * sp)
                load_exec += demand / (nodes * max(ex, 1))
                vol += demand / len(jobs) / 3600
            k = traces
            lines.append(
                f"| {lag} | {ld} | {span / k:.1f} | {load_span / k:.3f} | {load_exec / k:.3f} | {vol / k:.1f} |"
            )
    return lines


def section(
    out_dir: Path, quick: bool = False, progress: Callable[[str], None] | None = None, *, run: bool = True
) -> str:
    """Run (or resume) the deadline study under ``out_dir/deadline`` and return its markdown section.

    ``quick``: :data:`QUICK` (30-job traces on a 4x4 grid, one trace, types 0 and 2, async only,
    no ablations): a smoke run of the whole path in seconds; its numbers are not the study's.
    A ``sweep-before.csv`` beside the sweep (the runs of an earlier model) gets its own column.
    ``run=False``: no new runs, the section reports the data already under ``out_dir/deadline``.
    """
    from fluxlite.sim.deadline.plot import plot_sweep

    out = Path(out_dir) / "deadline"
    out.mkdir(parents=True, exist_ok=True)
    if run:
        main, abl = _run(out, quick, progress)
    else:
        main = out / "sweep.csv"
        abl = {
            n: out / "ablations" / f"{n}.csv" for n in ABLATIONS if (out / "ablations" / f"{n}.csv").exists()
        }
    rows = _read(main)
    figs = plot_sweep(main, out / "plots") if rows else []
    per_cfg: dict[tuple[str, ...], int] = defaultdict(int)
    for r in rows:
        per_cfg[(r["strategy"], r["load"], r["type"], r["comm"])] += 1
    n_min = min(per_cfg.values(), default=0)
    n_max = max(per_cfg.values(), default=0)
    rel = lambda p: os.path.relpath(p, out_dir)  # noqa: E731 - paths in the markdown, relative to it
    md = [
        "## Deadlines: static allocators vs leak policies",
        "",
        "Paper: *static vs dynamic resource allocation for deadline-constrained HPC jobs* (journal version, "
        "`../shared/papers/deadline-static-vs-leak-journal.txt`; conference version "
        "`deadline-leak-conference.txt`). Command: `fluxlite sim reproduce` (this section: "
        "`fluxlite.sim.deadline.reproduce.section`); the sweep alone: `fluxlite sim deadline sweep`.",
        "",
        f"Data: `{rel(main)}` ({len(rows)} runs; {n_min}-{n_max} traces per configuration; the findings use "
        f"the {len({r['trace'] for r in _complete(rows)})} async and "
        f"{len({r['trace'] for r in _complete(rows, 'sync')})} sync traces complete for every configuration"
        + (
            f", quick mode: {QUICK['jobs']}-job traces on {QUICK['width']}x{QUICK['height']}, not the study's size"
            if quick
            else ""
        )
        + "; the paper used 320). 95 % confidence intervals are Student t over the traces.",
        "",
        "### Findings",
        "",
    ]
    before = _read(out / "sweep-before.csv")
    sync = _findings(rows, "sync") if _complete(rows, "sync") else []
    if before:
        md += [
            "| published finding | paper | fluxlite (async) | verdict | fluxlite (sync) | "
            "before this reproduction (`sweep-before.csv`, async) |",
            "|---|---|---|---|---|---|",
        ]
        for i, (f, b) in enumerate(zip(_findings(rows), _findings(before))):
            sy = f"{sync[i][2]} ({sync[i][3]})" if sync else "not run"
            md.append("| " + " | ".join(f) + f" | {sy} | {b[2]} ({b[3]}) |")
    else:
        md += ["| published finding | paper | fluxlite (async) | verdict |", "|---|---|---|---|"]
        md += ["| " + " | ".join(f) + " |" for f in _findings(rows)]
    md += [
        "",
        "### Modelling choices",
        "",
        "| choice | fluxlite | source | ablation |",
        "|---|---|---|---|",
    ]
    md += ["| " + " | ".join(c) + " |" for c in CHOICES]
    md += [
        "",
        "### Ablations (the default's traces beside the ablation's, async)",
        "",
        *(_ablation_table(rows, abl) if abl else ["(quick mode: no ablations)"]),
        "",
        *([] if quick else _causes(out)),
        "### Figures",
        "",
        "Layout of the journal's figures 14, 15 and 17 (accepted, cancelled, completed; one panel per load; "
        "the types on the x axis; one bar per policy): " + ", ".join(f"`{rel(f)}`" for f in figs),
        "",
    ]
    for f in figs:
        md.append(f"![{f.stem}]({rel(f)})")
    md.append("")
    return "\n".join(md)
