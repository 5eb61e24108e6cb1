"""REPL commands for elasticity: partial-cancel, attach, remove, update, grow, shrink.

Installed into ``fluxlite query``'s command table by :func:`install`.
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
                ctx.allocations.pop(jobid, None)
                info = ctx.jobs.get(jobid)
                if info is not None:
                    info.state = "CANCELED"
    elif jobid in ctx.reservations:
        ctx.err.write("ERROR: reservations not currently supported by partial cancel\n")
        return 0
    else:
        ctx.err.write(f"ERROR: nonexistent job {jobid}\n")
        return 0
    if len(args) == 5 and args[4] == "stats":
        out = ctx.out
        out.write("INFO: =============================\n")
        out.write(f'INFO: PARTIAL CANCEL PREORDER COUNT="{ctx.engine.preorder_count}"\n')
        out.write(f'INFO: PARTIAL CANCEL POSTORDER COUNT="{ctx.engine.postorder_count}"\n')
        out.write("INFO: =============================\n")
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
            from fluxlite.writers._idset import decode as idset_decode

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
            "r",
            cmd_remove,
            "Remove a subgraph from the resource graph, specifying whether the target is a path (true) "
            "or idset (false): resource-query> remove (/path/to/node/ | idset) (true|false)",
        ),
        before="find",
    )
