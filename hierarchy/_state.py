"""The state file of an instance: written atomically after every change, read on restart.

Layout (one JSON object, orjson)::

    {"format": "fluxlite-instance-state", "version": 2,
     "name": ..., "depth": ..., "saved_at": <unix time>,
     "engine": {... Engine.save_state(): graph as JGF, jobs and their resources ...},
     "parent": {"address", "jobid", "lease_token"} | null,
     "jobs": [{"jobid", "kind": "client"|"child", "name", "address", "token", "at", "duration"}],
     "origins": [{"oid", "source": "parent"|"provider", "request_id", "jobid", "paths": [...]}],
     "requests": [{"key", "state": "done"|"pending"|"received", "jobid", "upstream_id", "source",
                   "result": {...}, "jgf_ref"}],
     "returning": [{"request_id", "source", "roots": [...], "jgf_ref"}],
     "next_oid": N}

A record's resources (a grow's or allocation's answer, a pending
hand-back: JGF or the columns wire form of :mod:`hierarchy._wire`, up to
hundreds of kilobytes each) are not in the file: ``jgf_ref`` names a
payload file in the directory beside it (``<state file>.payloads/``),
named by the SHA-256 of its bytes.  Each payload is written once, before
the first state that names it, and removed after the first state that no
longer does, so a change rewrites only the small records and the engine
(version 1 kept every answer inline and rewrote all of them each time:
megabytes per change for a job that had grown a few dozen times).  A
version 1 file (``"jgf"``: the text inline) is still read.

:func:`write_atomic` writes a temporary file in the same directory,
fsyncs it, renames it over the target and fsyncs the directory, so a
crash leaves either the old or the new state, never a torn one.  The file
holds lease tokens, so it is created with mode 0600 (the payload
directory 0700, its files 0600).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import orjson

from fluxlite.errors import InputError

__all__ = [
    "STATE_FORMAT",
    "STATE_VERSION",
    "PayloadStore",
    "payload_name",
    "read_state",
    "write_atomic",
]

STATE_FORMAT = "fluxlite-instance-state"
STATE_VERSION = 2
#: the versions :func:`read_state` reads (1: payloads inline)
READ_VERSIONS = frozenset({1, 2})
#: a payload file's name: the SHA-256 of its bytes, in hex (nothing else is read from that directory)
_NAME = re.compile(r"[0-9a-f]{64}")


def _put_synced(path: Path, data: bytes) -> None:
    """``data`` in place at ``path`` (mode 0600), complete or not at all: written to a temporary file
    beside it, fsynced and renamed over it.  The caller fsyncs the directory."""
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


def write_atomic(path: str | Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (temp file + fsync + rename + fsync of the directory)."""
    path = Path(path)
    _put_synced(path, data)
    _fsync_dir(path.parent)


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
    if doc.get("version") not in READ_VERSIONS:
        raise InputError(f"state file {path}: version: unsupported {doc.get('version')!r}")
    for key in ("engine", "jobs", "origins", "requests"):
        if key not in doc:
            raise InputError(f"state file {path}: {key}: missing")
    return doc


def payload_name(data: bytes) -> str:
    """The name of ``data``'s payload file: its SHA-256 in hex."""
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class PayloadStore:
    """The payload files of one state file (``<state file>.payloads/``), see the module docstring.

    ``put`` makes the files of a state about to be written durable (each
    written once: a file is only ever in place complete, renamed there after
    its fsync); ``keep_only`` removes the files the state just written no
    longer names; ``get`` reads one back and checks it against its name.
    Used under the instance lock.
    """

    def __init__(self, state_path: str | Path) -> None:
        state_path = Path(state_path)
        self.dir = state_path.with_name(state_path.name + ".payloads")
        #: the files known to be in place (None: not listed yet)
        self._present: set[str] | None = None
        #: whether a crash may have left temporary files (looked for at the first clean-up)
        self._tmp_left = True

    def _listed(self) -> set[str]:
        if self._present is None:
            try:
                self._present = {n for n in os.listdir(self.dir) if _NAME.fullmatch(n)}
            except FileNotFoundError:
                self._present = set()
        return self._present

    def put(self, payloads: dict[str, bytes]) -> None:
        """Write the payloads not in place yet (name -> bytes), each durable before this returns."""
        present = self._listed()
        new = [n for n in payloads if n not in present]
        if not new:
            return
        self.dir.mkdir(mode=0o700, exist_ok=True)
        for name in new:
            _put_synced(self.dir / name, payloads[name])
            present.add(name)
        _fsync_dir(self.dir)

    def keep_only(self, names: set[str] | dict[str, bytes]) -> None:
        """Remove the payload files (and any temporary file a crash left) not in ``names``.

        Call only once a state naming exactly ``names`` is durable; a file that
        cannot be removed now is tried again next time."""
        present = self._listed()
        stale = [n for n in present if n not in names]
        for name in stale:
            try:
                os.unlink(self.dir / name)
            except FileNotFoundError:
                pass
            except OSError:
                continue  # (tried again after the next write)
            present.discard(name)
        if stale or self._tmp_left:
            self._tmp_left = False
            try:
                leftovers = [n for n in os.listdir(self.dir) if n.startswith(".") and n.endswith(".tmp")]
            except FileNotFoundError:
                leftovers = []
            for n in leftovers:
                with contextlib.suppress(OSError):
                    os.unlink(self.dir / n)

    def record(self, rec: dict[str, Any], *, state_path: str | Path) -> dict[str, Any]:
        """A record as read from a state file (either version), as kept in memory: a copy with its
        resources as bytes in ``jgf`` (read from its payload file, or version 1's inline text)."""
        rec = dict(rec)
        if "jgf_ref" in rec:
            rec["jgf"] = self.get(rec.pop("jgf_ref"), state_path=state_path)
        elif isinstance(rec.get("jgf"), str):
            rec["jgf"] = rec["jgf"].encode()
        return rec

    def get(self, name: object, *, state_path: str | Path) -> bytes:
        """The payload named ``name`` in a state file read from disk (InputError if missing or damaged)."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InputError(f"state file {state_path}: jgf_ref: not a payload name: {str(name)[:80]!r}")
        try:
            data = (self.dir / name).read_bytes()
        except OSError as exc:
            raise InputError(
                f"state file {state_path}: payload {name} in {self.dir}: {exc.strerror or exc}"
            ) from exc
        if payload_name(data) != name:
            raise InputError(
                f"state file {state_path}: payload {name} in {self.dir}: damaged (its digest differs)"
            )
        return data
