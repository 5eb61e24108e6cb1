"""Helpers for REPL-level tests: a `fluxlite query` session in memory, and what its state holds."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from fluxlite.api import Engine
from fluxlite.cli._registry import install_query_commands
from fluxlite.cli.query import QueryContext, run_line

JOBSPEC = """version: 9999
resources:
{resources}
{attributes}tasks:
  - command: [app]
    slot: default
    count:
      per_slot: 1
"""


def write_jobspec(path: Path, resources: str, duration: int | None = 3600) -> Path:
    """Write a jobspec with an indented YAML ``resources`` block (no ``attributes`` when duration is None)."""
    attrs = "" if duration is None else f"attributes:\n  system:\n    duration: {duration}\n"
    path.write_text(JOBSPEC.format(resources=resources.rstrip("\n"), attributes=attrs))
    return path


class Session:
    """One REPL session over an engine; ``run`` returns what one command wrote to -t, stdout and stderr."""

    def __init__(self, engine: Engine, match_format: str = "simple") -> None:
        install_query_commands()
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.stdout = io.StringIO()
        self.ctx = QueryContext(
            engine=engine, match_format=match_format, out=self.out, err=self.err, stdout=self.stdout
        )

    @property
    def engine(self) -> Engine:
        return self.ctx.engine

    def run(self, line: str) -> tuple[str, str, str]:
        marks = [s.tell() for s in (self.out, self.stdout, self.err)]
        run_line(self.ctx, line)
        got = []
        for s, m in zip((self.out, self.stdout, self.err), marks):
            s.seek(m)
            got.append(s.read())
        return got[0], got[1], got[2]


_BLOCK = re.compile(r"INFO: JOBID=(\d+)\nINFO: RESOURCES=(\w+)\nINFO: SCHEDULED AT=(\w+)")


def outcome(text: str) -> tuple[str, int, str] | None:
    """(RESOURCES=..., JOBID, SCHEDULED AT) of a match block, or ("FAILED", JOBID, "") for a failure block."""
    m = _BLOCK.search(text)
    if m:
        return m.group(2), int(m.group(1)), m.group(3)
    m = re.search(
        r"INFO: No matching resources found\n(?:INFO: Unsatisfiable request\n)?INFO: JOBID=(\d+)", text
    )
    if m:
        return "FAILED", int(m.group(1)), ""
    return None


def state(engine: Engine) -> tuple[Any, ...]:
    """What a user can see of the engine: its saved state (but the next job id) and what `find` reports."""
    import orjson

    doc = orjson.loads(engine.save_state())
    doc.pop("next_jobid", None)
    return (
        doc,
        engine.find_text("sched-now=allocated"),
        engine.find_text("sched-future=reserved"),
    )
