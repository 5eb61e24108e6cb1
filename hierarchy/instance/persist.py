"""State: the instance written to and rebuilt from its state file.

``state_bytes`` serialises the engine, the parent lease, the job and
origin records, the request tables, the limits' grow times and the pending
hand-backs (format in :mod:`hierarchy._state`), each record's resources by
reference to its payload file; ``_persist`` writes the payload files not
written yet, then the state atomically, after every change, then removes
the payload files no record names any more; ``restore`` rebuilds an
instance (from either version of the file) and finishes any deferred
attach that a crash interrupted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Self

import orjson

from fluxlite.api import Engine
from fluxlite.errors import (
    FluxliteError,
    InputError,
)
from hierarchy._state import STATE_FORMAT, STATE_VERSION, PayloadStore, payload_name, read_state, write_atomic
from hierarchy.base import Parent
from hierarchy.instance.core import InstanceCore
from hierarchy.instance.records import JobRecord, Origin
from providers.base import ExternalAPI


class PersistMixin(InstanceCore):
    """See the module docstring."""

    #: the payload files of the state file (None until the first write or restore)
    _payloads: PayloadStore | None = None
    #: payload bytes -> its file name, for the payloads the last state named (a name is hashed once)
    _payload_names: dict[bytes, str] | None = None

    def state_bytes(self, payloads: dict[str, bytes] | None = None) -> bytes:
        """The whole state as JSON bytes (see :mod:`hierarchy._state`); the resources of the records
        are named (``jgf_ref``), and their bytes added to ``payloads`` (name -> bytes)."""
        refs: dict[str, bytes] = {} if payloads is None else payloads
        names = self._payload_names or {}
        kept: dict[bytes, str] = {}

        def ref(data: bytes) -> str:
            name = kept.get(data) or names.get(data) or payload_name(data)
            kept[data] = name
            refs[name] = data
            return name

        def record(rec: dict[str, Any]) -> dict[str, Any]:
            out = {k: v for k, v in rec.items() if k != "jgf"}
            data = rec.get("jgf")
            if data is not None:
                out["jgf_ref"] = ref(data if isinstance(data, bytes) else data.encode())
            return out

        doc = {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "name": self.name,
            "depth": self.depth,
            "saved_at": time.time(),
            "engine": orjson.Fragment(self.engine.save_state()),
            "parent": (
                {
                    "address": getattr(self.parent, "address", ""),
                    "jobid": self.parent_jobid,
                    "lease_token": self.parent_token,
                }
                if self.parent is not None
                else None
            ),
            "jobs": [r.public() for r in self.jobs.values()],
            "origins": [o.public() for o in self.origins.values()],
            "requests": [{"key": k, **record(r)} for k, r in self.requests.items()],
            "ended_requests": [{"key": k, **record(r)} for k, r in self.ended.items()],
            "owner": self.owner,
            "grow_times": self.grow_times,
            "returning": [record(r) for r in self.returning],
            "next_oid": self._next_oid,
            "node_events": self.node_events,
            "lease_down": {
                str(j): {p: list(v) for p, v in told.items()} for j, told in self.lease_down.items() if told
            },
            "told_down": sorted(self.told_down),
            "extra": {k: fn() for k, fn in self.extra_state.items()},
        }
        if payloads is not None:
            self._payload_names = kept
        return orjson.dumps(doc)

    def _persist(self) -> None:
        if self.state_path is None:
            return
        store = self._payloads
        if store is None:
            store = self._payloads = PayloadStore(self.state_path)
        payloads: dict[str, bytes] = {}
        data = self.state_bytes(payloads)
        store.put(payloads)  # (durable before the state that names them)
        write_atomic(self.state_path, data)
        store.keep_only(payloads)  # (no longer named by the state now on disk)

    def save(self) -> None:
        """Write the state file now (no-op without ``state_path``)."""
        with self._lock:
            self._persist()

    @classmethod
    def restore(
        cls,
        state_path: str | Path,
        *,
        parent: Parent | None = None,
        provider: ExternalAPI | None = None,
        **kwargs: Any,
    ) -> Self:
        """Rebuild an instance from its state file; children get a full grace period to heartbeat again."""
        doc = read_state(state_path)
        try:
            eng = Engine.restore_state(orjson.dumps(doc["engine"]))
        except FluxliteError as exc:
            raise InputError(f"state file {state_path}: engine: {exc}") from exc
        p = doc.get("parent")
        kwargs.setdefault("name", doc.get("name", "instance"))
        kwargs.setdefault("depth", doc.get("depth", 0))
        inst = cls(
            eng,
            parent=parent if p is not None else None,
            parent_jobid=p["jobid"] if p else 0,
            parent_token=p["lease_token"] if p else "",
            provider=provider,
            state_path=state_path,
            **kwargs,
        )
        now = time.monotonic()
        for r in doc["jobs"]:
            inst.jobs[r["jobid"]] = JobRecord(**r, last_seen=now)
        for o in doc["origins"]:
            origin = Origin(o["oid"], o["source"], o["request_id"], o["jobid"], set(o["paths"]))
            inst.origins[origin.oid] = origin
            for path in origin.paths:
                inst._origin_of[path] = origin.oid
        store = inst._payloads = PayloadStore(state_path)
        for name, table in (("requests", None), ("ended_requests", inst.ended)):
            for r in doc.get(name, ()):
                r = store.record(r, state_path=state_path)
                key = r.pop("key")
                if table is None:
                    inst._remember(key, r)
                else:
                    table[key] = r
        if not inst.owner:
            inst.owner = doc.get("owner", "")
        inst.grow_times = {u: list(ts) for u, ts in doc.get("grow_times", {}).items()}
        inst.returning = [store.record(r, state_path=state_path) for r in doc.get("returning", [])]
        inst._next_oid = doc.get("next_oid", len(inst.origins) + 1)
        inst.node_events = list(doc.get("node_events") or [])[-256:]
        inst.lease_down = {
            int(j): {p: (str(v[0]), str(v[1])) for p, v in told.items()}
            for j, told in (doc.get("lease_down") or {}).items()
        }
        inst.told_down = set(doc.get("told_down") or [])
        inst.restored_extra = dict(doc.get("extra") or {})
        for key, rec in list(inst.requests.items()):
            if rec.get("state") == "received":  # answered to the child, not attached here before the crash
                inst.log.info("finishing the deferred attach of %s", key)
                inst._finish_received(key, rec)
        inst.log.info(
            "restored from %s: %d vertices, %d jobs, %d origins, %d requests, %d pending hand-backs",
            state_path,
            len(eng.graph),
            len(eng.jobs),
            len(inst.origins),
            len(inst.requests),
            len(inst.returning),
        )
        return inst
