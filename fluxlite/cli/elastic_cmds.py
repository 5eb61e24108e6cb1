"""REPL commands for elasticity: partial-cancel, attach, remove, update, grow, shrink.

Installed into ``fluxlite query``'s command table by :func:`install` (see ``QUERY_COMMANDS`` in
``cli/_registry.py``).
"""

from __future__ import annotations

from pathlib import Path

from fluxlite.cli import query as q
from fluxlite.errors import FluxliteError

__all__ = ["install"]

_installed = False


def _read(ctx: q.QueryContext, fn: str) -> str | None:
    try:
        return Path(fn).read_text()
    except OSError as exc:
        ctx.err.write(f"ERROR: can't open {fn}: {exc.strerror or exc}\n")
        return None


def cmd_partial_cancel(ctx: q.QueryContext, args: list[str]) -> int:
    if len(args) < 4 or len(args) > 5:
        ctx.err.write("ERROR: malformed command: usage: partial-cancel JOBID jgf|rv1exec FILE [stats]\n")
        return 0
    jobid = q._parse_jobid(ctx, args[1])
    if jobid is None:
        return 0
    reader = args[2]
    if reader not in ("jgf", "rv1exec"):
        ctx.err.write(f"ERROR: unsupported reader {reader}\n")
        return 0
    text = _read(ctx, args[3])
    if text is None:
        return 0
    if jobid in ctx.allocations:
        try:
            full = ctx.engine.partial_cancel(jobid, text, reader)
        except FluxliteError as exc:
            ctx.stdout.write(f"partial-cancel: {exc}\n")
            ctx.err.write(f"ERROR: error encountered while removing job {jobid}\n")
        else:
            if full:
                q.job_ended(ctx, jobid)
    elif jobid in ctx.reservations:
        ctx.err.write("ERROR: reservations not currently supported by partial cancel\n")
        return 0
    else:
        ctx.err.write(f"ERROR: nonexistent job {jobid}\n")
        return 0
    if len(args) == 5 and args[4] == "stats":
        q.print_visit_counts(ctx, "PARTIAL CANCEL")
    return 0


def cmd_attach(ctx: q.QueryContext, args: list[str]) -> int:
    if len(args) != 2:
        ctx.err.write("ERROR: malformed command\n")
        return 0
    text = _read(ctx, args[1])
    if text is None:
        return 0
    try:
        ctx.engine.attach(text, source=args[1])
    except FluxliteError as exc:
        detail = getattr(exc, "fluxion_message", None) or str(exc)
        ctx.err.write("ERROR: can't attach JGF subgraph \n")
        ctx.err.write("ERROR: add_subgraph: ERROR: add subgraph error: Invalid argument\n")
        ctx.err.write(f"add_subgraph: ERROR: reader returned error: {detail}\n\n\n")
    return 0


def cmd_remove(ctx: q.QueryContext, args: list[str]) -> int:
    if len(args) != 3:
        ctx.err.write("ERROR: malformed command: usage: remove PATH true | remove IDSET false\n")
        return 0
    target, is_path = args[1], args[2]
    try:
        if is_path == "true":
            ctx.engine.remove_subgraph(path=target, force=True)
        elif is_path == "false":
            from fluxlite.idset import decode as idset_decode

            try:
                ranks = list(idset_decode(target))
            except (ValueError, FluxliteError):
                ctx.err.write("ERROR: failed to decode ranks.\n")
                return 0
            ctx.engine.remove_subgraph(ranks=ranks, force=True)
        else:
            ctx.err.write("ERROR: invalid path boolean input \n")
            return 0
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: can't remove subgraph: {exc}\n")
    return 0


def cmd_update(ctx: q.QueryContext, args: list[str]) -> int:
    """update allocate|reserve jgf|jgf_shorthand|rv1exec FILE JOBID AT DURATION (Fluxion's update)."""
    import time

    if len(args) != 7:
        ctx.err.write(
            "ERROR: malformed command: usage: update allocate|reserve jgf|jgf_shorthand|rv1exec FILE JOBID AT "
            "DURATION\n"
        )
        return 0
    sub, reader, fn = args[1], args[2], args[3]
    if sub not in ("allocate", "reserve"):
        ctx.err.write(f"ERROR: unknown subcmd {sub}\n")
        return 0
    if reader not in ("jgf", "jgf_shorthand", "rv1exec"):
        ctx.err.write(f"ERROR: unsupported reader {reader}\n")
        return 0
    text = _read(ctx, fn)
    if text is None:
        return 0
    try:
        jobid, at, dur = int(args[4]), int(args[5]), int(args[6])
    except ValueError:
        ctx.err.write(f"ERROR: JOBID, AT and DURATION must be integers: {' '.join(args[4:])}\n")
        return 0
    if jobid in ctx.allocations or jobid in ctx.reservations or jobid in ctx.engine.jobs:
        ctx.err.write("ERROR: existing Jobid \n")
        return 0
    if at < 0 or dur <= 0:
        ctx.err.write(f"ERROR: invalid time ({at}, {dur})\n")
        return 0
    t0 = time.perf_counter()
    try:
        res = ctx.engine.update_allocate(
            jobid, text, format=reader, at=at, duration=dur, fmt=ctx.match_format, reserve=sub == "reserve"
        )
    except FluxliteError as exc:
        ctx.err.write("ERROR: traverser run () returned error \n")
        ctx.err.write(f"ERROR: {exc}\n")
        q._print_schedule_info(ctx, jobid, fn, False, at, True, time.perf_counter() - t0)
        ctx.jobid_counter = jobid + 1
        return 0
    elapse = time.perf_counter() - t0
    ctx.out.write(res.text)
    q._update_perf(ctx, elapse)
    q._print_schedule_info(ctx, jobid, fn, True, at, True, elapse)
    ctx.jobid_counter = max(ctx.jobid_counter, jobid + 1)
    return 0


def cmd_grow(ctx: q.QueryContext, args: list[str]) -> int:
    """grow JOBID JOBSPEC: MatchGrow a running job locally (with strategy=leak...: a fork of a leak job)."""
    import time

    from fluxlite.jobspec import load_jobspec

    kw = dict(a.split("=", 1) for a in args[3:] if "=" in a)
    if len(args) >= 3 and "strategy" in kw and len(kw) == len(args) - 3:
        from fluxlite.cli import grid_cmds

        jobid = q._parse_jobid(ctx, args[1])
        return 0 if jobid is None else grid_cmds.cmd_grow_leak(ctx, jobid, args[2], kw)
    if len(args) != 3:
        ctx.err.write("ERROR: malformed command: usage: grow JOBID JOBSPEC\n")
        return 0
    jobid = q._parse_jobid(ctx, args[1])
    if jobid is None:
        return 0
    t0 = time.perf_counter()
    try:
        js = load_jobspec(args[2])
        res = ctx.engine.grow(jobid, js, fmt=ctx.match_format)
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: grow {jobid}: {exc}\n")
        return 0
    elapse = time.perf_counter() - t0
    ctx.out.write(res.text)
    out = ctx.out
    out.write("INFO: =============================\n")
    out.write(f"INFO: JOBID={jobid}\n")
    out.write("INFO: RESOURCES=GROWN\n")
    out.write("INFO: SCHEDULED AT=Now\n")
    if ctx.elapse:
        ctx.stdout.write(f"INFO: ELAPSE={q._fmt_double(elapse)}\n")
    out.write("INFO: =============================\n")
    return 0


def cmd_shrink(ctx: q.QueryContext, args: list[str]) -> int:
    """shrink JOBID path PATH[,PATH...] | shrink JOBID jgf|rv1exec FILE: release part of a running job."""
    if len(args) != 4 or args[2] not in ("path", "jgf", "rv1exec"):
        ctx.err.write(
            "ERROR: malformed command: usage: shrink JOBID path PATH[,PATH...] | jgf FILE | rv1exec FILE\n"
        )
        return 0
    jobid = q._parse_jobid(ctx, args[1])
    if jobid is None:
        return 0
    how, what = args[2], args[3]
    try:
        if how == "path":
            gone = ctx.engine.shrink(jobid, paths=[p for p in what.split(",") if p])
        else:
            text = _read(ctx, what)
            if text is None:
                return 0
            gone = ctx.engine.shrink(jobid, **{"jgf" if how == "jgf" else "r": text})
    except FluxliteError as exc:
        ctx.err.write(f"ERROR: shrink {jobid}: {exc}\n")
        return 0
    out = ctx.out
    out.write("INFO: =============================\n")
    out.write(f"INFO: JOBID={jobid}\n")
    out.write(f"INFO: RESOURCES={'CANCELED' if gone else 'SHRUNK'}\n")
    out.write("INFO: =============================\n")
    if gone:
        q.job_ended(ctx, jobid)
    return 0


def install() -> None:
    """Register the elasticity commands once."""
    global _installed
    if _installed:
        return
    _installed = True
    q.register_command(
        q.Command(
            "partial-cancel",
            "pc",
            cmd_partial_cancel,
            "Partially release an allocation: resource-query> partial-cancel jobid (file format: jgf | rv1exec) "
            "R_to_cancel.file (optional subcmd: stats)",
        ),
        before="set-property",
    )
    q.register_command(
        q.Command(
            "update",
            "u",
            cmd_update,
            "Allocate or reserve exactly the resources of a JGF or R file to a new job: "
            "resource-query> update (allocate | reserve) (jgf | jgf_shorthand | rv1exec) file jobid starttime "
            "duration",
        ),
        before="find",
    )
    q.register_command(
        q.Command(
            "grow",
            "G",
            cmd_grow,
            "Grow a running job with more resources (MatchGrow): resource-query> grow jobid jobspec; "
            "a fork of a leak job on a grid machine: grow jobid (jobspec | -) strategy=leak|leak-noncontig "
            "(optional: parent=NODE_INDEX now=T)",
        ),
        before=None,
    )
    q.register_command(
        q.Command(
            "shrink",
            "S",
            cmd_shrink,
            "Release part of a running job: resource-query> shrink jobid (path /p1,/p2 | jgf file | rv1exec file)",
        ),
        before=None,
    )
    q.register_command(
        q.Command(
            "attach",
            "j",
            cmd_attach,
            "Attach a JGF subgraph to the resource graph: resource-query> attach jgf_file",
        ),
        before="find",
    )
    q.register_command(
        q.Command(
            "remove",
            "j",  # Fluxion's table gives remove attach's "j": lookup stops at attach, help j lists both
            cmd_remove,
            "Remove a subgraph from the resource graph, specifying whether the target is a path (true) "
            "or idset (false): resource-query> remove (/path/to/node/ | idset) (true|false)",
        ),
        before="find",
    )
