"""The state file keeps each record's resources in a payload file beside it (hierarchy._state).

A save rewrites the small records and the engine, never the answers already
written; the payload files are exactly the ones the state names once a save
is done; a damaged, missing or foreign payload name is refused at restore; a
version 1 file (answers inline) still restores; and a save that fails leaves
the previous state readable.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.readers.generate import generate_graph
from hierarchy import Instance, as_jgf
from hierarchy._state import PayloadStore
from tests.hierarchy.helpers import CORES, nodes_jobspec, saved_records
from tests.hierarchy.test_wire import DirectColumns


def _levels(tmp: Path, nodes: int = 1, **kw: Any) -> tuple[Instance, Instance]:
    root = Instance(Engine(generate_graph(nodes=8, sockets=2, cores=CORES), policy="first"), name="root")
    mid = Instance.from_parent(
        DirectColumns(root), nodes_jobspec(nodes).encode(), name="mid", state_path=tmp / "mid.state", **kw
    )
    return root, mid


def _named(state: Path) -> set[str]:
    doc = orjson.loads(state.read_bytes())
    tables = [doc["requests"], doc["ended_requests"], doc["returning"]]
    return {r["jgf_ref"] for t in tables for r in t if "jgf_ref" in r}


def _files(state: Path) -> set[str]:
    d = state.with_name(state.name + ".payloads")
    return set(os.listdir(d)) if d.exists() else set()


def test_answers_are_named_not_inline_and_written_once(tmp_path: Path) -> None:
    """Each record names its payload file (SHA-256 of its bytes, mode 0600, in a 0700 directory);
    the state itself holds no answer, and a save does not write an existing payload again."""
    _root, mid = _levels(tmp_path)
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    grows = [mid.match_grow(job, nodes_jobspec(1).encode(), request_id=f"g{k}") for k in range(3)]
    state = tmp_path / "mid.state"
    doc = orjson.loads(state.read_bytes())
    assert doc["version"] == 2
    assert not any("jgf" in r for r in doc["requests"])
    d = state.with_name("mid.state.payloads")
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert _files(state) == _named(state) and len(_named(state)) == 3  # the three grows
    for name in _named(state):
        f = d / name
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert hashlib.sha256(f.read_bytes()).hexdigest() == name
    kept = {r["key"]: r for r in saved_records(state)}
    assert sorted(as_jgf(r["jgf"]) for k, r in kept.items() if k.startswith("grow:")) == sorted(
        g.jgf for g in grows
    )
    # a save with nothing new writes no payload: the files keep their inode and time
    before = {n: (d / n).stat() for n in _files(state)}
    mid.save()
    after = {n: (d / n).stat() for n in _files(state)}
    assert {n: (s.st_ino, s.st_mtime_ns) for n, s in before.items()} == {
        n: (s.st_ino, s.st_mtime_ns) for n, s in after.items()
    }


def test_the_state_does_not_grow_with_the_grows_of_a_job(tmp_path: Path) -> None:
    """Twenty grows and shrinks of one job: the state file stays the size of its records (version 1
    kept every answer inline and grew by one answer per grow)."""
    _root, mid = _levels(tmp_path)
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    sizes = []
    answer = 0
    for k in range(20):
        g = mid.match_grow(job, nodes_jobspec(1).encode(), request_id=f"g{k}")
        answer = len(as_jgf(g.jgf))
        mid.shrink(job, jgf=g.jgf)
        sizes.append((tmp_path / "mid.state").stat().st_size)
    assert sizes[-1] - sizes[0] < 19 * 1024 < 19 * answer  # (a record is a few hundred bytes)


def test_payloads_no_record_names_are_removed(tmp_path: Path) -> None:
    """Jobs that ended keep their answers only among the last ``request_table_size``: the payload
    files of the dropped ones go at the next save, and so does whatever a crash left (a payload no
    state names, a temporary file)."""
    _root, mid = _levels(tmp_path, request_table_size=1)
    state = tmp_path / "mid.state"
    d = state.with_name("mid.state.payloads")
    for k in range(3):
        job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
        mid.match_grow(job, nodes_jobspec(1).encode(), request_id=f"g{k}")
        mid.release(job)
        assert _files(state) == _named(state)
    assert len(mid.ended) == 1 and len(_named(state)) == 1
    (d / ("0" * 64)).write_bytes(b"left by a crash before its state was written")
    (d / f".{'1' * 64}.123.tmp").write_bytes(b"torn")
    back = Instance.restore(state, parent=mid.parent)
    back.save()
    assert _files(state) == _named(state) and len(_named(state)) == 1
    assert not [n for n in os.listdir(d) if n.endswith(".tmp")]


def test_a_version_1_file_restores_to_the_same_instance(tmp_path: Path) -> None:
    """The state as version 1 wrote it (each answer inline as JGF text) restores to the records and
    engine the version 2 file gives, and the next save writes version 2."""
    root, mid = _levels(tmp_path, nodes=2)
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    lease = mid.match_allocate(nodes_jobspec(1).encode(), lease=True, child_name="leaf")
    mid.match_grow(job, nodes_jobspec(1).encode(), request_id="g0")
    mid.match_grow(lease.jobid, nodes_jobspec(1).encode(), request_id="g1", lease_token=lease.lease_token)
    mid.info()  # (waits for the child's deferred attach, which writes the state file when done)
    state = tmp_path / "mid.state"
    doc = orjson.loads(state.read_bytes())
    store = PayloadStore(state)
    for table in ("requests", "ended_requests", "returning"):
        for r in doc[table]:
            if "jgf_ref" in r:
                r["jgf"] = as_jgf(store.get(r.pop("jgf_ref"), state_path=state)).decode()
    doc["version"] = 1
    old = tmp_path / "old.state"
    old.write_bytes(orjson.dumps(doc))
    a = Instance.restore(state, parent=DirectColumns(root))
    b = Instance.restore(old, parent=DirectColumns(root))
    assert a.engine.save_state() == b.engine.save_state()
    assert {k: as_jgf(r["jgf"]) for k, r in a.requests.items() if "jgf" in r} == {
        k: r["jgf"] for k, r in b.requests.items() if "jgf" in r
    }
    assert b.match_grow(job, nodes_jobspec(1).encode(), request_id="g0").jgf == as_jgf(a.requests[next(
        k for k in a.requests if k.startswith("grow:") and k.endswith(":g0"))]["jgf"])  # fmt: skip
    b.save()
    assert orjson.loads(old.read_bytes())["version"] == 2 and _files(old) == _named(old)


@pytest.mark.parametrize("damage", ["changed", "missing", "foreign name", "not a string"])
def test_a_bad_payload_reference_is_refused_at_restore(tmp_path: Path, damage: str) -> None:
    """A payload whose bytes no longer match its name, a missing one, and a name that is not a digest
    (a path out of the directory, a number) stop the restore with the state file and the payload
    named; nothing outside the payload directory is read."""
    _root, mid = _levels(tmp_path)
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    mid.match_grow(job, nodes_jobspec(1).encode(), request_id="g0")
    state = tmp_path / "mid.state"
    d = state.with_name("mid.state.payloads")
    name = sorted(_named(state))[0]
    outside = tmp_path / "secret"
    outside.write_bytes(b"not for the instance")
    if damage == "changed":
        (d / name).write_bytes((d / name).read_bytes() + b" ")
    elif damage == "missing":
        (d / name).unlink()
    else:
        doc = orjson.loads(state.read_bytes())
        bad: Any = "../secret" if damage == "foreign name" else 7
        for r in doc["requests"]:
            if r.get("jgf_ref") == name:
                r["jgf_ref"] = bad
        state.write_bytes(orjson.dumps(doc))
    with pytest.raises(InputError) as exc:
        Instance.restore(state, parent=mid.parent)
    msg = str(exc.value)
    assert str(state) in msg
    assert {"changed": "damaged", "missing": name, "foreign name": "not a payload name",
            "not a string": "not a payload name"}[damage] in msg  # fmt: skip


def test_a_failed_save_leaves_the_previous_state_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A payload that cannot be written (disk full) fails the save before the state file is touched:
    the file on disk is the previous state, every payload it names is in place, and it restores."""
    root, mid = _levels(tmp_path)
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    mid.match_grow(job, nodes_jobspec(1).encode(), request_id="g0")
    state = tmp_path / "mid.state"
    before = state.read_bytes()
    real = os.write

    def full(fd: int, data: Any) -> int:
        if len(data) > 1000:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        mid.match_grow(job, nodes_jobspec(1).encode(), request_id="g1")
    monkeypatch.setattr(os, "write", real)
    assert state.read_bytes() == before
    assert _named(state) <= _files(state)
    back = Instance.restore(state, parent=DirectColumns(root))
    want = sorted(r["key"] for r in orjson.loads(before)["requests"] if r["key"].startswith("grow:"))
    assert sorted(k for k in back.requests if k.startswith("grow:")) == want and len(want) == 1
