"""Shared by the benchmark scripts that replay the busy session of ``fluxlite bench match --against`` in
process (``match/window_time.py``, ``match/match_ir.py``, ``compiled/writers_ir.py``).

Only the engine's public calls are used, so a child program running an older tree (a baseline on
``PYTHONPATH``) can import it too: ``callgrind_ir.collected`` puts this folder after the tree.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def replay(eng: Any, cmds: str, match: Callable[[Any, str], Any] | None = None) -> None:
    """Run a session's command stream on ``eng``: each ``match OP JOBSPEC`` through ``match(jobspec,
    OP)`` (default ``eng.match``; each jobspec file parsed once), each ``cancel N`` of the N-th match's
    job when that match placed one."""
    from fluxlite.jobspec import parse_jobspec

    run = eng.match if match is None else match
    ids: dict[int, int] = {}
    specs: dict[str, Any] = {}
    k = 0
    for line in cmds.splitlines():
        p = line.split()
        if p and p[0] == "match":
            k += 1
            js = specs.get(p[2]) or specs.setdefault(p[2], parse_jobspec(Path(p[2]).read_text()))
            r = run(js, p[1])
            if r.ok:
                ids[k] = r.jobid
        elif p and p[0] == "cancel" and int(p[1]) in ids:
            eng.cancel(ids.pop(int(p[1])))
