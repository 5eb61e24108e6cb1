"""REPL commands for grid machines: deadline reservations, leak jobs, forks and joins.

``deadline EARLIEST DEADLINE JOBSPEC [now=T] [policy=hilbert|manhattan|count]``
    Reserve whole nodes with a grid allocator at the earliest start >= EARLIEST
    that ends by DEADLINE; a job that cannot meet it is rejected with a
    DEADLINE message (distinct from busy and unsatisfiable).
``leak-start NPROCS|JOBSPEC duration=D [strategy=leak|leak-noncontig] [now=T]``
    Start a job with a leak strategy; prints where each process runs.
``grow JOBID JOBSPEC|- strategy=leak|leak-noncontig [parent=NODE] [now=T]``
    A fork of a leak job (handled here when ``strategy=`` is given).
``join JOBID PATH [now=T]``
    A process of a leak job ends: PATH is its core (or its node, for an
    oversubscribed process); the core is released at once.

Installed into ``fluxlite query`` by :func:`install` (see ``QUERY_COMMANDS`` in ``cli/_registry.py``).
"""

from __future__ import annotations

import time
from typing import Any

from fluxlite.cli import query as q
from fluxlite.errors import CommandError, DeadlineError, FluxliteError

__all__ = ["cmd_grow_leak", "install"]

_installed = False


def _kv(args: list[str]) -> tuple[list[str], dict[str, str]]:
    pos, kw = [], {}
    for a in args:
        k, sep, v = a.partition("=")
        if sep and k.isidentifier():
            kw[k] = v
        else:
            pos.append(a)
    return pos, kw


def _int(kw: dict[str, str], key: str, default: int | None = None) -> int | None:
    if key not in kw:
        return default
    try:
        return int(kw[key])
    except ValueError:
        raise CommandError(f"{key}= needs an integer, got {kw[key]!r}") from None


def _proc_line(ctx: q.QueryContext, proc: Any) -> str:
    eng = ctx.engine
    g = eng.graph
    node = g.path(eng.grid_info.node_vid[proc.node], eng.dom)
    if proc.core is None:
        return f"INFO: PROCESS node={proc.node} OVERSUBSCRIBED {node}\n"
    return f"INFO: PROCESS node={proc.node} {g.path(proc.core, eng.dom)}\n"


def _info(ctx: q.QueryContext, jobid: int, what: str, extra: list[str], elapse: float) -> None:
    out = ctx.out
    out.write("INFO: =============================\n")
    out.write(f"INFO: JOBID={jobid}\n")
    out.write(f"INFO: RESOURCES={what}\n")
    for line in extra:
        out.write(line)
    if ctx.elapse:
        ctx.stdout.write(f"INFO: ELAPSE={q._fmt_double(elapse)}\n")
    out.write("INFO: =============================\n")


def _record(ctx: q.QueryContext, jobid: int, mode: str, at: int, source: str, elapse: float) -> None:
    """Make the job known to ``info``, ``list`` and ``cancel`` like a matched one."""
    ctx.jobs[jobid] = q.JobInfo(jobid, mode, at, source, elapse)
    (ctx.allocations if mode == "ALLOCATED" else ctx.reservations)[jobid] = jobid
    q._update_perf(ctx, elapse)


def cmd_deadline(ctx: q.QueryContext, args: list[str]) -> int:
    from fluxlite.jobspec import load_jobspec

    pos, kw = _kv(args[1:])
    if len(pos) != 3:
        ctx.err.write(
            "ERROR: malformed command: usage: deadline EARLIEST DEADLINE JOBSPEC [now=T] [policy=P]\n"
        )
        return 0
    jobid = ctx.jobid_counter
    t0 = time.perf_counter()
    try:
        earliest, deadline = int(pos[0]), int(pos[1])
    except ValueError:
        ctx.err.write("ERROR: deadline: EARLIEST and DEADLINE must be integers (seconds)\n")
        return 0
    try:
        now = _int(kw, "now", 0)
        js = load_jobspec(pos[2])
        r = ctx.engine.allocate_deadline(
            js, earliest, deadline, now=now or 0, jobid=jobid, policy=kw.get("policy"), fmt=ctx.match_format
        )
    except DeadlineError as exc:
        ctx.err.write(f"ERROR: deadline {jobid}: REJECTED: {exc}\n")
        _info(ctx, jobid, "REJECTED (DEADLINE)", [], time.perf_counter() - t0)
        ctx.jobid_counter += 1
        return 0
    except OSError as exc:
        ctx.err.write(f"ERROR: can't open {pos[2]}: {exc.strerror or exc}\n")
        return 0
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: deadline {jobid}: {exc}\n")
        return 0
    ctx.out.write(r.text)
    what = "RESERVED" if r.reserved else "ALLOCATED"
    nodes = ",".join(str(i) for i in ctx.engine.job_nodes(jobid))
    extra = [f"INFO: SCHEDULED AT={r.at if r.reserved else 'Now'}\n", f"INFO: GRID NODES={nodes}\n"]
    elapse = time.perf_counter() - t0
    _info(ctx, jobid, what, extra, elapse)
    _record(ctx, jobid, what, r.at if r.reserved else 0, pos[2], elapse)
    ctx.jobid_counter += 1
    return 0


def cmd_leak_start(ctx: q.QueryContext, args: list[str]) -> int:
    from fluxlite.jobspec import load_jobspec

    pos, kw = _kv(args[1:])
    if len(pos) != 1:
        ctx.err.write(
            "ERROR: malformed command: usage: leak-start NPROCS|JOBSPEC duration=D "
            "[strategy=leak|leak-noncontig] [now=T]\n"
        )
        return 0
    jobid = ctx.jobid_counter
    t0 = time.perf_counter()
    try:
        req: Any = int(pos[0]) if pos[0].isdigit() else load_jobspec(pos[0])
        job = ctx.engine.leak_start(
            req,
            kw.get("strategy", "leak"),
            now=_int(kw, "now", 0) or 0,
            duration=_int(kw, "duration"),
            jobid=jobid,
        )
    except OSError as exc:
        ctx.err.write(f"ERROR: can't open {pos[0]}: {exc.strerror or exc}\n")
        return 0
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: leak-start {jobid}: {exc}\n")
        return 0
    extra = [_proc_line(ctx, p) for p in job.procs]
    extra.append(f"INFO: OVERSUBSCRIBED={job.oversubscribed}\n")
    elapse = time.perf_counter() - t0
    _info(ctx, jobid, "ALLOCATED", extra, elapse)
    _record(ctx, jobid, "ALLOCATED", 0, pos[0], elapse)
    ctx.jobid_counter += 1
    return 0


def cmd_grow_leak(ctx: q.QueryContext, jobid: int, spec: str, kw: dict[str, str]) -> int:
    """``grow JOBID JOBSPEC|- strategy=...``: one fork of a leak job."""
    from fluxlite.jobspec import load_jobspec

    t0 = time.perf_counter()
    try:
        js = None if spec == "-" else load_jobspec(spec)
        proc = ctx.engine.grow(
            jobid, js, strategy=kw["strategy"], parent=_int(kw, "parent"), now=_int(kw, "now", 0) or 0
        )
    except OSError as exc:
        ctx.err.write(f"ERROR: can't open {spec}: {exc.strerror or exc}\n")
        return 0
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: grow {jobid}: {exc}\n")
        return 0
    job = ctx.engine.leak_jobs[jobid]
    extra = [_proc_line(ctx, proc), f"INFO: OVERSUBSCRIBED={job.oversubscribed}\n"]
    _info(ctx, jobid, "GROWN", extra, time.perf_counter() - t0)
    return 0


def cmd_join(ctx: q.QueryContext, args: list[str]) -> int:
    pos, _kw = _kv(args[1:])
    if len(pos) != 2:
        ctx.err.write("ERROR: malformed command: usage: join JOBID CORE_PATH|NODE_PATH\n")
        return 0
    jobid = q._parse_jobid(ctx, pos[0])
    if jobid is None:
        return 0
    eng = ctx.engine
    t0 = time.perf_counter()
    try:
        job = eng.leak_jobs.get(jobid)
        if job is None:
            raise CommandError(f"job {jobid} is not a running leak job")
        v = eng.graph.vertex_by_path(pos[1])
        if v is None:
            raise CommandError(f"could not find path {pos[1]} in resource graph")
        gi = eng.grid_info
        proc = next((p for p in job.procs if p.core == v), None)
        if proc is None and v in gi.index_of:
            proc = next((p for p in job.procs if p.core is None and p.node == gi.index_of[v]), None)
        if proc is None:
            raise CommandError(f"job {jobid} has no process on {pos[1]}")
        gone = eng.leak_join(jobid, proc)
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: join {jobid}: {exc}\n")
        return 0
    _info(ctx, jobid, "CANCELED" if gone else "SHRUNK", [], time.perf_counter() - t0)
    if gone:
        q.job_ended(ctx, jobid)
    return 0


def install() -> None:
    """Register the grid commands once."""
    global _installed
    if _installed:
        return
    _installed = True
    q.register_command(
        q.Command(
            "deadline",
            "D",
            cmd_deadline,
            "Reserve whole grid nodes with a grid allocator (hilbert | manhattan | count) at the earliest "
            "start that ends by the deadline, else reject: resource-query> deadline earliest deadline "
            "jobspec (optional: now=T policy=P)",
        ),
        before=None,
    )
    q.register_command(
        q.Command(
            "leak-start",
            "k",
            cmd_leak_start,
            "Start a job with a leak strategy on a grid machine: resource-query> leak-start (nprocs | "
            "jobspec) duration=D (optional: strategy=leak|leak-noncontig now=T)",
        ),
        before=None,
    )
    q.register_command(
        q.Command(
            "join",
            "J",
            cmd_join,
            "A process of a leak job ends (its core is freed at once): resource-query> join jobid core_path "
            "(node_path for an oversubscribed process)",
        ),
        before=None,
    )
