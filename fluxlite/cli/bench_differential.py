"""``fluxlite bench differential --against PATH``: random sessions, Fluxion's resource-query and
``fluxlite query`` compared byte for byte.

Each session is a random command stream (``match allocate``,
``allocate_orelse_reserve``, ``allocate_with_satisfiability``,
``satisfiability``, ``cancel``, ``find``, ``info``) on one of Fluxion's GRUG
test graphs (``t/data/resource/grugs``) with jobspecs Fluxion's own tests use
on that graph (read from the conformance manifest beside the data when it is
there, else every jobspec of ``jobspecs/basics``), one writer (``-F``), one
policy (``-P``) and one traverser (``-T``).  Both programs run it in a fresh
process with the same arguments and standard input; their standard output and
standard error are compared byte for byte after one normalization: the time
field of ``info`` lines (each program measures its own match time).

A session that differs is cut down to a reproducer: the shortest prefix that
differs (outputs only grow, so a binary search finds it), then earlier
commands are dropped one at a time while the same difference remains.  The
difference's *class* is where the outputs first part: for a JSON line (the
``jgf`` / ``rv1`` writers) the first JSON path that differs, else the
command and the first differing line with numbers masked.  The report lists
each class with its count, the writers / policies / traversers it appeared
under, and one minimal reproducer (the command line and its command stream).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Session", "classify", "default_data_dir", "jobspec_pools", "main", "normalize"]

WRITERS = ("simple", "pretty_simple", "jgf", "jgf_shorthand", "rlite", "rv1", "rv1_nosched", "rv1_shorthand")
POLICIES = ("first", "firstnodex", "low", "high", "lonode", "hinode", "lonodex", "hinodex", "locality")
TRAVERSERS = ("simple", "flexible")
#: graphs whose jobspecs Fluxion's own tests name (``-S CA`` graphs of ``t/data/resource/grugs``)
GRAPHS = ("tiny", "medium", "resv_test")
MATCH_OPS = ("allocate", "allocate_orelse_reserve", "allocate_with_satisfiability", "satisfiability")
#: ``find`` expressions of Fluxion's tests (t3034, t3035)
FIND_EXPRS = (
    "status=up",
    "sched-now=allocated",
    "sched-now=free",
    "sched-future=reserved",
    "sched-now=allocated or sched-future=reserved",
)
#: command kind -> weight in a session
MIX = {"match": 8, "cancel": 2, "find": 1, "info": 1}
_INFO_TIME = re.compile(r"^(INFO: \d+, \w+, -?\d+, .*, )[0-9.eE+-]+$", re.M)
_NUM = re.compile(r"\d+")


def default_data_dir() -> Path:
    """Fluxion's ``t/data``: ``$FLUXLITE_FLUXION_DATA``, else the shared conformance copy."""
    env = os.environ.get("FLUXLITE_FLUXION_DATA")
    if env:
        return Path(env)
    shared = os.environ.get("FLUXLITE_SHARED")
    base = Path(shared) if shared else Path(__file__).resolve().parents[2] / ".." / "shared"
    return (base / "fluxion-conformance" / "data").resolve()


def jobspec_pools(data: Path, graphs: Sequence[str]) -> dict[str, list[str]]:
    """graph -> sorted jobspec paths Fluxion's tests use with it (from the conformance manifest beside
    ``data``), falling back to ``jobspecs/basics`` for a graph the manifest does not name."""
    res = data / "resource"
    pools: dict[str, set[str]] = defaultdict(set)
    manifest = data.parent / "manifest.json"
    if manifest.is_file():
        for case in json.loads(manifest.read_text()).get("cases", []):
            for run in case.get("runs", []):
                args = run.get("args") or []
                if "-L" not in args or not run.get("cmds") or ("-S" in args and "CA" not in args):
                    continue
                graph = Path(args[args.index("-L") + 1]).stem
                if graph not in graphs:
                    continue
                cmds = Path(run["cmds"].replace("@SRC@", str(data.parent)))
                if not cmds.is_file():
                    continue
                for m in re.finditer(r"jobspecs/(\S+\.yaml)", cmds.read_text()):
                    path = res / "jobspecs" / m.group(1)
                    if path.is_file():
                        pools[graph].add(str(path))
    basics = sorted(str(p) for p in (res / "jobspecs" / "basics").glob("*.yaml"))
    return {g: sorted(pools[g]) or basics for g in graphs}


@dataclass
class Session:
    """One random session: the programs' arguments and the command stream."""

    index: int
    graph: str
    writer: str
    policy: str
    traverser: str
    commands: list[str] = field(default_factory=list)

    def args(self, data: Path) -> list[str]:
        path = data / "resource" / "grugs" / f"{self.graph}.graphml"
        return ["-L", str(path), "-f", "grug", "-S", "CA", "-P", self.policy, "-T", self.traverser,
                "-F", self.writer]  # fmt: skip

    def label(self) -> str:
        return f"{self.graph} -F {self.writer} -P {self.policy} -T {self.traverser}"


def make_sessions(
    rng: random.Random,
    n: int,
    graphs: Sequence[str],
    writers: Sequence[str],
    policies: Sequence[str],
    traversers: Sequence[str],
    pools: dict[str, list[str]],
    length: int,
) -> list[Session]:
    kinds = list(MIX)
    weights = [MIX[k] for k in kinds]
    out = []
    for i in range(n):
        s = Session(i, rng.choice(graphs), rng.choice(writers), rng.choice(policies), rng.choice(traversers))
        jobs = 0
        for _ in range(length):
            kind = rng.choices(kinds, weights)[0]
            if kind == "match" or (jobs == 0 and kind in ("cancel", "info")):
                op = rng.choice(MATCH_OPS)
                s.commands.append(f"match {op} {rng.choice(pools[s.graph])}")
                jobs += op != "satisfiability"
            elif kind == "cancel":
                s.commands.append(f"cancel {rng.randint(1, jobs + 1)}")
            elif kind == "info":
                s.commands.append(f"info {rng.randint(1, jobs + 1)}")
            else:
                s.commands.append(f"find {rng.choice(FIND_EXPRS)}")
        out.append(s)
    return out


def normalize(text: str) -> str:
    """What may legitimately differ: the match time each program measures (``info`` lines)."""
    return _INFO_TIME.sub(r"\1T", text)


Runner = Callable[[Sequence[str], Sequence[str]], tuple[str, str]]


def subprocess_runner(timeout: float) -> Runner:
    def run(argv: Sequence[str], commands: Sequence[str]) -> tuple[str, str]:
        stdin = "".join(c + "\n" for c in commands) + "quit\n"
        try:
            proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=timeout,
                                  check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            return "", f"<no answer within {timeout:g} s>\n"
        tail = f"<exit status {proc.returncode}>\n" if proc.returncode else ""
        return normalize(proc.stdout), normalize(proc.stderr) + tail

    return run


def _json_diff(a: Any, b: Any, path: str = "") -> str | None:
    """The first JSON path (list indices as ``[]``) where ``a`` and ``b`` differ, and how."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b:
                return f"{path}.{k}: only Fluxion has it"
            if k not in a:
                return f"{path}.{k}: only fluxlite has it"
            d = _json_diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        if list(a) != list(b):
            return f"{path}: key order"
        return None
    if isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            d = _json_diff(x, y, f"{path}[]")
            if d:
                return d
        return f"{path}: length" if len(a) != len(b) else None
    if a != b:
        return f"{path}: value" if type(a) is type(b) else f"{path}: type"
    return None


def classify(ours: tuple[str, str], theirs: tuple[str, str], last_command: str) -> str:
    """The class of a difference between Fluxion's output ``theirs`` and fluxlite's ``ours``."""
    op = " ".join(last_command.split()[:2]) if last_command.startswith("match") else last_command.split()[0]
    for stream, (x, y) in (("stdout", (theirs[0], ours[0])), ("stderr", (theirs[1], ours[1]))):
        if x == y:
            continue
        xs, ys = x.splitlines(), y.splitlines()
        i = next((k for k, (p, q) in enumerate(zip(xs, ys, strict=False)) if p != q), min(len(xs), len(ys)))
        p = xs[i] if i < len(xs) else None
        q = ys[i] if i < len(ys) else None
        if p is not None and q is not None and p[:1] in "[{" and q[:1] in "[{":
            try:
                d = _json_diff(json.loads(p), json.loads(q))
            except ValueError:
                d = None
            if d:
                return f"writer JSON {d}"

        def mask(s: str | None) -> str:
            return "(nothing)" if s is None else repr(_NUM.sub("N", s)[:70])

        return f"{op}: {stream} Fluxion {mask(p)} / fluxlite {mask(q)}"
    return "identical"


@dataclass
class Outcome:
    session: Session
    klass: str
    reproducer: list[str]


def _differs(run_rq: Runner, run_fl: Runner, args: list[str], cmds: Sequence[str]) -> tuple[str, str] | None:
    theirs = run_rq(args, cmds)
    ours = run_fl(args, cmds)
    return None if theirs == ours else (classify(ours, theirs, cmds[-1]) if cmds else "empty", "")


def shrink(run_rq: Runner, run_fl: Runner, args: list[str], commands: list[str], budget: int) -> tuple[str, list[str]]:
    """(class, minimal reproducer) of a differing session: shortest differing prefix, then drop
    earlier commands while the same class remains (at most ``budget`` runs of both programs)."""
    lo, hi = 1, len(commands)  # commands[:hi] differs
    runs = 0
    while lo < hi:
        mid = (lo + hi) // 2
        runs += 1
        if _differs(run_rq, run_fl, args, commands[:mid]):
            hi = mid
        else:
            lo = mid + 1
    cmds = commands[:hi]
    got = _differs(run_rq, run_fl, args, cmds)
    klass = got[0] if got else "flaky (no longer differs)"
    i = len(cmds) - 2
    while i >= 0 and runs < budget:
        trial = cmds[:i] + cmds[i + 1 :]
        runs += 1
        got = _differs(run_rq, run_fl, args, trial)
        if got and got[0] == klass:
            cmds = trial
        i -= 1
    return klass, cmds


def _fluxlite_argv() -> list[str]:
    from fluxlite.cli.bench_fluxion import _fluxlite_cmd

    return _fluxlite_cmd()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluxlite bench differential",
        description="Random sessions on Fluxion's GRUG test graphs, run through Fluxion's resource-query and "
        "`fluxlite query` and compared byte for byte; differing sessions are grouped into classes, each with "
        "a minimal reproducer.",
        epilog="example: fluxlite bench differential --against ~/.cache/fluxlite/flux-0.88.0/bin/resource-query "
        "--sessions 200 --seed 1 --json out.json",
    )
    p.add_argument("--against", required=True, metavar="PATH", help="Fluxion's resource-query binary")
    p.add_argument("--data", metavar="DIR", help="Fluxion's t/data (default: $FLUXLITE_FLUXION_DATA, else "
                   "../shared/fluxion-conformance/data)")  # fmt: skip
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--sessions", type=int, default=100, help="number of sessions (default 100)")
    p.add_argument("--commands", type=int, default=12, help="commands per session (default 12)")
    p.add_argument("--graphs", default=",".join(GRAPHS), help=f"GRUG graphs (default {','.join(GRAPHS)})")
    p.add_argument("--writers", default=",".join(WRITERS), help="match writers (-F), comma-separated (default all)")
    p.add_argument("--policies", default=",".join(POLICIES), help="policies (-P), comma-separated (default all)")
    p.add_argument("--traversers", default=",".join(TRAVERSERS), help="traversers (-T) (default simple,flexible)")
    p.add_argument("--jobspecs", metavar="DIRS",
                   help="jobspec folders under resource/jobspecs (comma-separated, e.g. flexible,basics) used "
                   "on every graph instead of the ones Fluxion's tests use with it")  # fmt: skip
    p.add_argument("--shrink-budget", type=int, default=40, metavar="N",
                   help="runs spent shrinking each class's reproducer (default 40)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per program run (default 120)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--txt", metavar="FILE", help="write the report as text too")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    return p


def _split(value: str, allowed: Sequence[str] | None, what: str) -> list[str]:
    items = [x for x in value.split(",") if x]
    bad = [x for x in items if allowed is not None and x not in allowed]
    if not items or bad:
        raise ValueError(f"--{what}: {','.join(bad) or 'empty'} (choose from {','.join(allowed or ())})")
    return items


def run(a: argparse.Namespace, run_rq: Runner, run_fl: Runner, data: Path) -> dict[str, Any]:
    """Run the sessions; the results as one JSON-able dict."""
    from tqdm import tqdm

    graphs = _split(a.graphs, None, "graphs")
    for g in graphs:
        if not (data / "resource" / "grugs" / f"{g}.graphml").is_file():
            raise ValueError(f"--graphs: no {g}.graphml under {data / 'resource' / 'grugs'}")
    writers = _split(a.writers, WRITERS, "writers")
    policies = _split(a.policies, POLICIES, "policies")
    traversers = _split(a.traversers, TRAVERSERS, "traversers")
    pools = jobspec_pools(data, graphs)
    if a.jobspecs:
        chosen = []
        for d in _split(a.jobspecs, None, "jobspecs"):
            found = sorted(str(x) for x in (data / "resource" / "jobspecs" / d).glob("*.yaml"))
            if not found:
                raise ValueError(f"--jobspecs: no *.yaml in {data / 'resource' / 'jobspecs' / d}")
            chosen += found
        pools = {g: chosen for g in graphs}
    rng = random.Random(a.seed)
    sessions = make_sessions(rng, a.sessions, graphs, writers, policies, traversers, pools, a.commands)
    differing: list[tuple[Session, str]] = []
    started = time.monotonic()
    bar = tqdm(sessions, unit="session", disable=not a.progress, file=sys.stderr, desc="differential")
    for s in bar:
        args = s.args(data)
        theirs = run_rq(args, s.commands)
        ours = run_fl(args, s.commands)
        if theirs != ours:
            differing.append((s, classify(ours, theirs, s.commands[-1])))
        bar.set_postfix(differ=len(differing))
    bar.close()
    # one reproducer per class (from its first session); sessions re-classified by where they part
    classes: dict[str, dict[str, Any]] = {}
    for s, first in tqdm(differing, unit="session", disable=not a.progress, file=sys.stderr, desc="classes"):
        args = s.args(data)
        known = next((c for c in classes.values() if first in c["first_seen"]), None)
        if known is not None:
            known["sessions"].append(s.index)
            for key in ("writers", "policies", "traversers", "graphs"):
                known[key][getattr(s, key[:-1] if key != "policies" else "policy")] += 1
            continue
        klass, cmds = shrink(run_rq, run_fl, args, s.commands, a.shrink_budget)
        c = classes.setdefault(klass, {
            "class": klass, "sessions": [], "first_seen": set(), "writers": Counter(), "policies": Counter(),
            "traversers": Counter(), "graphs": Counter(), "reproducer": None,
        })  # fmt: skip
        c["first_seen"].add(first)
        c["sessions"].append(s.index)
        for key in ("writers", "policies", "traversers", "graphs"):
            c[key][getattr(s, key[:-1] if key != "policies" else "policy")] += 1
        if c["reproducer"] is None or len(cmds) < len(c["reproducer"]["commands"]):
            rel = [cmd.replace(str(data), "$DATA") for cmd in cmds]
            c["reproducer"] = {"session": s.index, "label": s.label(), "commands": rel,
                               "args": [x.replace(str(data), "$DATA") for x in args]}  # fmt: skip
    out_classes = sorted(classes.values(), key=lambda c: (-len(c["sessions"]), c["class"]))
    for c in out_classes:
        c.pop("first_seen")
        for key in ("writers", "policies", "traversers", "graphs"):
            c[key] = dict(sorted(c[key].items()))
    return {
        "against": str(a.against), "seed": a.seed, "sessions": len(sessions), "commands_per_session": a.commands,
        "graphs": graphs, "writers": writers, "policies": policies, "traversers": traversers,
        "identical": len(sessions) - len(differing), "differing": len(differing),
        "seconds": round(time.monotonic() - started, 1), "classes": out_classes,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }  # fmt: skip


def report(res: dict[str, Any]) -> str:
    lines = [
        f"fluxlite bench differential --against {res['against']} --seed {res['seed']} --sessions {res['sessions']} "
        f"--commands {res['commands_per_session']}",
        f"measured {res['measured']}; graphs {','.join(res['graphs'])}; {len(res['writers'])} writers, "
        f"{len(res['policies'])} policies, traversers {','.join(res['traversers'])}",
        f"sessions: {res['sessions']}, identical: {res['identical']}, differing: {res['differing']} "
        f"in {len(res['classes'])} class(es) ({res['seconds']} s)",
    ]
    for k, c in enumerate(res["classes"], 1):
        lines += ["", f"class {k}: {len(c['sessions'])} session(s): {c['class']}"]
        for key in ("writers", "policies", "traversers", "graphs"):
            lines.append(f"  {key:10} " + ", ".join(f"{n} {v}" for n, v in c[key].items()))
        r = c["reproducer"]
        lines.append(f"  reproducer (session {r['session']}): resource-query {' '.join(r['args'])} <<EOF")
        lines += [f"    {cmd}" for cmd in r["commands"]] + ["    quit", "  EOF"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    a = build_parser().parse_args(list(argv) if argv is not None else None)
    against = Path(a.against)
    if not against.is_file() or not os.access(against, os.X_OK):
        sys.stderr.write(f"fluxlite bench differential: --against {against}: not an executable file\n")
        return 2
    data = Path(a.data) if a.data else default_data_dir()
    if not (data / "resource" / "grugs").is_dir():
        sys.stderr.write(f"fluxlite bench differential: no resource/grugs under {data} (set --data to "
                         "Fluxion's t/data)\n")  # fmt: skip
        return 2
    if a.sessions < 1 or a.commands < 1:
        sys.stderr.write("fluxlite bench differential: --sessions and --commands must be at least 1\n")
        return 2
    base = subprocess_runner(a.timeout)
    fl = _fluxlite_argv()

    def run_rq(args: Sequence[str], cmds: Sequence[str]) -> tuple[str, str]:
        return base([str(against), *args], cmds)

    def run_fl(args: Sequence[str], cmds: Sequence[str]) -> tuple[str, str]:
        return base([*fl, *args], cmds)

    try:
        res = run(a, run_rq, run_fl, data)
    except ValueError as exc:
        sys.stderr.write(f"fluxlite bench differential: {exc}\n")
        return 2
    text = report(res)
    sys.stdout.write(text)
    if a.txt:
        Path(a.txt).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0
