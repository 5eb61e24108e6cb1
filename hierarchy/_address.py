"""Where instances listen and how they prove they belong to the same tree.

Addresses are Unix-domain sockets (``unix:/run/x.sock``, or any path with a
``/`` in it) or TCP ``HOST:PORT`` (``127.0.0.1:0`` picks a free port).  A
server binds TCP only on a loopback address unless TLS is configured
(:func:`check_listen`), so an instance is never reachable from another
machine without TLS.

Every call carries the per-tree secret in the gRPC metadata key
:data:`SECRET_KEY`.  The secret lives in a file of mode 0600
(:func:`write_secret_file`, :func:`read_secret_file`); it is never passed
on a command line.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fluxlite.errors import InputError

__all__ = [
    "SECRET_KEY",
    "Address",
    "TlsConfig",
    "check_listen",
    "check_private_dir",
    "check_socket_owner",
    "new_secret",
    "parse_address",
    "prepare_unix_listen",
    "read_secret_file",
    "write_secret_file",
]

#: gRPC metadata key that carries the per-tree secret.
SECRET_KEY = "x-fluxlite-secret"

#: Longest Unix socket path the kernel accepts (sun_path is 108 bytes with the NUL).
_MAX_SUN_PATH = 107


@dataclass(frozen=True)
class Address:
    """A Unix socket path or a TCP host and port."""

    kind: str  # "unix" | "tcp"
    path: str = ""
    host: str = ""
    port: int = 0

    @property
    def target(self) -> str:
        """The gRPC target / bind string."""
        if self.kind == "unix":
            return f"unix:{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """Unix sockets and loopback TCP addresses are local to this machine."""
        if self.kind == "unix":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def with_port(self, port: int) -> Address:
        return Address(self.kind, self.path, self.host, port)

    def __str__(self) -> str:
        return self.target


def parse_address(text: str) -> Address:
    """Parse ``unix:PATH``, a path containing ``/``, ``HOST:PORT`` or ``[V6]:PORT``.

    ``localhost`` means ``127.0.0.1``.  Raises :class:`InputError` naming the
    address for anything else.
    """
    s = text.strip()
    if not s:
        raise InputError("empty address")
    if s.startswith("unix:") or ("/" in s and not s.startswith("[")):
        path = s[5:] if s.startswith("unix:") else s
        while path.startswith("//"):
            path = path[1:]
        if not path:
            raise InputError(f"address {text!r}: empty socket path")
        path = os.path.abspath(path)
        if len(path.encode()) > _MAX_SUN_PATH:
            raise InputError(
                f"address {text!r}: socket path is {len(path.encode())} bytes, the limit is {_MAX_SUN_PATH}"
            )
        return Address("unix", path=path)
    if s.startswith("["):
        host, sep, port = s[1:].partition("]:")
        if not sep:
            raise InputError(f"address {text!r}: expected [IPV6]:PORT")
    else:
        host, sep, port = s.rpartition(":")
        if not sep or not host:
            raise InputError(f"address {text!r}: expected unix:PATH or HOST:PORT")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        p = int(port)
    except ValueError:
        raise InputError(f"address {text!r}: port {port!r} is not a number") from None
    if not 0 <= p <= 65535:
        raise InputError(f"address {text!r}: port {p} out of range")
    return Address("tcp", host=host, port=p)


@dataclass(frozen=True)
class TlsConfig:
    """PEM files for TLS: this side's certificate and key, and the CA that signs the peers."""

    cert: Path | None = None
    key: Path | None = None
    ca: Path | None = None

    @property
    def enabled(self) -> bool:
        return self.cert is not None or self.ca is not None

    def _read(self, p: Path | None, what: str) -> bytes | None:
        if p is None:
            return None
        try:
            return Path(p).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read TLS {what} {p}: {exc.strerror or exc}") from exc

    def server_credentials(self) -> Any:
        """gRPC server credentials; with a CA, clients must present a certificate it signed."""
        import grpc

        if self.cert is None or self.key is None:
            raise InputError("TLS on a server needs both --tls-cert and --tls-key")
        ca = self._read(self.ca, "CA")
        return grpc.ssl_server_credentials(
            [(self._read(self.key, "key"), self._read(self.cert, "certificate"))],
            root_certificates=ca,
            require_client_auth=ca is not None,
        )

    def channel_credentials(self) -> Any:
        """gRPC channel credentials (client certificate when cert and key are given)."""
        import grpc

        return grpc.ssl_channel_credentials(
            root_certificates=self._read(self.ca, "CA"),
            private_key=self._read(self.key, "key"),
            certificate_chain=self._read(self.cert, "certificate"),
        )


def check_listen(addr: Address, tls: TlsConfig | None) -> None:
    """Refuse to listen on a non-loopback TCP address without TLS (InputError)."""
    if addr.kind == "tcp" and not addr.loopback and (tls is None or not tls.enabled):
        raise InputError(
            f"refusing to listen on {addr.target} without TLS: use a Unix socket, a loopback "
            "address (127.0.0.1, ::1), or --tls-cert/--tls-key"
        )


def _who(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def check_private_dir(path: str | Path, what: str = "run directory") -> None:
    """Refuse (InputError) a directory another user could use to swap our files, the way ssh's StrictModes does.

    ``path`` must be owned by this user and writable by nobody else; each
    of its ancestors must be owned by this user or root and, when group or
    others may write it, have the sticky bit (like ``/tmp``), so nobody
    else can rename what lies below.
    """
    me = os.geteuid()
    p = Path(os.path.abspath(path))
    try:
        st = os.stat(p)
    except OSError as exc:
        raise InputError(f"{what} {p}: {exc.strerror or exc}") from exc
    if st.st_uid != me:
        raise InputError(
            f"{what} {p} is not owned by you (owner {_who(st.st_uid)}); use a directory of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise InputError(
            f"{what} {p} is writable by others (mode {stat.S_IMODE(st.st_mode):04o}); chmod go-w it "
            "or use a private directory"
        )
    for a in p.parents:
        try:
            st = os.stat(a)
        except OSError as exc:
            raise InputError(f"{what} {p}: cannot check {a}: {exc.strerror or exc}") from exc
        if st.st_uid not in (me, 0):
            raise InputError(
                f"{what} {p}: its ancestor {a} is not owned by you or root (owner {_who(st.st_uid)})"
            )
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise InputError(
                f"{what} {p}: its ancestor {a} is writable by others without the sticky bit "
                f"(mode {stat.S_IMODE(st.st_mode):04o})"
            )


def check_socket_owner(path: str, trusted: frozenset[int] = frozenset()) -> bool:
    """Before a client sends a secret to a Unix socket: it must belong to this user, root or a ``trusted`` uid.

    Returns False when the socket does not exist (yet); raises
    NotAuthorizedError when another user bound it.
    """
    from hierarchy._errors import NotAuthorizedError

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise NotAuthorizedError(f"cannot check socket {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISSOCK(st.st_mode):
        raise NotAuthorizedError(f"{path} is not a socket; not sending the tree secret there")
    if st.st_uid not in (os.geteuid(), 0, *trusted):
        raise NotAuthorizedError(
            f"socket {path} is owned by {_who(st.st_uid)}, not by you: not sending the tree secret "
            "(another user may have bound it; pass the instance owner as a trusted socket owner if expected)"
        )
    return True


def prepare_unix_listen(path: str) -> None:
    """Make ``path`` bindable: its directory must be private (see :func:`check_private_dir`); an
    existing entry is removed only when it is a stale socket (nobody accepts on it)."""
    import errno
    import socket

    from fluxlite.errors import RpcError

    check_private_dir(os.path.dirname(path), "socket directory")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RpcError(f"cannot check {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISSOCK(st.st_mode):
        raise InputError(f"--listen {path}: exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise RpcError(
                f"--listen {path}: cannot tell whether the socket is live ({exc.strerror or exc})"
            ) from exc
    else:
        raise InputError(f"--listen {path}: the socket is in use by a running server")
    finally:
        probe.close()
    try:
        os.unlink(path)  # a stale socket of a previous run
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise RpcError(f"cannot remove stale socket {path}: {exc.strerror or exc}") from exc


def new_secret() -> str:
    """A fresh per-tree secret (256 random bits, hex)."""
    return secrets.token_hex(32)


def write_secret_file(path: str | Path, secret: str | None = None) -> str:
    """Create ``path`` with mode 0600 holding ``secret`` (a new one by default); returns the secret.

    Refuses to overwrite an existing file.
    """
    secret = secret or new_secret()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise InputError(f"cannot create secret file {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    return secret


def read_secret_file(path: str | Path) -> bytes:
    """The secret in ``path``; the file must not be readable by group or others."""
    try:
        st = os.stat(path)
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read secret file {path}: {exc.strerror or exc}") from exc
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InputError(
            f"secret file {path} is accessible by group/others (mode {stat.S_IMODE(st.st_mode):04o}); "
            "chmod 600 it"
        )
    secret = data.strip()
    if len(secret) < 16:
        raise InputError(f"secret file {path}: the secret is empty or shorter than 16 bytes")
    return secret
