"""Holes 7 and 9 and the minor one: run/socket directories, the client's socket-owner check, --listen over
a file, and the instance log's mode."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from hierarchy import InstanceClient, NotAuthorizedError
from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import SECRET, Server, pb

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another user")


@needs_root
def test_socket_dir_owned_by_another_user_or_world_writable_is_refused() -> None:
    """Hole 7: a run dir of another user (0777) is refused at start, with one line; so is a 0777 dir of ours."""
    with short_tmpdir() as d:
        for owner, mode in ((NOBODY, 0o777), (os.geteuid(), 0o777), (NOBODY, 0o755)):
            run = d / f"run-{owner}-{mode:o}"
            run.mkdir()
            os.chown(run, owner, -1)
            os.chmod(run, mode)
            s = Server(d, listen=f"unix:{run}/root.sock")
            r = s.run()
            assert r.returncode != 0, r.stdout + r.stderr
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and ("not owned by you" in lines[0] or "writable by others" in lines[0]), (
                r.stderr
            )
            assert not (run / "root.sock").exists()


@needs_root
def test_client_checks_the_socket_owner_before_sending_the_secret() -> None:
    """Hole 7: a socket bound by another user is refused by the client before a byte is written."""
    with short_tmpdir() as d:
        path = d / "fake.sock"
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(str(path))
        os.chown(path, NOBODY, -1)
        lsock.listen(4)
        lsock.settimeout(0.2)
        got: list[bytes] = []

        def accept() -> None:
            for _ in range(15):
                try:
                    conn, _ = lsock.accept()
                except TimeoutError:
                    continue
                conn.settimeout(0.5)
                try:
                    while chunk := conn.recv(65536):
                        got.append(chunk)
                except OSError:
                    pass
                conn.close()

        t = threading.Thread(target=accept)
        t.start()
        try:
            with (
                InstanceClient(f"unix:{path}", SECRET, timeout=1.0) as c,
                pytest.raises(NotAuthorizedError, match="owned by"),
            ):
                c.stat()
        finally:
            t.join()
            lsock.close()
        assert SECRET not in b"".join(got)
        assert got == []


def test_listen_replaces_only_a_stale_socket() -> None:
    """Hole 9: --listen unix:PATH over a regular file or a live socket fails and leaves it; a stale socket is replaced."""
    with short_tmpdir() as d:
        victim = d / "root.sock"
        victim.write_text("precious\n")
        r = Server(d).run()
        assert r.returncode != 0 and "not a socket" in r.stderr, r.stderr
        assert victim.read_text() == "precious\n"
        victim.unlink()
        live = Server(d).start()
        try:
            r = Server(d, name="root2", listen=live.listen).run()
            assert r.returncode != 0 and "in use" in r.stderr, r.stderr
            raw = live.raw()
            assert raw.i("Health", pb.HealthRequest()).status == "SERVING"  # still its own socket
            raw.close()
        finally:
            live.kill9()  # leaves a stale socket behind
        assert stat.S_ISSOCK(os.lstat(victim).st_mode)
        again = Server(d).start()
        try:
            raw = again.raw()
            assert raw.i("Health", pb.HealthRequest()).status == "SERVING"
            raw.close()
        finally:
            again.stop()


def test_instance_logs_are_private() -> None:
    """Minor: the launcher's per-instance .log files are 0600 like the rest of the run directory."""
    from tests.hierarchy.helpers import chain, start

    with short_tmpdir() as d:
        t = start(d / "run", chain(d, [2]))
        try:
            log = Path(t.record("root")["log"])
            assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
        finally:
            t.close()
