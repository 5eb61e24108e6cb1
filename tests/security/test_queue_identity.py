"""Hole 1: the queue service has the instance service's identity model, limits, audit log and state."""

from __future__ import annotations

import grpc
import orjson

from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import Raw, Server, pb, qpb

DFS = "DFSPOLICY DFSSINGLEJOBDELAY\nDFSDYNDELAYPERM 0\n"


def _jobs(raw: Raw, user: str) -> dict[int, qpb.JobInfo]:
    return {j.jobid: j for j in raw.q("Jobs", qpb.JobsRequest(), user).jobs}


def test_queue_identity_ownership_limits_audit_and_state() -> None:
    with short_tmpdir() as d:
        (d / "limits.yaml").write_text("users:\n  alice: {max_nodes: 3}\n")
        (d / "dfs.cfg").write_text(DFS)
        args = ["--queue", "easy", "--limits", str(d / "limits.yaml"), "--state", str(d / "root.state"),
                "--queue-fairness", str(d / "dfs.cfg")]  # fmt: skip
        s = Server(d, nodes=4, args=args).start()
        raw = s.raw()
        try:
            # no token: refused; a token's user owns the job whatever the request says
            code = raw.code(raw.q, "Submit", qpb.SubmitRequest(size=1, walltime=600, user="mallory"))
            assert code == grpc.StatusCode.PERMISSION_DENIED
            forged = qpb.SubmitRequest(size=1, walltime=600, user="bob\nWARNING forged")
            assert raw.code(raw.q, "Submit", forged, "alice") == grpc.StatusCode.PERMISSION_DENIED
            a = raw.q("Submit", qpb.SubmitRequest(size=1, walltime=600), "alice")
            assert a.user == "alice" and a.state == "running" and len(a.paths) == 1
            # limits: 7 nodes (more than alice's 3, and than the graph) and 3 more (1 + 3 > 3): nothing queued
            before = _jobs(raw, "admin")
            for size in (7, 3):
                err = raw.code(raw.q, "Submit", qpb.SubmitRequest(size=size, walltime=600), "alice")
                assert err == grpc.StatusCode.PERMISSION_DENIED, size
            assert _jobs(raw, "admin").keys() == before.keys()
            over = qpb.DyngetRequest(jobid=a.jobid, count=3)
            assert raw.code(raw.q, "Dynget", over, "alice") == grpc.StatusCode.PERMISSION_DENIED
            assert _jobs(raw, "alice")[a.jobid].size == 1
            # bob may not touch alice's job, nor see what it holds
            b = raw.q("Submit", qpb.SubmitRequest(size=2, walltime=60), "bob")
            for method, req in (
                ("Cancel", qpb.JobRef(jobid=a.jobid)),
                ("Complete", qpb.JobRef(jobid=a.jobid)),
                ("Dynget", qpb.DyngetRequest(jobid=a.jobid, count=1)),
                ("Dynfree", qpb.DynfreeRequest(jobid=a.jobid, paths=list(a.paths))),
            ):
                assert raw.code(raw.q, method, req, "bob") == grpc.StatusCode.PERMISSION_DENIED, method
            seen = _jobs(raw, "bob")
            assert seen[a.jobid].user == "alice" and list(seen[a.jobid].paths) == []
            assert _jobs(raw, "alice")[a.jobid].state == "running"
            # carol waits for bob's nodes (reserved at bob's end); a grant to alice would take the free
            # node and delay carol: DFSDYNDELAYPERM 0 of --queue-fairness refuses it (NONE would grant it)
            c = raw.q("Submit", qpb.SubmitRequest(size=3, walltime=600), "carol")
            assert c.state == "pending" and c.reserved_at >= 0
            g = raw.q("Dynget", qpb.DyngetRequest(jobid=a.jobid, count=1), "alice")
            assert not g.granted and g.job.refusals == 1 and g.job.size == 1
            assert raw.q("Cancel", qpb.JobRef(jobid=b.jobid), "admin").state == "cancelled"  # the owner may
            # kill -9 and restart from --state: nothing lost
            before = {j: (x.state, x.user, tuple(x.paths), x.size) for j, x in _jobs(raw, "admin").items()}
            s.kill9()  # right after the last change: its audit record must be on disk all the same
            # the audit log names the token's user for every change and every refusal
            ops = [(r["op"], r["user"], r["outcome"]) for r in s.audit()]
            assert ("Submit", "alice", "ok") in ops and ("Cancel", "admin", "ok") in ops
            assert ("Cancel", "bob", "NotAuthorizedError") in ops and ("Submit", "alice", "LimitError") in ops
            assert ("Submit", None, "NotAuthorizedError") in ops
            assert ops[-1] == ("Cancel", "admin", "ok")
            s.start()
            raw.close()
            raw = s.raw()
            after = {j: (x.state, x.user, tuple(x.paths), x.size) for j, x in _jobs(raw, "admin").items()}
            assert after == before
            info = orjson.loads(raw.i("Info", pb.InfoRequest(recount=True), "admin").json)
            assert info["recount_errors"] == []
            nxt = raw.q("Submit", qpb.SubmitRequest(size=1, walltime=600), "bob")
            assert nxt.jobid == max(before) + 1  # the id counter survived too
            assert raw.q("Complete", qpb.JobRef(jobid=a.jobid), "alice").state == "done"
            assert _jobs(raw, "carol")[c.jobid].state in ("pending", "running")
        finally:
            raw.close()
            s.stop()
