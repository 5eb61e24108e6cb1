"""A provider that serves resources from a JGF (or GRUG) "pool" file.

The pool is a resource graph with the same root as the instance that uses
it (e.g. ``/cluster0``) and extra nodes below it (``/cluster0/node8`` ...)
whose paths, broker ranks and ``uniq_id`` values do not occur in the
instance's graph - for example the nodes cut from a larger generated
cluster.  A private :class:`fluxlite.api.Engine` matches each request
against the pool, so a grant is exactly what MatchAllocate would pick,
written as the match JGF (the root plus the granted subtrees).

Every grant is one job of the private engine, remembered by request id
(a retried grow returns the same document).  A shrink may give back any
part of a grant: the grant's job is released and what remains of it is
re-allocated to the same job (O(grant)).  With ``state_path`` the pool's
engine and grants are written atomically after every change and read
back on start, so a restarted instance never receives a grant twice.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson

from fluxlite.api import Engine
from fluxlite.errors import InputError, StateError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import read_vertices
from fluxlite.writers.jgf import vertex_json

__all__ = ["PoolProvider"]


def _format_of(path: Path) -> str:
    return "grug" if path.suffix.lower() in (".graphml", ".xml", ".grug") else "jgf"


class PoolProvider:
    """Resources from a pool file, granted by a private engine (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        format: str | None = None,
        policy: str = "first",
        state_path: str | Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.name = f"pool:{self.path}"
        self.state_path = Path(state_path) if state_path is not None else None
        self._lock = threading.Lock()
        #: request id -> {"jobid", "jgf" (bytes), "duration"}
        self._grants: dict[str, dict[str, Any]] = {}
        if self.state_path is not None and self.state_path.exists():
            self._load_state(self.state_path)
        else:
            if not self.path.is_file():
                raise InputError(f"pool file {self.path} does not exist")
            self.engine = Engine.from_file(self.path, format=format or _format_of(self.path), policy=policy)
            self._save()

    # ------------------------------------------------------------------ persistence
    def _load_state(self, path: Path) -> None:
        try:
            doc = orjson.loads(path.read_bytes())
            self.engine = Engine.restore_state(orjson.dumps(doc["engine"]))
            self._grants = {
                rid: {
                    "jobid": g["jobid"],
                    "jgf": g["jgf"].encode(),
                    "duration": g.get("duration"),
                    "released": g.get("released", False),
                }
                for rid, g in doc["grants"].items()
            }
        except (OSError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise InputError(f"pool state file {path}: unreadable: {exc}") from exc

    def _save(self) -> None:
        if self.state_path is None:
            return
        doc = {
            "engine": orjson.Fragment(self.engine.save_state()),
            "grants": {
                rid: {
                    "jobid": g["jobid"],
                    "jgf": g["jgf"].decode(),
                    "duration": g["duration"],
                    "released": g.get("released", False),
                }
                for rid, g in self._grants.items()
            },
        }
        tmp = self.state_path.with_name(f".{self.state_path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(doc))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_path)

    # ------------------------------------------------------------------ ExternalAPI
    def grow(self, jobspec: str | bytes, request_id: str) -> bytes:
        """Grant resources for ``jobspec`` from the pool (idempotent per ``request_id``)."""
        with self._lock:
            got = self._grants.get(request_id)
            if got is not None:
                if got.get("released"):
                    raise StateError(f"{self.name}: grant {request_id} was already given back")
                return bytes(got["jgf"])
            js = parse_jobspec(jobspec, source=f"{self.name} request {request_id}")
            r = self.engine.allocate(js, fmt="jgf")
            jgf = r.text.encode()
            self._grants[request_id] = {
                "jobid": r.jobid,
                "jgf": jgf,
                "duration": int(js.duration) if js.duration > 0 else None,
            }
            self._save()
            return jgf

    def shrink(self, jgf: str | bytes) -> None:
        """Take back the ranked vertices of ``jgf`` (StateError, nothing changed, if not all were granted)."""
        g = self.engine.graph
        vids: list[int] = []
        for node in read_vertices(jgf, source=f"{self.name} shrink"):
            if node.rank < 0:
                continue  # rank-less ancestors (the root) are shared, never granted on their own
            path = next(iter(node.paths.values()), "")
            v = g.vertex_by_path(path)
            if v is None:
                raise StateError(f"{self.name}: {path} is not in the pool")
            vids.append(v)
        if not vids:
            return
        with self._lock:
            held = self.engine.holders(vids)
            owner = {v: j for j, vs in held.items() for v in vs}
            foreign = [g.path(v) for v in vids if v not in owner]
            if foreign:
                raise StateError(f"{self.name}: not granted by this pool: {', '.join(foreign[:3])}")
            by_job: dict[int, set[int]] = {}
            for v in vids:
                by_job.setdefault(owner[v], set()).add(v)
            for jobid, gone in by_job.items():
                self._take_back(jobid, gone)
            self._save()

    def _take_back(self, jobid: int, gone: set[int]) -> None:
        """Release job ``jobid`` and re-allocate what it keeps (whole-job granularity)."""
        g = self.engine.graph
        keep = [
            (g.vertex_by_path(path), units, excl)
            for path, units, excl in self.engine.job_items(jobid)
            if g.vertex_by_path(path) not in gone
        ]
        grant = next((r for r in self._grants.values() if r["jobid"] == jobid), None)
        self.engine.cancel(jobid)
        if keep:
            nodes = ", ".join(
                vertex_json(g, v, units, None, excl) for v, units, excl in keep if v is not None
            )
            doc = '{"graph": {"nodes": [' + nodes + '], "edges": []}}'
            self.engine.update_allocate(jobid, doc, duration=grant["duration"] if grant else None)
        elif grant is not None:
            grant["released"] = True

    def close(self) -> None:
        """Write the pool's state one last time."""
        with self._lock:
            self._save()
