"""``fluxlite query``: a resource-query compatible command loop.

Loads a resource graph, then reads commands (``match allocate job.yaml``,
``cancel 1``, ``find status=down``, ...) from a terminal, with line editing
and history, or from standard input, and prints exactly what Fluxion's
``resource-query`` prints, so existing command files and their expected
outputs keep working.  Match results and INFO lines go to the file named by
``-t`` (or standard output); errors go to standard error, one line each, and
never stop the loop.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fluxlite.errors import FluxliteError
from fluxlite.gcpolicy import OperationGC
from fluxlite.writers.base import EmitError

__all__ = ["QueryContext", "build_parser", "main", "run_commands"]

PROMPT = "resource-query> "


@dataclass
class JobInfo:
    jobid: int
    state: str
    scheduled_at: int
    jobspec_fn: str
    overhead: float


@dataclass
class Perf:
    min: float = float("inf")
    max: float = 0.0
    accum: float = 0.0


@dataclass
class QueryContext:
    """State of one query session (Fluxion's resource_query_t)."""

    engine: Any
    match_format: str
    out: IO[str]
    err: IO[str]
    elapse: bool = False
    jobid_counter: int = 1
    jobs: dict[int, JobInfo] = field(default_factory=dict)
    allocations: dict[int, int] = field(default_factory=dict)
    reservations: dict[int, int] = field(default_factory=dict)
    perf: Perf = field(default_factory=Perf)
    load_format: str = "grug"
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    #: the types a jobspec may name, kept while the graph is unchanged (see _known_types)
    known_types: list[Any] = field(default_factory=list)
    #: cyclic-GC upkeep after each command (fluxlite.gcpolicy.OperationGC), or None
    gc: Any = None


def _fmt_double(x: float) -> str:
    """std::to_string(double): fixed with 6 decimals."""
    return f"{x:.6f}"


def _fmt_ostream_double(x: float) -> str:
    """operator<<(double) with default precision 6 (%g)."""
    return f"{x:g}"


# --------------------------------------------------------------------------- match
def _print_sat_info(ctx: QueryContext, sat: bool, elapse: float) -> None:
    out = ctx.out
    out.write("INFO: =============================\n")
    out.write(f"INFO: {'Satisfiable' if sat else 'Unsatisfiable'} request\n")
    out.write("INFO: =============================\n")
    if ctx.elapse:
        so = ctx.stdout
        so.write(f"INFO: ELAPSE={_fmt_double(elapse)}\n")
        so.write(f"INFO: PREORDER VISIT COUNT={ctx.engine.preorder_count}\n")
        so.write(f"INFO: POSTORDER VISIT COUNT={ctx.engine.postorder_count}\n")


def _print_schedule_info(
    ctx: QueryContext,
    jobid: int,
    jobspec_fn: str,
    matched: bool,
    at: int,
    sat: bool,
    elapse: float,
    allocated: bool = True,
) -> None:
    """Fluxion's print_schedule_info: the result block, and the job recorded when it was placed."""
    out = ctx.out
    so = ctx.stdout
    if matched:
        mode = ("ALLOCATED" if at == 0 else "RESERVED") if allocated else "MATCHED"
        out.write("INFO: =============================\n")
        out.write(f"INFO: JOBID={jobid}\n")
        out.write(f"INFO: RESOURCES={mode}\n")
        out.write(f"INFO: SCHEDULED AT={'Now' if at == 0 else at}\n")
        if ctx.elapse:
            so.write(f"INFO: ELAPSE={_fmt_double(elapse)}\n")
            so.write(f"INFO: PREORDER VISIT COUNT={ctx.engine.preorder_count}\n")
            so.write(f"INFO: POSTORDER VISIT COUNT={ctx.engine.postorder_count}\n")
        out.write("INFO: =============================\n")
        if allocated:
            ctx.jobs[jobid] = JobInfo(jobid, mode, at, jobspec_fn, elapse)
            if at == 0:
                ctx.allocations[jobid] = jobid
            else:
                ctx.reservations[jobid] = jobid
    else:
        out.write("INFO: =============================\n")
        out.write("INFO: No matching resources found\n")
        if not sat:
            out.write("INFO: Unsatisfiable request\n")
        out.write(f"INFO: JOBID={jobid}\n")
        if ctx.elapse:
            out.write(f"INFO: ELAPSE={_fmt_double(elapse)}\n")
            so.write(f"INFO: PREORDER VISIT COUNT={ctx.engine.preorder_count}\n")
            so.write(f"INFO: POSTORDER VISIT COUNT={ctx.engine.postorder_count}\n")
        out.write("INFO: =============================\n")


def _run_match(ctx: QueryContext, jobid: int, op: str, jobspec_fn: str) -> int:
    """One match as Fluxion's run_match: result text and block to ``out``, errors to ``err``.

    What is printed is read from the engine's result, never guessed: the job
    is shown ALLOCATED/RESERVED only when the engine holds it.  A jobspec
    that does not load fails the match as Fluxion's does (EINVAL): the
    "No matching resources found" block is still written, and the job id
    is not spent.  Returns 0 on a match, -1 otherwise (multi-match stops).
    """
    from fluxlite.jobspec import loaded_jobspec, read_jobspec_file

    if not os.path.isfile(jobspec_fn):
        why = "is a directory" if os.path.isdir(jobspec_fn) else "No such file or directory"
        ctx.err.write(f"ERROR: can't open {jobspec_fn}: {why}\n")
        return 0
    try:
        data = read_jobspec_file(jobspec_fn)
    except OSError as exc:
        ctx.err.write(f"ERROR: can't open {jobspec_fn}: {exc.strerror or exc}\n")
        return 0
    # ELAPSE starts here, as Fluxion's: its resource-query reads the file first and times the
    # parse, the match and the writer (reapi_cli_t::match_allocate)
    t0 = time.perf_counter()
    try:
        jobspec = loaded_jobspec(jobspec_fn, data)
    except FluxliteError as exc:
        ctx.err.write(f"match_allocate: ERROR: Jobspec error for {jobid}: {exc}\n")
        _report(ctx, op, jobid, jobspec_fn, False, 0, True, 0.0)
        return -1
    unknown = _unknown_type(ctx.engine, jobspec.resources, ctx.known_types)
    if unknown is not None:
        # Fluxion closes its resource-type table once the graph is loaded: a jobspec
        # naming any other type does not parse (EINVAL), it is not "unsatisfiable"
        ctx.err.write(
            f"match_allocate: ERROR: Jobspec error for {jobid}: "
            f'Value of "type" must be a resource type known to fluxion\n'
        )
        _report(ctx, op, jobid, jobspec_fn, False, 0, True, 0.0)
        return -1
    res = ctx.engine.match(jobspec, op=op, jobid=jobid, fmt=ctx.match_format)
    elapse = time.perf_counter() - t0
    if res.error:
        ctx.err.write(res.error)
    ctx.out.write(res.text)
    _report(ctx, op, jobid, jobspec_fn, res.ok, res.at, res.satisfiable, elapse)
    if res.ok and op in _PLACING:
        _update_perf(ctx, elapse)
    if res.jobid_used:
        ctx.jobid_counter = jobid + 1
    return 0 if (res.ok or (op == "satisfiability" and res.errno == 0)) else -1


#: resource types Fluxion always knows (resource/schema/data_std.cpp)
STATIC_TYPES = frozenset(
    {"cluster", "core", "socket", "gpu", "node", "rack", "slot", "xor_slot", "ssd", "storage_node"}
)


def _known_types(engine: Any, memo: list[Any]) -> frozenset[str]:
    """The static types, the graph's vertex types and the names in the pruning filters.

    Counting the graph's types is O(V), so the set is kept until the graph's
    structure (its version: any vertex added or removed) or the filters
    change (``memo`` holds graph, its version, filters, their version and
    the set; a session keeps one).  O(1) when unchanged.
    """
    g = engine.graph
    prune = engine.traverser.prune
    k = memo
    if k and k[0] is g and k[1] == g.version and k[2] is prune and k[3] == prune.version:
        return k[4]  # type: ignore[no-any-return]
    known = set(STATIC_TYPES) | set(g.types())
    for pair in str(prune).split(","):
        known.update(x.strip() for x in pair.split(":"))
    got = frozenset(known)
    k[:] = [g, g.version, prune, prune.version, got]
    return got


def _unknown_type(engine: Any, resources: Any, memo: list[Any] | None = None) -> str | None:
    """The first jobspec resource type Fluxion's closed type table would not know, or None.

    Known: the static types, the graph's vertex types and the names in the
    pruning filters (Fluxion interns those before it closes the table).
    """
    known = _known_types(engine, [] if memo is None else memo)
    stack = list(resources)
    while stack:
        r = stack.pop()
        if r.type not in known:
            return str(r.type)
        stack.extend(r.with_)
    return None


def _report(
    ctx: QueryContext, op: str, jobid: int, fn: str, ok: bool, at: int, sat: bool, elapse: float
) -> None:
    if op == "satisfiability":
        _print_sat_info(ctx, sat, elapse)
    else:
        _print_schedule_info(ctx, jobid, fn, ok, at, sat, elapse, allocated=op in _PLACING)


def _update_perf(ctx: QueryContext, elapse: float) -> None:
    p = ctx.perf
    p.min = min(p.min, elapse)
    p.max = max(p.max, elapse)
    p.accum += elapse


_MATCH_OPS = (
    "allocate",
    "allocate_orelse_reserve",
    "allocate_with_satisfiability",
    "satisfiability",
    "without_allocating",
    "without_allocating_future",
)
#: the operations that record a job (the others only show a match)
_PLACING = frozenset(_MATCH_OPS[:3])


def _match_op(ctx: QueryContext, sub: str) -> str | None:
    if sub in _MATCH_OPS:
        return sub
    ctx.err.write(f"ERROR: unknown subcmd {sub}\n")
    return None


def cmd_match(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 3:
        ctx.err.write(
            "ERROR: malformed command: usage: match <allocate|allocate_orelse_reserve|"
            "allocate_with_satisfiability|satisfiability|without_allocating|without_allocating_future> "
            "JOBSPEC\n"
        )
        return 0
    op = _match_op(ctx, args[1])
    if op is None:
        return 0
    _run_match(ctx, ctx.jobid_counter, op, args[2])
    return 0


def cmd_match_multi(ctx: QueryContext, args: list[str]) -> int:
    if len(args) <= 3:
        ctx.err.write("ERROR: malformed command: usage: multi-match <subcmd> JOBSPEC1 JOBSPEC2 ...\n")
        return 0
    op = _match_op(ctx, args[1])
    if op is None:
        return 0
    for fn in args[2:]:
        if _run_match(ctx, ctx.jobid_counter, op, fn) != 0:
            break
    return 0


# --------------------------------------------------------------------------- cancel / info
def cmd_cancel(ctx: QueryContext, args: list[str]) -> int:
    if len(args) < 2 or len(args) > 3:
        ctx.err.write("ERROR: malformed command: usage: cancel JOBID [stats]\n")
        return 0
    jobid = _parse_jobid(ctx, args[1])
    if jobid is None:
        return 0
    if jobid in ctx.allocations or jobid in ctx.reservations:
        try:
            ctx.engine.remove_job(jobid)
        except FluxliteError as exc:
            ctx.err.write(f"cancel: ERROR: error encountered while removing job {jobid}: {exc}\n")
            return 0
        job_ended(ctx, jobid)
    else:
        ctx.err.write(f"cancel: ERROR: nonexistent job {jobid}\n")
        return 0
    if len(args) == 3 and args[2] == "stats":
        print_visit_counts(ctx, "CANCEL")
    return 0


def job_ended(ctx: QueryContext, jobid: int) -> None:
    """Forget a job that holds nothing any more; ``info`` then shows it as CANCELED."""
    ctx.allocations.pop(jobid, None)
    ctx.reservations.pop(jobid, None)
    info = ctx.jobs.get(jobid)
    if info is not None:
        info.state = "CANCELED"


def print_visit_counts(ctx: QueryContext, what: str) -> None:
    """The ``stats`` block of cancel / partial-cancel: the last operation's visit counts."""
    out = ctx.out
    out.write("INFO: =============================\n")
    out.write(f'INFO: {what} PREORDER COUNT="{ctx.engine.preorder_count}"\n')
    out.write(f'INFO: {what} POSTORDER COUNT="{ctx.engine.postorder_count}"\n')
    out.write("INFO: =============================\n")


def _parse_jobid(ctx: QueryContext, s: str) -> int | None:
    try:
        v = int(s, 10)
    except ValueError:
        ctx.err.write(f"ERROR: invalid job id {s!r}: expected a non-negative integer\n")
        return None
    if v < 0:
        ctx.err.write(f"ERROR: invalid job id {s!r}: expected a non-negative integer\n")
        return None
    return v


def _atoll(s: str) -> int:
    """C's atoll: the leading optional sign and digits of ``s``; 0 when there are none."""
    import re

    m = re.match(r"\s*([+-]?\d+)", s)
    return int(m.group(1)) if m else 0


def cmd_info(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 2:
        ctx.err.write("ERROR: malformed command: usage: info JOBID\n")
        return 0
    jobid = _atoll(args[1])
    info = ctx.jobs.get(jobid)
    if info is None:
        ctx.err.write(f"info: ERROR: nonexistent job {jobid}\n")
        return 0
    ctx.stdout.write(
        f"INFO: {info.jobid}, {info.state}, {info.scheduled_at}, {info.jobspec_fn}, "
        f"{_fmt_ostream_double(info.overhead)}\n"
    )
    return 0


def cmd_list(ctx: QueryContext, args: list[str]) -> int:
    for jobid in sorted(ctx.jobs):
        info = ctx.jobs[jobid]
        ctx.stdout.write(
            f"INFO: {info.jobid}, {info.state}, {info.scheduled_at}, {info.jobspec_fn}, "
            f"{_fmt_ostream_double(info.overhead)}\n"
        )
    return 0


def cmd_stat(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 1:
        ctx.err.write("ERROR: malformed command: usage: stat\n")
        return 0
    n = len(ctx.jobs)
    avg = ctx.perf.accum / n if n else 0.0
    mn = ctx.perf.min if n else 0.0
    so = ctx.stdout
    so.write(f"INFO: Num. of Jobs Matched: {n}\n")
    so.write(f"INFO: Min. Match Time: {_fmt_ostream_double(mn)}\n")
    so.write(f"INFO: Max. Match Time: {_fmt_ostream_double(ctx.perf.max)}\n")
    so.write(f"INFO: Avg. Match Time: {_fmt_ostream_double(avg)}\n")
    return 0


def cmd_cat(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 2:
        ctx.err.write("ERROR: malformed command: usage: cat JOBSPEC\n")
        return 0
    try:
        text = Path(args[1]).read_text()
    except OSError as exc:
        ctx.err.write(f"ERROR: can't open {args[1]}: {exc.strerror or exc}\n")
        return 0
    for line in text.splitlines():
        ctx.stdout.write(line + "\n")
    ctx.stdout.write(f"INFO: Jobspec in {args[1]}\n")
    return 0


# --------------------------------------------------------------------------- find / status / properties
def cmd_find(ctx: QueryContext, args: list[str]) -> int:
    if len(args) < 2:
        ctx.err.write(
            "ERROR: malformed command: usage: find CRITERIA (e.g. status=down and sched-now=allocated)\n"
        )
        return 0
    criteria = " ".join(args[1:])
    try:
        text = ctx.engine.find_text(criteria, fmt=ctx.match_format)
    except EmitError as exc:
        # Fluxion's reapi find: the writer's emit_json failed (R_lite with no node found)
        ctx.err.write(f"find: ERROR: find writer emit: {exc.strerror}\n")
        return 0
    except FluxliteError as exc:
        ctx.err.write(f"find: {exc}\n")
        return 0
    out = ctx.out
    out.write(text)
    out.write("INFO: =============================\n")
    out.write(f'INFO: EXPRESSION="{criteria}"\n')
    out.write("INFO: =============================\n")
    return 0


def cmd_set_status(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 3:
        ctx.err.write("ERROR: malformed command: usage: set-status PATH up|down\n")
        return 0
    path, status = args[1], args[2]
    if ctx.engine.graph.vertex_by_path(path) is None:
        ctx.out.write(f"Could not find path {path} in resource graph.\n")
        return 0
    if status not in ("up", "down"):
        ctx.err.write("ERROR: unrecognized status\n")
        return 0
    ctx.engine.set_status(path, status)
    return 0


def cmd_get_status(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 2:
        ctx.err.write("ERROR: malformed command: usage: get-status PATH\n")
        return 0
    path = args[1]
    if ctx.engine.graph.vertex_by_path(path) is None:
        ctx.out.write(f"Could not find path {path} in resource graph.\n")
        return 0
    for status in ctx.engine.get_statuses(path):  # one line per rank sharing the path, as Fluxion
        ctx.out.write(f"{path} is {status}\n")
    return 0


def cmd_set_property(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 3:
        ctx.err.write("ERROR: malformed command: usage: set-property PATH PROPERTY=VALUE\n")
        return 0
    path, kv = args[1], args[2]
    pos = kv.find("=")
    if pos <= 0 or pos == len(kv) - 1:
        ctx.out.write("Incorrect input format. \nPlease use `set-property <resource> PROPERTY=VALUE`.\n")
        return 0
    sharers = ctx.engine.graph.vertices_by_path(path)
    if not sharers:
        ctx.out.write(f"Couldn't find path {path} in resource graph.\n")
        return 0
    for v in sharers:
        ctx.engine.graph.set_property(v, kv[:pos], kv[pos + 1 :])
    return 0


def cmd_get_property(ctx: QueryContext, args: list[str]) -> int:
    if len(args) != 2:
        ctx.err.write("ERROR: malformed command: usage: get-property PATH\n")
        return 0
    path = args[1]
    g = ctx.engine.graph
    sharers = g.vertices_by_path(path)
    if not sharers:
        ctx.out.write(f"Could not find path {path} in resource graph.\n")
        return 0
    for v in sharers:  # each rank sharing the path, as Fluxion
        props = g.properties(v)
        if not props:
            ctx.out.write(f"No properties were found for {path} (vtx's uniq_id={g.v_uniq[v]}).\n")
        else:
            for k in sorted(props):
                ctx.out.write(f"{k}={props[k]}\n")
    return 0


# --------------------------------------------------------------------------- help / quit
@dataclass(frozen=True)
class Command:
    name: str
    abbr: str
    func: Callable[[QueryContext, list[str]], int]
    note: str


def cmd_help(ctx: QueryContext, args: list[str]) -> int:
    multi = len(args) != 2
    wanted = args[1] if len(args) == 2 else ""
    found = False
    for c in COMMANDS:
        if multi or wanted in (c.name, c.abbr):
            ctx.stdout.write(f"INFO: {c.name} ({c.abbr}) -- {c.note}\n")
            found = True
    if not multi and not found:
        ctx.stdout.write(f"ERROR: unknown command: {wanted}\n")
    return 0


def cmd_quit(ctx: QueryContext, args: list[str]) -> int:
    return -1


COMMANDS: list[Command] = [
    Command(
        "match",
        "m",
        cmd_match,
        "Allocate or reserve matching resources (subcmd: allocate | allocate_with_satisfiability | "
        "allocate_orelse_reserve) | satisfiability | without_allocating | without_allocating_future: "
        "resource-query> match allocate jobspec",
    ),
    Command(
        "multi-match",
        "M",
        cmd_match_multi,
        "Allocate or reserve for multiple jobspecs (subcmd: allocate | allocate_with_satisfiability | "
        "allocate_orelse_reserve | without_allocating | without_allocating_future): "
        "resource-query> multi-match allocate jobspec1 jobspec2 ...",
    ),
    Command(
        "find",
        "f",
        cmd_find,
        "Find resources matched with criteria (predicates: status={up|down} sched-now={allocated|free} "
        "sched-future={reserved|free} agfilter={true|false} names=hostlist jobid-alloc=jobid "
        "jobid-span=jobid jobid-tag=jobid jobid-reserved=jobid property=name): "
        "resource-query> find status=down and sched-now=allocated",
    ),
    Command(
        "cancel",
        "c",
        cmd_cancel,
        "Cancel an allocation or reservation: resource-query> cancel jobid (optional subcmd: stats)",
    ),
    Command(
        "set-property",
        "p",
        cmd_set_property,
        "Add a property to a resource: resource-query> set-property resource PROPERTY=VALUE",
    ),
    Command(
        "get-property",
        "g",
        cmd_get_property,
        "Get all properties of a resource: resource-query> get-property resource",
    ),
    Command(
        "set-status",
        "t",
        cmd_set_status,
        "Set resource status on vertex: resource-query> set-status PATH_TO_VERTEX {up|down}",
    ),
    Command(
        "get-status",
        "e",
        cmd_get_status,
        "Get the graph resource vertex status: resource-query> get-status PATH_TO_VERTEX",
    ),
    Command("list", "l", cmd_list, "List all jobs: resource-query> list"),
    Command("info", "i", cmd_info, "Print info on a jobid: resource-query> info jobid"),
    Command("stat", "s", cmd_stat, "Print overall stats: resource-query> stat jobid"),
    Command("cat", "a", cmd_cat, "Print jobspec file: resource-query> cat jobspec"),
    Command("help", "h", cmd_help, "Print help message: resource-query> help"),
    Command("quit", "q", cmd_quit, "Quit the session: resource-query> quit"),
]


def find_command(name: str) -> Command | None:
    """The command a line's first word names: resource-query's ``find_cmd``.

    The word must equal a command's name or its abbreviation exactly (no
    prefixes, case-sensitive); the first entry of the table in order wins,
    so where two commands share an abbreviation (``attach`` and ``remove``
    both have ``j``) it reaches the earlier one only.
    """
    for c in COMMANDS:
        if name == c.name or name == c.abbr:
            return c
    return None


def register_command(cmd: Command, before: str | None = "find") -> None:
    """Add a command before the one named ``before`` (None: at the end of the table).

    Fluxion's commands go where Fluxion's table has them; fluxlite's own
    go after them, so they never shadow a Fluxion name or abbreviation.
    Refuses a duplicate name.
    """
    if any(c.name == cmd.name for c in COMMANDS):
        raise ValueError(f"command {cmd.name!r} already exists")
    idx = next((i for i, c in enumerate(COMMANDS) if c.name == before), len(COMMANDS))
    COMMANDS.insert(idx, cmd)


def run_line(ctx: QueryContext, line: str) -> bool:
    """Run one command line; return False when the session should end."""
    tokens = line.split()
    if not tokens or tokens[0].startswith("#"):
        return True  # blank lines and comments (command files use '# ...')
    cmd = find_command(tokens[0])
    if cmd is None:
        ctx.err.write(f"ERROR: unknown command: {tokens[0]} (type 'help' for the list)\n")
        return True
    try:
        return cmd.func(ctx, tokens) == 0
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: {tokens[0]}: {exc}\n")
    except (OSError, ValueError, KeyError, IndexError) as exc:  # never a traceback for bad input
        ctx.err.write(f"ERROR: {tokens[0]}: {exc}\n")
    except Exception as exc:
        ctx.err.write(f"ERROR: {tokens[0]}: internal error: {type(exc).__name__}: {exc}\n")
    return True


def run_commands(ctx: QueryContext, lines: Any, interactive: bool = False, prompt: str = PROMPT) -> None:
    """Run commands from an iterable of lines (or a terminal when ``interactive``)."""
    if interactive:
        _interactive_loop(ctx, prompt)
        return
    for line in lines:
        if not run_line(ctx, line):
            break
        ctx.out.flush()
        if ctx.gc is not None:
            ctx.gc.after()


def _interactive_loop(ctx: QueryContext, prompt: str) -> None:
    hist = Path(os.environ.get("FLUXLITE_HISTORY", Path.home() / ".fluxlite_history"))
    # importing readline gives input() line editing and history
    with contextlib.suppress(ImportError, OSError):
        import readline as rl

        if hist.exists():
            rl.read_history_file(str(hist))
    try:
        while True:
            try:
                line = input(prompt)
            except EOFError:
                ctx.stdout.write("\n")
                break
            except KeyboardInterrupt:
                ctx.stdout.write("\n")
                continue
            if not run_line(ctx, line):
                break
            ctx.out.flush()
            if ctx.gc is not None:
                ctx.gc.after()
    finally:
        try:
            import readline as rl

            rl.write_history_file(str(hist))
        except (ImportError, OSError):
            pass


# --------------------------------------------------------------------------- options
HELP_EPILOG = """\
commands (type 'help' in the loop):
  match SUBCMD JOBSPEC             SUBCMD: allocate | allocate_orelse_reserve |
                                   allocate_with_satisfiability | satisfiability |
                                   without_allocating | without_allocating_future (show the
                                   match, record nothing, keep the job id)
  multi-match SUBCMD JOBSPEC...   cancel JOBID [stats]   info JOBID   list   stat
  partial-cancel JOBID jgf|rv1exec FILE [stats]     (release part of an allocation)
  update allocate|reserve jgf|jgf_shorthand|rv1exec FILE JOBID START DURATION
  attach JGF_FILE                 remove PATH true | remove IDSET false
  grow JOBID JOBSPEC              shrink JOBID (path /p1,/p2 | jgf FILE | rv1exec FILE)
  find CRITERIA                   set-status PATH up|down   get-status PATH
  set-property PATH K=V           get-property PATH         cat JOBSPEC   help [CMD]   quit
  (grid machines also: deadline, leak-start, join; 'help' lists every command with its syntax)

examples:
  fluxlite query                                   # bundled default cluster
  fluxlite query -L cluster.graphml -P low -t out.txt < cmds.txt
  echo 'match allocate job.yaml' | fluxlite query -L graph.json -f jgf -F jgf
"""


class _QueryParser(argparse.ArgumentParser):
    """Option errors exit 1, as resource-query's (getopt_long, then ``usage (1)``), not argparse's 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message}\n")


#: exit status of a bad command line (unknown option, missing value, bad format, missing file)
USAGE_EXIT = 1


def build_parser(prog: str = "fluxlite query") -> argparse.ArgumentParser:
    p = _QueryParser(
        prog=prog,
        description=(
            "Match job requests (Flux jobspec, RFC 14/25) to a resource graph with a resource-query "
            "compatible command loop. Reads commands from a terminal or standard input."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=HELP_EPILOG,
    )
    p.add_argument(
        "-L",
        "--load-file",
        metavar="FILE",
        help="resource graph to load (default: the bundled 2-rack cluster)",
    )
    p.add_argument(
        "-f",
        "--load-format",
        default="grug",
        metavar="FMT",
        help="format of the load file: grug | hwloc | jgf | jgf_shorthand | rv1exec | rv1exec_force "
        "(default: grug)",
    )
    p.add_argument(
        "-W",
        "--load-allowlist",
        action="append",
        default=[],
        metavar="TYPES",
        help="only load these resource types (comma separated; cluster is always kept); readers "
        "other than hwloc warn and load everything, as Fluxion's do",
    )
    p.add_argument(
        "-S",
        "--match-subsystems",
        default="CA",
        metavar="SPEC",
        help="subsystems to match on: CA (containment), PA (power), C+PA, IBA, ... (default: CA)",
    )
    p.add_argument(
        "-P",
        "--match-policy",
        default="first",
        metavar="POLICY",
        help="match policy: first, firstnodex, low, high, lonode, hinode, lonodex, hinodex, "
        "locality, variation (performance classes: set the perf_class property with set-property), "
        "or a custom 'policy=low node_centric=true ...' (default: first); on a grid machine "
        "(fluxlite graph generate --grid WxH) also the whole-node grid allocators hilbert, manhattan, count",
    )
    p.add_argument(
        "-T",
        "--traverser-policy",
        default="simple",
        metavar="POLICY",
        help="traverser: simple | flexible (flexible also matches jobspecs whose slot has "
        "alternatives: several 'slot' siblings (or_slot) or 'xor_slot' siblings; the simple "
        "traverser refuses those) (default: simple)",
    )
    p.add_argument(
        "-F",
        "--match-format",
        default="simple",
        metavar="FMT",
        help="output format of matches: simple | pretty_simple | jgf | jgf_shorthand | rlite | "
        "rv1 | rv1_nosched | rv1_shorthand (default: simple)",
    )
    p.add_argument(
        "-g",
        "--graph-format",
        default="dot",
        metavar="FMT",
        help="format of the graph written by -o: dot | graphml, any case (default: dot)",
    )
    p.add_argument(
        "-o",
        "--graph-output",
        metavar="BASENAME",
        help="write the matcher's graph to BASENAME.dot or BASENAME.graphml on exit",
    )
    p.add_argument(
        "-p",
        "--prune-filters",
        action="append",
        default=[],
        metavar="HL:LL,...",
        help="subtree aggregates for pruning, e.g. ALL:core,ALL:node or rack:node "
        "(default: ALL:core,ALL:node)",
    )
    p.add_argument(
        "-t",
        "--test-output",
        metavar="FILE",
        help="write match results and INFO lines to FILE instead of standard output",
    )
    p.add_argument(
        "-r",
        "--reserve-vtx-vec",
        default="0",
        metavar="N",
        help="vertex count to reserve, 0..2000000 (accepted for compatibility: vertex storage "
        "grows on demand; out of range warns and uses 0)",
    )
    p.add_argument(
        "-e",
        "--elapse-time",
        action="store_true",
        help="print the graph load time and sizes, and the elapsed time and visit counts of every match",
    )
    p.add_argument("-d", "--disable-prompt", action="store_true", help="do not print the prompt")
    return p


SUBSYSTEM_SPECS: dict[str, tuple[str, ...]] = {
    "CA": ("containment",),
    "IBA": ("ibnet",),
    "IBBA": ("ibnetbw",),
    "PA": ("power",),
    "PFS1BA": ("pfs1bw",),
    "C+IBA": ("containment", "ibnet"),
    "C+IBBA": ("containment", "ibnetbw"),
    "C+PA": ("containment", "power"),
    "C+PFS1BA": ("containment", "pfs1bw"),
    "IB+IBBA": ("ibnet", "ibnetbw"),
    "C+P+IBA": ("containment", "power", "ibnet"),
    "V+PFS1BA": ("virtual1", "pfs1bw"),
    "VA": ("virtual1",),
    "ALL": ("containment", "ibnet", "ibnetbw", "pfs1bw", "power"),
}


def parse_subsystems(spec: str) -> tuple[str, ...]:
    got = SUBSYSTEM_SPECS.get(spec) or SUBSYSTEM_SPECS.get(spec.upper())
    if got is None:
        raise FluxliteError(f"unknown --match-subsystems {spec!r} (known: {', '.join(SUBSYSTEM_SPECS)})")
    return got


def default_graph_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "default.graphml"


#: Fluxion v0.54's traverser policies (``-T``)
TRAVERSER_POLICIES = ("simple", "flexible")


def traverser_kwargs(policy: str) -> dict[str, str]:
    """Engine keyword arguments for ``-T POLICY``: none for ``simple`` (the default traverser).

    Raises :class:`FluxliteError` for an unknown policy.
    """
    if policy not in TRAVERSER_POLICIES:
        raise FluxliteError(
            f"unknown traverser policy for --traverser-policy: {policy} (known: {', '.join(TRAVERSER_POLICIES)})"
        )
    if policy == "simple":
        return {}
    return {"traverser_policy": policy}


def reserve_vtx_vec(value: str, err: IO[str]) -> int:
    """``-r N`` read as Fluxion does (C atoi; out of 0..2000000 warns and gives 0)."""
    n = _atoll(value)
    if n < 0 or n > 2_000_000:
        err.write(f"WARN: out of range specified for --reserve-vtx-vec: {value}\n")
        return 0
    return n


def load_engine(opts: argparse.Namespace, load_file: str, err: IO[str]) -> Any:
    """Read the graph and build the engine the options describe; reader warnings go to ``err``."""
    import warnings

    from fluxlite.api import Engine
    from fluxlite.readers import load_graph

    extra = traverser_kwargs(opts.traverser_policy)
    allow = ",".join(opts.load_allowlist) or None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = load_graph(Path(load_file), format=opts.load_format, allowlist=allow)
    for w in caught:
        err.write(f"WARN: {w.message}\n")
    return Engine(
        graph,
        policy=opts.match_policy,
        subsystems=parse_subsystems(opts.match_subsystems),
        prune_filters=",".join(p for p in opts.prune_filters if p.strip()) or "ALL:core,ALL:node",
        **extra,
    )


def print_load_info(engine: Any, load_time: float, so: IO[str]) -> None:
    """``-e`` at start-up: load time, sizes and the metadata maps, as Fluxion's print_elapse_time."""
    g = engine.graph
    live = list(g.vertices())
    so.write(f"INFO: Graph Load Time: {_fmt_ostream_double(load_time)}\n")
    so.write(f"INFO: Vertex Count: {len(g)}\n")
    so.write(f"INFO: Edge Count: {g.num_edges}\n")
    so.write(f"INFO: by_type Key-Value Pairs: {len({g.v_type[v] for v in live})}\n")
    so.write(f"INFO: by_name Key-Value Pairs: {len({g.v_name[v] for v in live})}\n")
    so.write(f"INFO: by_path Key-Value Pairs: {len(g.by_path)}\n")
    for rank in sorted(g.by_rank):
        so.write(f"INFO: number of vertices with rank {rank}: {len(g.by_rank[rank])}\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    err = sys.stderr
    load_file = opts.load_file or str(default_graph_path())
    if opts.load_file is None and opts.load_format != "grug":
        err.write("ERROR: --load-format needs --load-file\n")
        return USAGE_EXIT
    from fluxlite.readers import known_format as known_reader
    from fluxlite.writers import known_format

    if not known_reader(opts.load_format):
        err.write(f"ERROR: unknown format for --load-format: {opts.load_format}\n")
        return USAGE_EXIT
    if not known_format(opts.match_format):
        err.write(f"ERROR: unknown format for --match-format: {opts.match_format}\n")
        return USAGE_EXIT
    opts.graph_format = opts.graph_format.lower()
    if opts.graph_format not in ("dot", "graphml"):
        err.write(f"ERROR: unknown format for --graph-format: {opts.graph_format}\n")
        return USAGE_EXIT
    reserve_vtx_vec(opts.reserve_vtx_vec, err)
    try:
        traverser_kwargs(opts.traverser_policy)
        if not Path(load_file).exists():
            err.write(f"ERROR: file does not exist for --load-file: {load_file}\n")
            return USAGE_EXIT
        if Path(load_file).is_dir():
            err.write(f"ERROR: path passed to --load-file is a directory: {load_file}\n")
            return USAGE_EXIT
        t0 = time.perf_counter()
        engine = load_engine(opts, load_file, err)
        load_time = time.perf_counter() - t0
    except FluxliteError as exc:
        err.write(f"ERROR: {exc}\n")
        return 1
    out: IO[str]
    if opts.test_output:
        try:
            out = open(opts.test_output, "w")  # noqa: SIM115
        except OSError as exc:
            err.write(f"ERROR: can't open --test-output {opts.test_output}: {exc.strerror}\n")
            return 1
    else:
        out = sys.stdout
    ctx = QueryContext(
        engine=engine,
        match_format=opts.match_format,
        out=out,
        err=err,
        elapse=opts.elapse_time,
        load_format=opts.load_format,
        gc=OperationGC(),
    )
    ctx.gc.settle()  # the loaded graph is never scanned by the collector again
    if opts.elapse_time:
        print_load_info(engine, load_time, sys.stdout)
    from fluxlite.cli._registry import install_query_commands  # elasticity and grid commands

    install_query_commands()
    interactive = sys.stdin.isatty()
    prompt = "" if opts.disable_prompt else PROMPT
    try:
        run_commands(ctx, sys.stdin, interactive=interactive, prompt=prompt)
    except KeyboardInterrupt:
        pass
    finally:
        ctx.gc.release()
        if opts.test_output:
            out.close()
        else:
            out.flush()
    if opts.graph_output:
        from fluxlite.writers.graph import write_dot, write_graphml

        fn = f"{opts.graph_output}.{opts.graph_format}"
        sys.stdout.write("INFO: Write the target graph of the matcher...\n")
        text = (
            write_dot(engine.graph, engine.dom) if opts.graph_format == "dot" else write_graphml(engine.graph)
        )
        Path(fn).write_text(text)
    return 0
