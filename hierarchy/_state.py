"""The state file of an instance: written atomically after every change, read on restart.

Layout (one JSON object, orjson)::

    {"format": "fluxlite-instance-state", "version": 1,
     "name": ..., "depth": ..., "saved_at": <unix time>,
     "engine": {... Engine.save_state(): graph as JGF, jobs and their resources ...},
     "parent": {"address", "jobid", "lease_token"} | null,
     "jobs": [{"jobid", "kind": "client"|"child", "name", "address", "token", "at", "duration"}],
     "origins": [{"oid", "source": "parent"|"provider", "request_id", "jobid", "paths": [...]}],
     "requests": [{"key", "state": "done"|"pending", "jobid", "upstream_id", "source", "result": {...}}],
     "returning": [{"request_id", "source", "roots": [...], "jgf"}],
     "next_oid": N}

:func:`write_atomic` writes a temporary file in the same directory,
fsyncs it, renames it over the target and fsyncs the directory, so a
crash leaves either the old or the new state, never a torn one.  The file
holds lease tokens, so it is created with mode 0600.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from fluxlite.errors import InputError

__all__ = ["STATE_FORMAT", "STATE_VERSION", "read_state", "write_atomic"]

STATE_FORMAT = "fluxlite-instance-state"
STATE_VERSION = 1


def write_atomic(path: str | Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (temp file + fsync + rename + fsync of the directory)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def read_state(path: str | Path) -> dict[str, Any]:
    """Parse and check a state file (InputError naming the file and field otherwise)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read state file {path}: {exc.strerror or exc}") from exc
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"state file {path}: not JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise InputError(f"state file {path}: format: expected {STATE_FORMAT!r}")
    if doc.get("version") != STATE_VERSION:
        raise InputError(f"state file {path}: version: unsupported {doc.get('version')!r}")
    for key in ("engine", "jobs", "origins", "requests"):
        if key not in doc:
            raise InputError(f"state file {path}: {key}: missing")
    return doc
