"""Hole 4: per-user limits count what the match allocates (distinct nodes, cores), before anything commits."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import orjson
import pytest

from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import Raw, Server, jobspec, pb


def _slots(slots: int, sockets: int) -> bytes:
    """slot[slots] -> socket[sockets] -> core[4]: no node level at all."""
    return (
        f"version: 1\nresources:\n  - type: slot\n    count: {slots}\n    label: default\n    with:\n"
        f"      - type: socket\n        count: {sockets}\n        with:\n          - type: core\n            count: 4\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    ).encode()


RANGE = jobspec("{min: 1, max: 4, operator: '+', operand: 1}", sockets=1, cores=1)


@pytest.fixture(scope="module")
def root() -> Iterator[tuple[Server, Raw]]:
    with short_tmpdir() as d:
        (d / "limits.yaml").write_text(
            "default: {max_nodes: 2}\nusers:\n  carol: {max_nodes: null, max_cores: 8}\n"
        )
        s = Server(d, args=["--limits", str(d / "limits.yaml")]).start()
        raw = s.raw()
        try:
            yield s, raw
        finally:
            raw.close()
            s.stop()


def _state(raw: Raw) -> tuple[dict, list]:
    info = orjson.loads(raw.i("Info", pb.InfoRequest(recount=True), "admin").json)
    assert info["recount_errors"] == []
    return info["free"], info["jobs"]


@pytest.mark.parametrize(
    ("user", "spec", "limit"),
    [
        ("alice", _slots(3, 2), "max_nodes=2"),  # three whole nodes, and no node in the jobspec
        ("dave", RANGE, "max_nodes=2"),  # a count range: the match takes 4 nodes, its minimum is 1
        ("carol", _slots(3, 1), "max_cores=8"),  # 12 cores
    ],
)
def test_allocation_over_the_limit_is_refused_and_changes_nothing(
    root: tuple[Server, Raw], user: str, spec: bytes, limit: str
) -> None:
    _, raw = root
    p1 = _probe(raw)
    before = _state(raw)
    with pytest.raises(grpc.RpcError) as err:
        raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=spec), user)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and limit in err.value.details()
    assert _state(raw) == before
    assert _probe(raw) == p1 + 1  # the refused request did not even use a job id


def _probe(raw: Raw) -> int:
    probe = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1)), "admin")
    raw.i("Release", pb.ReleaseRequest(jobid=probe.jobid), "admin")
    return probe.jobid


def test_grow_over_the_limit_is_refused_and_undone(root: tuple[Server, Raw]) -> None:
    _, raw = root
    job = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=_slots(1, 1)), "alice").jobid  # 1 node
    before = _state(raw)
    holds = orjson.loads(raw.i("Info", pb.InfoRequest(jobid=job), "alice").json)
    with pytest.raises(grpc.RpcError) as err:
        raw.i("MatchGrow", pb.MatchGrowRequest(jobid=job, jobspec=_slots(2, 2), request_id="g"), "alice")
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and "max_nodes=2" in err.value.details()
    assert _state(raw) == before
    assert orjson.loads(raw.i("Info", pb.InfoRequest(jobid=job), "alice").json) == holds
    # within the limit it grows (one more node), and then it is at the limit
    raw.i("MatchGrow", pb.MatchGrowRequest(jobid=job, jobspec=_slots(1, 2), request_id="g2"), "alice")
    code = raw.code(raw.i, "MatchAllocate", pb.MatchAllocateRequest(jobspec=RANGE), "alice")
    assert code == grpc.StatusCode.PERMISSION_DENIED
    raw.i("Release", pb.ReleaseRequest(jobid=job), "alice")
