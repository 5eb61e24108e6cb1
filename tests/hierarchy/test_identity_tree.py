"""Identity and ownership over real instance processes and gRPC: a 3-level tree launched like a site would.

The launcher creates the site key and its owner's key (the instance owner);
the test gives two more users, alice and bob, their keys with the same
function ``fluxlite auth key`` uses.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fluxlite.errors import UnknownJobError
from hierarchy import InstanceClient, NotAuthorizedError
from hierarchy._errors import LimitError
from hierarchy._identity import Credential, read_key_file, write_user_key_file
from hierarchy._launch import owner_credential
from tests.hierarchy.helpers import chain, nodes_jobspec, short_tmpdir, socket_jobspec, start

LEVELS = ("root", "mid", "leaf")


class _Fixed(Credential):
    """A credential that sends the same token every time (a replay)."""

    def __init__(self, token: str) -> None:
        self._t = token

    def token(self, *a: object, **k: object) -> str:
        return self._t


def _audit(d: Path, name: str) -> list[dict]:
    return [orjson.loads(x) for x in (d / f"{name}.audit.jsonl").read_text().splitlines()]


def test_users_act_only_on_their_own_jobs_across_the_tree() -> None:
    with short_tmpdir() as d:
        (d / "limits.yaml").write_text("users:\n  alice: {max_nodes: 2, grows_per_minute: 3}\n")
        t = start(d, chain(d, [8, 4, 2]), state=True, heartbeat=0.3, limits=d / "limits.yaml")
        try:
            site = read_key_file(d / "site.key")
            alice = write_user_key_file(d / "users" / "alice.key", site, "alice")
            bob = write_user_key_file(d / "users" / "bob.key", site, "bob")
            admin = owner_credential(d)
            assert admin is not None

            def client(name: str, cred: Credential | None) -> InstanceClient:
                return InstanceClient(t.address(name), t.secret, timeout=10, credential=cred)

            jobs = {}
            for name in LEVELS:
                with client(name, alice) as a:
                    jobs[name] = a.match_allocate(nodes_jobspec(1), request_id=f"a-{name}").jobid
            # bob may not grow, shrink, release or inspect alice's jobs, at any level
            for name in LEVELS:
                job = jobs[name]
                before = t.client(name).info(job)
                with client(name, bob) as b:
                    for call in (
                        lambda b=b, job=job: b.match_grow(job, socket_jobspec()),
                        lambda b=b, job=job, p=before["subtrees"][:1]: b.shrink(job, paths=p),
                        lambda b=b, job=job: b.release(job),
                    ):
                        with pytest.raises(NotAuthorizedError, match="belongs to 'alice'"):
                            call()
                    assert b.info(job) == {
                        "jobid": job,
                        "state": "allocated",
                        "kind": "client",
                        "owner": "alice",
                    }
                assert t.client(name).info(job) == before  # nothing changed
            # alice may
            with client("leaf", alice) as a:
                g = a.match_grow(jobs["leaf"], nodes_jobspec(1), request_id="g1")
                assert [x.outcome for x in g.timings] == ["local"]
                assert a.info(jobs["leaf"])["owner"] == "alice"
                # limits: alice uses both nodes of the leaf now; a third is refused, naming the limit
                with pytest.raises(LimitError, match=r"max_nodes=2 .* holds 2, asks for 1 more"):
                    a.match_grow(jobs["leaf"], nodes_jobspec(1))
            # the instance owner may act on anybody's job (and is not bound by alice's limits); the grow
            # climbs the tree as the leaf's own user, the tree's owner
            with client("leaf", admin) as m:
                up = m.match_grow(jobs["leaf"], nodes_jobspec(1))
                assert [x.outcome for x in up.timings] == ["parent", "local"]
            mid_lease = [j for j in t.client("mid").info()["jobs"] if j["kind"] == "child"]
            assert mid_lease and all(j["owner"] == admin.user for j in mid_lease)
            # the instance owner may act on anybody's job
            with client("mid", admin) as m:
                m.match_grow(jobs["mid"], socket_jobspec())
                m.release(jobs["mid"])
                with pytest.raises(UnknownJobError):
                    m.info(jobs["mid"])

            # forged, expired and replayed tokens are refused, logged and audited
            other_site = Credential("alice", bytes(32))
            with client("root", other_site) as c, pytest.raises(NotAuthorizedError, match="forged"):
                c.stat()
            with (
                client("root", Credential("alice", alice.key, ttl=-5)) as c,
                pytest.raises(NotAuthorizedError, match="expired"),
            ):
                c.stat()
            with client("root", _Fixed(alice.token("root"))) as c:
                c.stat()
                with pytest.raises(NotAuthorizedError, match="replayed"):
                    c.stat()
            with (
                InstanceClient(t.address("root"), t.secret, timeout=10) as c,
                pytest.raises(NotAuthorizedError, match="missing"),
            ):
                c.match_allocate(nodes_jobspec(1))
            assert "refused" in t.log("root") and "forged" in t.log("root")
            audit = _audit(d, "root")
            assert audit[0]["op"] == "MatchAllocate" and audit[0]["user"] == admin.user  # mid's lease
            mine = [r for r in audit if r["user"] == "alice" and r["op"] == "MatchAllocate"]
            assert mine == [{**mine[0], "instance": "root", "job": jobs["root"], "outcome": "ok"}]
            assert mine[0]["request_id"] == "a-root" and mine[0]["time"] > 0
            assert any(r["outcome"] == "NotAuthorizedError" and r["user"] is None for r in audit)
            leaf_audit = _audit(d, "leaf")
            refused = [r for r in leaf_audit if r["user"] == "bob"]
            assert {r["op"] for r in refused} == {"MatchGrow", "Shrink", "Release"}
            assert all(r["outcome"] == "NotAuthorizedError" for r in refused)

            # a restart keeps owners, limit counters and request ids
            with client("leaf", alice) as a:
                # alice holds 3 nodes (the admin grew her job): she may use them, but take no 4th node,
                # so the grows below go to sockets she gives back on nodes she keeps
                by_node: dict[str, list[str]] = {}
                for p in a.info(jobs["leaf"])["subtrees"]:  # its sockets (the nodes are shared)
                    by_node.setdefault(p.rsplit("/", 1)[0], []).append(p)
                two = [ps[-1] for ps in by_node.values() if len(ps) == 2][:2]
                assert len(two) == 2, by_node
                a.shrink(jobs["leaf"], paths=two)
                a.match_grow(jobs["leaf"], socket_jobspec(1), request_id="g2")  # 2nd grow this minute
            t.kill("leaf")
            t.restart("leaf", drop=("--from-parent", "--jobspec"))
            with client("leaf", alice) as a:
                again = a.match_grow(jobs["leaf"], nodes_jobspec(1), request_id="g1")
                assert again.replayed and again.jgf == g.jgf
                a.match_grow(jobs["leaf"], socket_jobspec(1), request_id="g3")  # 3rd
                with pytest.raises(LimitError, match="grows_per_minute=3"):
                    a.match_grow(jobs["leaf"], socket_jobspec(1), request_id="g4")
            with client("leaf", bob) as b, pytest.raises(NotAuthorizedError, match="belongs to 'alice'"):
                b.release(jobs["leaf"])
            for name in LEVELS:
                assert t.info(name)["recount_errors"] == []
        finally:
            t.close()
