"""The pool provider: grants from a JGF pool file, idempotent grows, partial give-backs, persistence."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fluxlite.errors import BusyError, InputError, JobspecError, StateError, UnsatisfiableError
from providers import PROVIDERS, ExternalAPI, PoolProvider, create_provider, register
from tests.hierarchy.helpers import nodes_jobspec, socket_jobspec, write_pool


@pytest.fixture
def pool_file(tmp_path: Path) -> Path:
    """Nodes 2 and 3 of a 4-node generated cluster (the instance would hold nodes 0 and 1)."""
    return write_pool(tmp_path / "pool.json", 2, 2)


def _paths(jgf: bytes) -> list[str]:
    return [n["metadata"]["paths"]["containment"] for n in orjson.loads(jgf)["graph"]["nodes"]]


def test_pool_is_an_external_api(pool_file: Path) -> None:
    """PoolProvider satisfies the ExternalAPI protocol and is registered as 'pool'."""
    p = create_provider(f"pool:{pool_file}")
    assert isinstance(p, ExternalAPI) and isinstance(p, PoolProvider)
    assert "pool" in PROVIDERS and p.name == f"pool:{pool_file}"
    with pytest.raises(ValueError, match="already registered"):
        register("pool", PROVIDERS["pool"])


def test_grant_is_a_subgraph_under_the_shared_root(pool_file: Path) -> None:
    """A grant is the match JGF: the shared root plus the granted node subtree."""
    p = PoolProvider(pool_file)
    jgf = p.grow(nodes_jobspec(1), "r1")
    paths = _paths(jgf)
    assert "/cluster0" in paths and len(paths) == 1 + 1 + 2 + 8
    assert all(x == "/cluster0" or x.startswith(("/cluster0/node2", "/cluster0/node3")) for x in paths)


def test_retried_request_is_granted_once(pool_file: Path) -> None:
    """The same request id returns the same document and takes nothing more."""
    p = PoolProvider(pool_file)
    a = p.grow(nodes_jobspec(1), "r1")
    assert p.grow(nodes_jobspec(1), "r1") == a
    b = p.grow(nodes_jobspec(1), "r2")
    assert set(_paths(a)) & set(_paths(b)) == {"/cluster0"}
    with pytest.raises(BusyError):
        p.grow(nodes_jobspec(1), "r3")


def test_errors_keep_their_types(pool_file: Path) -> None:
    """Bad jobspec, impossible and busy requests raise JobspecError, UnsatisfiableError, BusyError."""
    p = PoolProvider(pool_file)
    with pytest.raises(JobspecError):
        p.grow(b"version: 1\nresources: []\n", "bad")
    with pytest.raises(UnsatisfiableError):
        p.grow(nodes_jobspec(3), "big")


def test_partial_and_whole_give_back(pool_file: Path) -> None:
    """Giving back one socket keeps the rest of the grant; giving back the rest frees the node."""
    p = PoolProvider(pool_file)
    jgf = p.grow(nodes_jobspec(2), "r1")
    node = sorted(x for x in _paths(jgf) if x.count("/") == 2)[0]
    doc = orjson.loads(jgf)
    sock = [
        n
        for n in doc["graph"]["nodes"]
        if n["metadata"]["paths"]["containment"].startswith(node + "/socket0")
    ]
    p.shrink(orjson.dumps({"graph": {"nodes": sock, "edges": []}}))
    assert p.grow(socket_jobspec(), "s1")  # the socket is free again
    with pytest.raises(BusyError):
        p.grow(socket_jobspec(), "s2")
    p.shrink(jgf)  # the rest of r1 (the socket given back above is now s1's)
    with pytest.raises(StateError, match="already given back"):
        p.grow(nodes_jobspec(2), "r1")
    assert p.grow(nodes_jobspec(1), "r4")


def test_foreign_give_back_changes_nothing(pool_file: Path, tmp_path: Path) -> None:
    """Giving back vertices the pool never granted raises StateError and keeps every grant."""
    p = PoolProvider(pool_file)
    jgf = p.grow(nodes_jobspec(1), "r1")
    other = next(x for x in ("/cluster0/node2", "/cluster0/node3") if x not in _paths(jgf))
    fake = {
        "graph": {
            "nodes": [
                {
                    "id": "1",
                    "metadata": {
                        "type": "node",
                        "id": int(other[-1]),
                        "rank": int(other[-1]),
                        "paths": {"containment": other},
                    },
                }
            ],
            "edges": [],
        }
    }
    with pytest.raises(StateError, match="not granted"):
        p.shrink(orjson.dumps(fake))
    fake["graph"]["nodes"][0]["metadata"]["paths"]["containment"] = "/cluster0/node9"
    with pytest.raises(StateError, match="not in the pool"):
        p.shrink(orjson.dumps(fake))
    with pytest.raises(BusyError):
        p.grow(nodes_jobspec(2), "r2")


def test_state_survives_a_restart(pool_file: Path, tmp_path: Path) -> None:
    """With a state file, a new provider object remembers grants and request ids."""
    st = tmp_path / "pool.state"
    p = PoolProvider(pool_file, state_path=st)
    a = p.grow(nodes_jobspec(1), "r1")
    p.close()
    q = PoolProvider(pool_file, state_path=st)
    assert q.grow(nodes_jobspec(1), "r1") == a
    q.grow(nodes_jobspec(1), "r2")
    with pytest.raises(BusyError):
        q.grow(nodes_jobspec(1), "r3")


def test_bad_specs_are_refused(tmp_path: Path) -> None:
    """Unknown kinds, missing arguments and missing pool files are InputErrors."""
    for spec in ("pool", "pool:", "ec9:x"):
        with pytest.raises(InputError):
            create_provider(spec)
    with pytest.raises(InputError, match="does not exist"):
        create_provider(f"pool:{tmp_path / 'nope.json'}")
