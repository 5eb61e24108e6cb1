"""Read-only views: Info, Stat and the graph, with what a caller may see of other users' jobs."""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

from fluxlite.check import recount_errors
from fluxlite.errors import UnknownJobError
from hierarchy.instance.core import InstanceCore


class ViewsMixin(InstanceCore):
    """See the module docstring."""

    def _free_and_types(self) -> tuple[dict[str, int], dict[str, int]]:
        g = self.engine.graph
        vs = list(g.vertices())
        held: set[int] = set()
        for lst in self.engine.holders(vs).values():
            held.update(lst)
        by_type: Counter[str] = Counter()
        free: Counter[str] = Counter()
        for v in vs:
            t = g.v_type[v]
            by_type[t] += 1
            if v not in held:
                free[t] += 1
        return dict(by_type), dict(free)

    def _holds(self, jobid: int) -> dict[str, int]:
        g = self.engine.graph
        c: Counter[str] = Counter()
        for path, _units, excl in self.engine.job_items(jobid):
            v = g.vertex_by_path(path)
            if v is not None and excl:
                c[g.v_type[v]] += 1
        return dict(c)

    def _subtrees(self, jobid: int) -> list[str]:
        """Paths of the topmost vertices the job holds exclusively (what ``shrink --path`` takes)."""
        g = self.engine.graph
        dom = self.engine.dom
        held = [p for p, _units, excl in self.engine.job_items(jobid) if excl]
        hs = set(held)
        return sorted(
            p for p in held if not any(g.path(a, dom) in hs for a in g.ancestors(g.vertex_by_path(p), dom))
        )

    def info(self, jobid: int = 0, *, recount: bool = False, caller: str | None = None) -> dict[str, Any]:
        """The instance as a JSON-able dict (or one job with ``jobid``).

        A caller who is neither the job's owner nor the instance owner sees
        only what is public of a job: its id, state, kind and owner.
        """
        with self._lock:
            if jobid:
                rec = self.jobs.get(jobid)
                if rec is None or jobid not in self.engine.jobs:
                    raise UnknownJobError(f"instance {self.name} has no job {jobid}")
                if not self.may_act(rec, caller):
                    return {
                        "jobid": jobid,
                        "state": self.engine.jobs[jobid],
                        "kind": rec.kind,
                        "owner": rec.owner,
                    }
                d = rec.public()
                d.pop("token", None)
                d["state"] = self.engine.jobs[jobid]
                d["holds"] = self._holds(jobid)
                d["subtrees"] = self._subtrees(jobid)
                return d
            by_type, free = self._free_and_types()
            now = time.monotonic()
            out: dict[str, Any] = {
                "instance": self.name,
                "depth": self.depth,
                "pid": os.getpid(),
                "address": self.address,
                "parent": (
                    {"address": getattr(self.parent, "address", ""), "jobid": self.parent_jobid}
                    if self.parent is not None
                    else None
                ),
                "provider": getattr(self.provider, "name", None),
                "orphaned": self.orphaned,
                "vertices": len(self.engine.graph),
                "edges": self.engine.graph.rx.num_edges(),
                "by_type": by_type,
                "free": free,
                "owner": self.owner,
                "jobs": [self._job_summary(j, s, caller) for j, s in sorted(self.engine.jobs.items())],
                "children": [
                    {
                        "jobid": r.jobid,
                        "name": r.name,
                        "address": r.address,
                        "silent_s": round(now - r.last_seen, 3),
                    }
                    for r in self.jobs.values()
                    if r.kind == "child"
                ],
                "origins": [
                    {"oid": o.oid, "source": o.source, "jobid": o.jobid, "vertices": len(o.paths)}
                    for o in self.origins.values()
                ],
                "returning": len(self.returning),
                "requests": len(self.requests),
                "ended_requests": len(self.ended),
                "last_deferred": self.last_deferred,
                "counters": dict(self.counters),
            }
            if recount:
                out["recount_errors"] = recount_errors(self.engine, [0])
            return out

    def _job_summary(self, jobid: int, state: str, caller: str | None) -> dict[str, Any]:
        rec = self.jobs.get(jobid)
        d: dict[str, Any] = {
            "jobid": jobid,
            "state": state,
            "kind": rec.kind if rec is not None else "?",
            "owner": rec.owner if rec is not None else "",
        }
        if rec is None or self.may_act(rec, caller):
            d["name"] = rec.name if rec is not None else ""
            d["holds"] = self._holds(jobid)
        return d

    def stat(self) -> dict[str, Any]:
        with self._lock:
            by_type, free = self._free_and_types()
            return {
                "vertices": len(self.engine.graph),
                "edges": self.engine.graph.rx.num_edges(),
                "jobs": len(self.engine.jobs),
                "children": sum(1 for r in self.jobs.values() if r.kind == "child"),
                "by_type": by_type,
                "free": free,
                "counters": dict(self.counters),
                "uptime_s": time.monotonic() - self.started,
            }

    def graph_jgf(self) -> bytes:
        from fluxlite.readers import graph_to_jgf

        with self._lock:
            return graph_to_jgf(self.engine.graph)
