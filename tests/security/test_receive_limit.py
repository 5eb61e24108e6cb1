"""Hole 6: requests are limited to a few MiB before anything reads them; big JGF moves in checked chunks."""

from __future__ import annotations

import grpc
import orjson

from hierarchy import InstanceClient
from hierarchy._identity import Credential
from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import SECRET, Server, jobspec, pb, user_key

BIG = 48 * 1024 * 1024


def test_big_messages_are_refused_unread_and_big_jgf_streams_in_checked_chunks() -> None:
    with short_tmpdir() as d:
        s = Server(d, nodes=64, args=["--max-receive", str(64 * 1024)]).start()
        raw = s.raw()
        try:
            raw.i("Stat", pb.StatRequest(), "alice")
            base = s.rss_mb()
            junk = pb.MatchAllocateRequest(jobspec=b"x" * BIG)
            for user in (None, "alice"):  # without the secret's check passing, and with a valid user
                for _ in range(3):
                    code = raw.code(raw.i, "MatchAllocate", junk, user, token="" if user is None else None)
                    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, code
            no_secret = pb.MatchAllocateRequest(jobspec=b"x" * BIG)
            try:
                raw.inst.MatchAllocate(no_secret, timeout=20)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert s.rss_mb() - base < 100, (base, s.rss_mb())  # today: each 48 MB message is read whole

            # a 60-node job's JGF (~200 KB) through a 64 KiB-per-message path: streamed, checked first
            alice = Credential("alice", user_key("alice"))
            with InstanceClient(s.address, SECRET, credential=alice, stream_above=16 * 1024) as c:
                job = c.match_allocate(jobspec(60), request_id="big")
                assert len(job.jgf) > 64 * 1024
                before = c.info(job.jobid)
                # bob's stream and a wrong lease token are refused after the head: the body is not read
                # The body is 8 MiB in 1 KiB chunks, far more than HTTP/2 flow control lets a
                # client send ahead of a server that reads nothing, so the count of chunks pulled
                # says whether the server read the body, however slowly it answers under load.
                pulled = []
                body_chunks = 8 * 1024

                def chunks(user_job: int, token: str) -> object:
                    yield pb.ShrinkChunk(
                        head=pb.ShrinkRequest(jobid=user_job, lease_token=token), jgf_size=body_chunks * 1024
                    )
                    for i in range(body_chunks):
                        pulled.append(i)
                        yield pb.ShrinkChunk(jgf=b"x" * 1024)

                code = raw.code(raw.i, "ShrinkStream", chunks(job.jobid, ""), "bob")
                assert code == grpc.StatusCode.PERMISSION_DENIED
                assert len(pulled) < body_chunks // 2, len(pulled)
                assert c.info(job.jobid) == before
                unary = pb.ShrinkRequest(jobid=job.jobid, jgf=job.jgf)  # one message over the limit
                assert raw.code(raw.i, "Shrink", unary, "alice") == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert c.info(job.jobid) == before
                out = c.shrink(job.jobid, jgf=job.jgf)  # the whole job, in 16 KiB chunks
                assert out.job_gone and out.released > 60
            info = orjson.loads(raw.i("Info", pb.InfoRequest(recount=True), "admin").json)
            assert info["jobs"] == [] and info["recount_errors"] == []
        finally:
            raw.close()
            s.stop()
