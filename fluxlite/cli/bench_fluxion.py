"""``fluxlite bench match --against PATH``: fluxlite and Fluxion's resource-query side by side.

Both programs get the same graph file, the same jobspec files and the same
command stream on standard input, each in a fresh process, alternating
(Fluxion first in odd runs, fluxlite first in even ones), and both time
every match themselves (``-e``: ``INFO: ELAPSE=`` seconds, which includes
reading the jobspec and writing the match output in both).  A cell's figure
is the median over runs of the per-run median; the ratio is fluxlite's over
Fluxion's.  Cells:

``empty``
    graph x request (T1..T8) x policy: ``match allocate`` of the request again
    and again from an empty graph (until full, or ``--matches`` matches).
``fail``
    graph x policy: T1 until the graph is full, then failing matches; the
    figure is the median failing match.
``busy``
    graph x policy: a batch-queue session.  ``match allocate_orelse_reserve``
    of a seeded mix of T3..T8 with durations of 10 minutes to 3 hours until
    the graph is full and ``--queue`` reservations stand, then rounds of
    ``cancel`` of a running job followed by a new match.  Figures: median
    allocation (``alloc``) and median reservation search (``reserve``).
    The command stream is fixed in advance (the jobs to cancel are chosen
    from a dry run with fluxlite), and the two programs' answers (job,
    allocated / reserved / failed, start time) are compared: a session whose
    answers differ is reported as diverged.

Fluxion's ``resource-query`` comes from flux-sched (see docs/benchmarks.md
for building v0.54).  Nothing here needs it but this command.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main_against", "parse_session"]

_BUSY_REQUESTS = ("T3", "T4", "T5", "T6", "T7", "T8")
_BUSY_DURATIONS = (600, 1800, 3600, 7200, 10800)

_RE_ELAPSE = re.compile(r"INFO: ELAPSE=([0-9.eE+-]+)")
_RE_JOBID = re.compile(r"INFO: JOBID=(\d+)")
_RE_MODE = re.compile(r"INFO: RESOURCES=(\w+)")
_RE_AT = re.compile(r"INFO: SCHEDULED AT=(\S+)")


def parse_session(text: str) -> list[dict[str, Any]]:
    """One record per match in resource-query's ``-e`` output: jobid, status, at, ms.

    ``status`` is ``allocated``, ``reserved`` or ``failed``.
    """
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] = {}
    for line in text.splitlines():
        if "No matching resources found" in line:
            cur["status"] = "failed"
            continue
        m = _RE_JOBID.match(line)
        if m:
            cur["jobid"] = int(m.group(1))
            continue
        m = _RE_MODE.match(line)
        if m:
            cur["status"] = m.group(1).lower()
            continue
        m = _RE_AT.match(line)
        if m:
            cur["at"] = 0 if m.group(1) == "Now" else int(m.group(1))
            continue
        m = _RE_ELAPSE.match(line)
        if m:
            cur["ms"] = float(m.group(1)) * 1000.0
            cur.setdefault("status", "failed")
            out.append(cur)
            cur = {}
    return out


def _fluxlite_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("fluxlite")
    if exe.is_file():
        return [str(exe), "query"]
    found = shutil.which("fluxlite")
    if found:
        return [found, "query"]
    return [sys.executable, "-m", "fluxlite.cli.main", "query"]


def _baseline_cmd(tree: Path) -> tuple[list[str], dict[str, str]]:
    """The fluxlite of source tree ``tree`` run by this Python (argv, environment), from outside the tree."""
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree.resolve())
    return [sys.executable, "-m", "fluxlite.cli.main", "query"], env


def _run(
    argv: list[str],
    graph: str,
    policy: str,
    prune: str,
    commands: str,
    timeout: float,
    env: dict[str, str] | None = None,
) -> str:
    cmd = [*argv, "-L", graph, "-f", "grug", "-S", "CA", "-P", policy, "-p", prune, "-e"]
    try:
        proc = subprocess.run(
            cmd,
            input=commands + "quit\n",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
            cwd=tempfile.gettempdir() if env is not None else None,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{Path(argv[0]).name}: no answer within {timeout:g} s") from exc
    except OSError as exc:
        raise RuntimeError(f"cannot run {argv[0]}: {exc.strerror}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise RuntimeError(f"{Path(argv[0]).name} failed: {tail[0][:300]}")
    return proc.stdout


def _capacity(nodes: int, request: str) -> int:
    from fluxlite.cli._bench_inputs import BENCH_REQUESTS

    n = BENCH_REQUESTS[request]
    return nodes // n if n else 2 * nodes


def _busy_session(
    graph_path: str, jobspecs: dict[str, str], policy: str, prune: str, seed: int, queue: int, rounds: int
) -> tuple[str, int]:
    """The busy session's command stream (fixed in advance from a fluxlite dry run) and its match count."""
    from fluxlite.api import Engine
    from fluxlite.jobspec import load_jobspec

    eng = Engine.from_file(graph_path, policy=policy, prune_filters=prune)
    rng = random.Random(seed)
    names = sorted(jobspecs)
    specs = {k: load_jobspec(v) for k, v in jobspecs.items()}
    lines: list[str] = []
    running: list[int] = []
    reserved = 0
    matches = 0
    while reserved < queue and matches < 20 * queue:
        k = rng.choice(names)
        r = eng.match(specs[k], op="allocate_orelse_reserve")
        lines.append(f"match allocate_orelse_reserve {jobspecs[k]}")
        matches += 1
        if r.ok and r.reserved:
            reserved += 1
        elif r.ok:
            running.append(r.jobid)
    for _ in range(rounds):
        if not running:
            break
        j = running.pop(rng.randrange(len(running)))
        eng.cancel(j)
        lines.append(f"cancel {j}")
        k = rng.choice(names)
        r = eng.match(specs[k], op="allocate_orelse_reserve")
        lines.append(f"match allocate_orelse_reserve {jobspecs[k]}")
        matches += 1
        if r.ok and not r.reserved:
            running.append(r.jobid)
    return "".join(line + "\n" for line in lines), matches


def _cells(a: Any, bench_dir: Path | None, tmp: Path) -> list[dict[str, Any]]:
    from fluxlite.cli._bench_inputs import BENCH_GRAPHS, _graph_source, request_files

    cells: list[dict[str, Any]] = []
    graphs = [g for g in a.graphs.split(",") if g]
    reqs = [r for r in a.requests.split(",") if r]
    policies = [p for p in a.policies.split(",") if p]
    req_files = dict(request_files(reqs, bench_dir, tmp))
    for g in graphs:
        src, fmt = _graph_source(g, bench_dir, "grug", tmp)
        if fmt != "grug":
            raise RuntimeError(
                f"graph {g}: no {g}.graphml under --bench-dir (both programs read the GRUG file)"
            )
        nodes = BENCH_GRAPHS[g]
        for pol in policies:
            for req in reqs:
                n = min(_capacity(nodes, req), a.matches)
                cmds = f"match allocate {req_files[req]}\n" * n
                cells.append({"kind": "empty", "graph": g, "request": req, "policy": pol, "src": src,
                              "commands": cmds, "figures": ("match",)})  # fmt: skip
            if "fail" in a.sessions:
                t1 = dict(request_files(["T1"], bench_dir, tmp))["T1"]
                n = _capacity(nodes, "T1") + a.fails
                cells.append({"kind": "fail", "graph": g, "request": "T1", "policy": pol, "src": src,
                              "commands": f"match allocate {t1}\n" * n, "figures": ("fail",)})  # fmt: skip
            if "busy" in a.sessions:
                files: dict[str, str] = {}
                base = dict(request_files(list(_BUSY_REQUESTS), bench_dir, tmp))
                for r in _BUSY_REQUESTS:
                    text = Path(base[r]).read_text()
                    for d in _BUSY_DURATIONS:
                        path = tmp / f"busy-{r}-{d}.yaml"
                        path.write_text(re.sub(r"duration:\s*\d+", f"duration: {d}", text))
                        files[f"{r}-{d}"] = str(path)
                cmds, _n = _busy_session(src, files, pol, a.prune, a.seed, a.queue, a.rounds)
                cells.append({"kind": "busy", "graph": g, "request": "mix", "policy": pol, "src": src,
                              "commands": cmds, "figures": ("alloc", "reserve")})  # fmt: skip
    return cells


def _figures(kind: str, recs: list[dict[str, Any]]) -> dict[str, float | None]:
    def med(xs: list[float]) -> float | None:
        return statistics.median(xs) if xs else None

    if kind == "empty":
        return {"match": med([r["ms"] for r in recs if r["status"] == "allocated"])}
    if kind == "fail":
        return {"fail": med([r["ms"] for r in recs if r["status"] == "failed"])}
    return {
        "alloc": med([r["ms"] for r in recs if r["status"] == "allocated"]),
        "reserve": med([r["ms"] for r in recs if r["status"] == "reserved"]),
    }


def _answers(recs: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r.get("jobid"), r["status"], r.get("at")) for r in recs]


def main_against(a: Any, bench_dir: Path | None) -> int:
    """Run the side-by-side cells (``a``: the parsed ``fluxlite bench match`` options)."""
    from tqdm import tqdm

    against = Path(a.against)
    if not against.is_file():
        sys.stderr.write(f"fluxlite bench match: --against {against}: no such file\n")
        return 2
    ours = _fluxlite_cmd()
    out = sys.stdout
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fluxlite-bench-") as td:
        tmp = Path(td)
        try:
            cells = _cells(a, bench_dir, tmp)
        except RuntimeError as exc:
            sys.stderr.write(f"fluxlite bench match: {exc}\n")
            return 2
        progs: list[tuple[str, list[str], dict[str, str] | None]] = [
            ("fluxion", [str(against)], None),
            ("fluxlite", ours, None),
        ]
        base_tree = getattr(a, "baseline_tree", None)
        if base_tree is not None:
            progs.append(("baseline", *_baseline_cmd(base_tree)))
        bar = tqdm(
            total=len(cells) * a.repeat * len(progs), unit="run", disable=not a.progress, file=sys.stderr
        )
        for cell in cells:
            per: dict[str, list[dict[str, float | None]]] = {who: [] for who, _a, _e in progs}
            diverged = False
            for k in range(a.repeat):
                # each program goes first in turn (Fluxion first in the first run)
                order = progs[k % len(progs) :] + progs[: k % len(progs)]
                answers = {}
                for who, argv, env in order:
                    try:
                        text = _run(
                            argv, cell["src"], cell["policy"], a.prune, cell["commands"], a.timeout, env
                        )
                    except RuntimeError as exc:
                        sys.stderr.write(f"fluxlite bench match: {exc}\n")
                        return 1
                    recs = parse_session(text)
                    per[who].append(_figures(cell["kind"], recs))
                    answers[who] = _answers(recs)
                    bar.update(1)
                diverged = diverged or any(answers[w] != answers["fluxion"] for w in answers)
            for fig in cell["figures"]:
                med = {
                    who: statistics.median(vs)
                    if (vs := [f[fig] for f in runs if f[fig] is not None])
                    else None
                    for who, runs in per.items()
                }
                mo, mf, mb = med["fluxlite"], med["fluxion"], med.get("baseline")
                row = {
                    "kind": cell["kind"], "graph": cell["graph"], "request": cell["request"],
                    "policy": cell["policy"], "figure": fig, "fluxlite_ms": mo, "fluxion_ms": mf,
                    "ratio": mo / mf if mo is not None and mf else None, "runs": a.repeat,
                    "matches": cell["commands"].count("match "), "diverged": diverged,
                }  # fmt: skip
                if "baseline" in per:
                    row["baseline_ms"] = mb
                    row["ratio_baseline"] = mo / mb if mo is not None and mb else None
                rows.append(row)
        bar.close()
    text = _table(rows, against, a)
    out.write(text)
    if a.txt:
        Path(a.txt).write_text(text)
        out.write(f"wrote {a.txt}\n")
    if a.json:
        Path(a.json).write_text("".join(json.dumps(r) + "\n" for r in rows))
        out.write(f"wrote {a.json}\n")
    return 0


def _table(rows: Sequence[dict[str, Any]], against: Path, a: Any) -> str:
    def f(x: float | None) -> str:
        return f"{x:9.3f}" if x is not None else "        -"

    base = any("baseline_ms" in r for r in rows)
    tree = getattr(a, "baseline_tree", None)
    lines = [
        f"fluxlite bench match --against {against}: {a.repeat} run(s) per cell, alternating fresh processes; "
        f"prune {a.prune}; median of per-run median ELAPSE (ms); ratio = fluxlite / Fluxion"
        + (f"; base = the fluxlite of {tree}, vs base = fluxlite / base" if base else ""),
        time.strftime("measured %Y-%m-%d %H:%M UTC", time.gmtime()),
        "",
        f"{'cell':6} {'graph':7} {'request':7} {'policy':6} {'figure':8} {'fluxlite':>9} {'Fluxion':>9} "
        f"{'ratio':>6}" + (f" {'base':>9} {'vs base':>7}" if base else "") + "  matches",
    ]

    def r2(x: float | None, w: int) -> str:
        return f"{x:{w}.2f}" if x is not None else " " * (w - 1) + "-"

    for r in rows:
        note = "  DIVERGED (answers differ)" if r["diverged"] else ""
        extra = f" {f(r.get('baseline_ms'))} {r2(r.get('ratio_baseline'), 7)}" if base else ""
        lines.append(
            f"{r['kind']:6} {r['graph']:7} {r['request']:7} {r['policy']:6} {r['figure']:8} "
            f"{f(r['fluxlite_ms'])} {f(r['fluxion_ms'])} {r2(r['ratio'], 6)}{extra}  {r['matches']}{note}"
        )
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    if ratios:
        lines.append("")
        lines.append(
            f"ratio over {len(ratios)} figures: median {statistics.median(ratios):.2f}, "
            f"best {min(ratios):.2f}, worst {max(ratios):.2f}"
        )
    vs = [r["ratio_baseline"] for r in rows if r.get("ratio_baseline") is not None]
    if vs:
        lines.append(
            f"vs base over {len(vs)} figures: median {statistics.median(vs):.2f}, "
            f"best {min(vs):.2f}, worst {max(vs):.2f}"
        )
    return "\n".join(lines) + "\n"
