"""Holes 2 and 3: a token names exactly one instance; request ids and lease tokens do not cross users."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from hierarchy._identity import Credential
from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import Raw, Server, jobspec, mint, pb, user_key


@pytest.fixture(scope="module")
def root() -> Iterator[tuple[Server, Raw]]:
    with short_tmpdir() as d:
        s = Server(d).start()
        raw = s.raw()
        try:
            yield s, raw
        finally:
            raw.close()
            s.stop()


def test_wildcard_tokens_are_refused(root: tuple[Server, Raw]) -> None:
    """Hole 2: a token for "*" (valid at every instance, so replayable at any) is refused, and audited."""
    s, raw = root
    before = raw.i("Stat", pb.StatRequest(), "admin").free
    for inst in ("*", "", "other"):
        code = raw.code(
            raw.i, "MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1)), token=mint("alice", inst)
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED, inst
    assert raw.i("Stat", pb.StatRequest(), "admin").free == before
    assert raw.i("Stat", pb.StatRequest(), token=mint("alice", "root")).vertices > 0
    refused = [r for r in s.audit() if r["op"] == "MatchAllocate" and r["outcome"] == "NotAuthorizedError"]
    assert len(refused) == 3
    # the project's client cannot mint one either
    with pytest.raises(TypeError):
        Credential("alice", user_key("alice")).token()  # type: ignore[call-arg]


def test_request_ids_are_scoped_to_the_caller(root: tuple[Server, Raw]) -> None:
    """Hole 3: bob reusing alice's request id gets his own answer, never her job id or JGF."""
    _, raw = root
    a = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1), request_id="shared"), "alice")
    b = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1), request_id="shared"), "bob")
    assert not b.replayed and b.jobid != a.jobid and b.jgf != a.jgf
    again = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1), request_id="shared"), "alice")
    assert again.replayed and again.jobid == a.jobid  # alice's own retry still works
    for who, job in (("alice", a.jobid), ("bob", b.jobid)):
        raw.i("Release", pb.ReleaseRequest(jobid=job), who)


def test_lease_token_only_on_the_creating_call_and_heartbeat_checks_the_user(
    root: tuple[Server, Raw],
) -> None:
    """Hole 3: replaying a child's start-up request id returns no lease token; bob cannot heartbeat it."""
    _, raw = root
    req = pb.MatchAllocateRequest(jobspec=jobspec(1), request_id="child-init-1", lease=True, child_name="c")
    first = raw.i("MatchAllocate", req, "admin")
    assert first.lease_token
    again = raw.i("MatchAllocate", req, "admin")
    assert again.replayed and again.jobid == first.jobid and again.lease_token == ""
    for who in ("bob", "alice"):  # their own new leases, never the admin's
        r = raw.i("MatchAllocate", req, who)
        assert not r.replayed and r.jobid != first.jobid and r.lease_token not in ("", first.lease_token)
        raw.i("Release", pb.ReleaseRequest(jobid=r.jobid, lease_token=r.lease_token), who)
    hb = pb.HeartbeatRequest(jobid=first.jobid, lease_token=first.lease_token)
    assert raw.code(raw.i, "Heartbeat", hb, "bob") == grpc.StatusCode.PERMISSION_DENIED
    assert raw.i("Heartbeat", hb, "admin").grace_s > 0
    # a child that chose its own lease secret is never sent one
    own = "f" * 32
    req2 = pb.MatchAllocateRequest(
        jobspec=jobspec(1), request_id="child-init-2", lease=True, lease_secret=own
    )
    mine = raw.i("MatchAllocate", req2, "admin")
    assert mine.lease_token == ""
    assert raw.i("Heartbeat", pb.HeartbeatRequest(jobid=mine.jobid, lease_token=own), "admin").grace_s > 0
    short = pb.MatchAllocateRequest(jobspec=jobspec(1), lease=True, lease_secret="abc")
    assert raw.code(raw.i, "MatchAllocate", short, "admin") == grpc.StatusCode.INVALID_ARGUMENT
    for job, tok in ((first.jobid, first.lease_token), (mine.jobid, own)):
        raw.i("Release", pb.ReleaseRequest(jobid=job, lease_token=tok), "admin")
