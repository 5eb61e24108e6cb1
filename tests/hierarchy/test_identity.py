"""Identity, ownership, limits, request ids and the audit log, in one process (no gRPC).

The same rules over real processes and gRPC are in ``test_identity_tree.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import InputError, StateError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph
from hierarchy import Instance, NotAuthorizedError
from hierarchy._errors import LimitError
from hierarchy._identity import (
    AuditLog,
    Credential,
    Verifier,
    derive_user_key,
    new_site_key,
    read_user_key_file,
    write_key_file,
    write_user_key_file,
)
from hierarchy._limits import Limits, request_counts
from tests.hierarchy.helpers import CORES, nodes_jobspec, socket_jobspec

SITE = new_site_key()


def cred(user: str, site: bytes = SITE) -> Credential:
    return Credential(user, derive_user_key(site, user))


# ---------------------------------------------------------------------- tokens
def test_token_names_its_user_and_is_single_use() -> None:
    v = Verifier(SITE, "root")
    t = cred("alice").token("root")
    assert v.verify(t) == "alice"
    with pytest.raises(NotAuthorizedError, match="replayed"):
        v.verify(t)
    assert v.verify(cred("alice").token("root")) == "alice"  # addressed to this instance
    assert v.refused == {"replayed": 1}
    with pytest.raises(InputError, match="exactly one instance"):
        cred("alice").token("*")  # no wildcards


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: "", "missing"),
        (lambda: "v1.abc", "malformed"),
        (lambda: "v2.e30.AAAA", "malformed"),
        (lambda: "v1.%%%.AAAA", "malformed"),
        # bob signs a token that claims to be alice: the MAC is checked with alice's key
        (lambda: _claim("alice", cred("bob").key), "forged"),
        # a key from another site
        (lambda: cred("alice", new_site_key()).token("root"), "forged"),
        (lambda: cred("alice").token("root", now=time.time() - 120), "expired"),
        (lambda: cred("alice").token("root", ttl=3600), "overlong"),
        (lambda: cred("alice").token("leaf"), "misdirected"),
        (lambda: _claim("alice", cred("alice").key, "*"), "wildcard"),
    ],
)
def test_bad_tokens_are_refused_with_their_reason(
    make, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    v = Verifier(SITE, "root")
    with pytest.raises(NotAuthorizedError, match=reason):
        v.verify(make(), method="MatchGrow")
    assert v.refused == {reason: 1}
    assert any(reason in r.getMessage() for r in caplog.records)  # refusals are logged


def _claim(user: str, key: bytes, instance: str = "root") -> str:
    """A token that names ``user`` (and ``instance``, even a wildcard) but is signed with ``key``."""
    import base64
    import hashlib
    import hmac

    c = Credential("x", key)
    c.user = user
    head, payload, _ = c.token("root").split(".")
    doc = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    doc["i"] = instance
    p2 = base64.urlsafe_b64encode(orjson.dumps(doc)).rstrip(b"=").decode()
    mac = base64.urlsafe_b64encode(hmac.new(key, p2.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    return f"{head}.{p2}.{mac}"


def test_tampered_payload_is_forged() -> None:
    t = cred("bob").token("root")
    head, payload, mac = t.split(".")
    import base64

    doc = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    doc["u"] = "alice"
    forged = base64.urlsafe_b64encode(orjson.dumps(doc)).rstrip(b"=").decode()
    with pytest.raises(NotAuthorizedError, match="forged"):
        Verifier(SITE, "root").verify(f"{head}.{forged}.{mac}")


def test_key_files_are_private_and_validated(tmp_path: Path) -> None:
    site = write_key_file(tmp_path / "site.key")
    c = write_user_key_file(tmp_path / "alice.key", site, "alice")
    assert (tmp_path / "alice.key").stat().st_mode & 0o777 == 0o600
    back = read_user_key_file(tmp_path / "alice.key")
    assert (back.user, back.key) == ("alice", c.key) == ("alice", derive_user_key(site, "alice"))
    with pytest.raises(InputError, match="cannot create"):
        write_user_key_file(tmp_path / "alice.key", site, "alice")  # never overwritten
    (tmp_path / "alice.key").chmod(0o644)
    with pytest.raises(InputError, match="group/others"):
        read_user_key_file(tmp_path / "alice.key")
    with pytest.raises(InputError, match="invalid user name"):
        write_user_key_file(tmp_path / "x.key", site, "bad user")
    bad = tmp_path / "bad.key"
    bad.write_text('{"user": "alice", "key": "zz"}')
    bad.chmod(0o600)
    with pytest.raises(InputError, match="'key' is not hex"):
        read_user_key_file(bad)


# ---------------------------------------------------------------------- limits
def test_limits_file_is_validated_naming_the_key(tmp_path: Path) -> None:
    lim = Limits.from_dict({"default": {"max_nodes": 4}, "users": {"alice": {"max_cores": 8}, "bob": None}})
    assert lim.for_user("alice").max_nodes == 4 and lim.for_user("alice").max_cores == 8
    assert lim.for_user("carol").max_nodes == 4 and lim.for_user("carol").max_cores is None
    with pytest.raises(InputError, match=r"users\.alice\.max_gpus: unknown limit"):
        Limits.from_dict({"users": {"alice": {"max_gpus": 1}}})
    with pytest.raises(InputError, match=r"default\.max_nodes: expected a non-negative integer"):
        Limits.from_dict({"default": {"max_nodes": -1}})
    with pytest.raises(InputError, match="quota: unknown key"):
        Limits.from_dict({"quota": {}})
    f = tmp_path / "l.yaml"
    f.write_text("users: [1, 2]\n")
    with pytest.raises(InputError, match="users: expected a mapping"):
        Limits.from_file(f)


def test_request_counts_multiply_down_the_tree() -> None:
    js = parse_jobspec(nodes_jobspec(3))
    assert request_counts(js) == {"node": 3, "socket": 6, "core": 6 * CORES}
    assert request_counts(parse_jobspec(socket_jobspec(2))) == {"socket": 1, "core": 2}


# ---------------------------------------------------------------------- ownership in one instance
def _instance(tmp_path: Path | None = None, nodes: int = 4, **kw) -> Instance:
    eng = Engine(generate_graph(nodes=nodes, sockets=2, cores=CORES))
    state = tmp_path / "i.state" if tmp_path is not None else None
    return Instance(eng, name="root", owner="admin", state_path=state, **kw)


def test_only_owner_and_admin_act_on_a_job_and_refusals_change_nothing() -> None:
    inst = _instance()
    job = inst.match_allocate(nodes_jobspec(1), caller="alice").jobid
    before = inst.engine.save_state()
    for op in (
        lambda: inst.match_grow(job, socket_jobspec(), caller="bob"),
        lambda: inst.shrink(job, paths=["/cluster0/node0"], caller="bob"),
        lambda: inst.release(job, caller="bob"),
    ):
        with pytest.raises(NotAuthorizedError, match=r"user 'bob' may not \w+ job 1 .* belongs to 'alice'"):
            op()
    assert inst.engine.save_state() == before
    # others see only what is public
    assert inst.info(job, caller="bob") == {
        "jobid": job,
        "state": "allocated",
        "kind": "client",
        "owner": "alice",
    }
    full = inst.info(job, caller="alice")
    assert full["owner"] == "alice" and full["holds"] == {"socket": 2, "core": 2 * CORES}
    listing = inst.info(caller="bob")["jobs"]
    assert listing == [{"jobid": job, "state": "allocated", "kind": "client", "owner": "alice"}]
    # the owner and the admin may
    inst.match_grow(job, socket_jobspec(), caller="alice")
    inst.match_grow(job, socket_jobspec(), caller="admin")
    assert inst.info(job, caller="admin")["holds"]["socket"] == 4
    inst.release(job, caller="admin")
    assert not inst.engine.jobs
    assert recount_errors(inst.engine, [0]) == []


def test_limits_refuse_with_the_limit_named_and_nothing_changed() -> None:
    lim = Limits.from_dict({"users": {"alice": {"max_nodes": 2, "grows_per_minute": 2}}})
    inst = _instance(nodes=6, limits=lim)
    job = inst.match_allocate(nodes_jobspec(1), caller="alice").jobid
    before = inst.engine.save_state()
    with pytest.raises(LimitError, match=r"max_nodes=2 .* holds 1, asks for 2 more"):
        inst.match_allocate(nodes_jobspec(2), caller="alice")
    with pytest.raises(LimitError, match="max_nodes=2"):
        inst.match_grow(job, nodes_jobspec(2), caller="alice")
    assert inst.engine.save_state() == before
    inst.match_grow(job, socket_jobspec(), caller="alice")  # a socket of a second node: 2 nodes used
    with pytest.raises(LimitError, match=r"max_nodes=2 .* holds 2, asks for 1 more"):
        inst.match_grow(job, nodes_jobspec(1), caller="alice")
    with pytest.raises(LimitError, match=r"max_nodes=2 .* would occupy 1 more"):
        inst.match_grow(
            job, socket_jobspec(), caller="alice"
        )  # no node in the jobspec, a third node all the same
    assert recount_errors(inst.engine, [0]) == []
    inst.limits = Limits.from_dict({"users": {"alice": {"max_nodes": 3, "grows_per_minute": 2}}})
    inst.match_grow(job, socket_jobspec(), caller="alice")  # the second grow this minute: a third node
    with pytest.raises(LimitError, match="grows_per_minute=2"):
        inst.match_grow(job, socket_jobspec(), caller="alice")
    # other users and the admin are not bound by alice's limits
    inst.match_allocate(nodes_jobspec(1), caller="admin")
    with pytest.raises(LimitError, match="max_nodes=3"):
        inst.match_allocate(nodes_jobspec(1), caller="alice")  # holds 3 already
    assert recount_errors(inst.engine, [0]) == []


def test_a_jobs_last_answers_are_kept_and_older_ones_never_served_again(tmp_path: Path) -> None:
    """A retried grow is answered from the table while it is among the job's last
    ``request_table_size`` answers; an older one is refused, never served twice (its record stays,
    without the resources), and the job's oldest records go past four times the size, so a job that
    grows for weeks holds a bounded table."""
    inst = _instance(tmp_path, nodes=8, request_table_size=2)
    job = inst.match_allocate(nodes_jobspec(1), caller="alice", request_id="a1").jobid
    grows = [inst.match_grow(job, socket_jobspec(1), caller="alice", request_id=f"g{i}") for i in range(6)]
    held = inst.engine.save_state()
    again = inst.match_grow(job, socket_jobspec(1), caller="alice", request_id="g5")
    assert again.replayed and again.jgf == grows[5].jgf
    with pytest.raises(StateError, match="no longer kept"):
        inst.match_grow(job, socket_jobspec(1), caller="alice", request_id="g3")
    assert inst.engine.save_state() == held
    kept = [r for r in inst.requests.values() if r["jobid"] == job]
    assert len(kept) == 7 and sum("jgf" in r for r in kept) == 2  # (the allocation and six grows)
    # ... across a restart too, with owners and limit counters
    inst.grow_times["alice"] = [time.time()]
    inst.save()
    back = Instance.restore(tmp_path / "i.state", request_table_size=2)
    assert back.owner == "admin" and back.jobs[job].owner == "alice"
    assert back.grow_times == inst.grow_times
    assert back.match_grow(job, socket_jobspec(1), caller="alice", request_id="g4").jgf == grows[4].jgf
    with pytest.raises(StateError, match="no longer kept"):
        back.match_grow(job, socket_jobspec(1), caller="alice", request_id="g0")
    with pytest.raises(NotAuthorizedError):
        back.match_grow(job, socket_jobspec(1), caller="bob", request_id="g4")
    assert back.engine.save_state() == held
    # past four records per kept answer the oldest go (a replay of one is then a new request)
    for i in range(6, 10):
        back.match_grow(job, socket_jobspec(1), caller="alice", request_id=f"g{i}")
    kept = [r for r in back.requests.values() if r["jobid"] == job]
    assert len(kept) == 8 and sum("jgf" in r for r in kept) == 2
    assert not any(k.endswith(":a1") or k.endswith(":g0") for k in back.requests)
    # when the job ends its requests go (the last few answers are kept as "ended")
    back.release(job, caller="alice")
    assert not back.requests and not back._job_requests
    assert len(back.ended) <= 2


# ---------------------------------------------------------------------- audit log
def test_audit_log_is_json_lines_rotated_by_size(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", max_bytes=2000, backups=2)
    for i in range(100):
        log.write(user="alice", instance="root", op="MatchGrow", job=i, outcome="ok")
    log.close()
    files = sorted(tmp_path.glob("audit.jsonl*"))
    assert [f.name for f in files] == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    recs = [orjson.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert recs and all(set(r) == {"time", "user", "instance", "op", "job", "outcome"} for r in recs)
    assert recs[-1]["job"] == 99
    assert all(f.stat().st_size <= 2000 for f in files)
