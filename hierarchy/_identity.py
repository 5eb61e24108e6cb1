"""Who is calling: per-user keys, signed per-call tokens, and the audit log.

The tree secret (``x-fluxlite-secret``) only says "this caller belongs to
the tree".  On top of it every call names a *user* with a token signed by
that user's key, in the metadata key :data:`USER_KEY`:

* A **site key** (256 random bits, a 0600 file shared by the instances of a
  tree, like the tree secret) derives one key per user:
  ``user_key = HMAC-SHA256(site_key, "fluxlite-user-key|" + user)``.  The
  instance owner hands each user their key file (``fluxlite auth key
  --user alice``); a user can sign as themself and nobody else, and an
  instance verifies any user's token from the site key alone (no user
  table to keep in sync) -- the scheme of munge and flux-security's
  ``sign-none``/``sign-munge`` split, with the standard library's
  ``hmac``.
* A **token** is ``v1.<payload>.<mac>``: ``payload`` is base64url JSON
  ``{"u": user, "i": instance, "e": expiry (unix s), "n": nonce}``
  and ``mac`` is HMAC-SHA256 of the payload under the user's key.  A client
  mints a new token for every call (:meth:`Credential.token`), naming the
  one instance it calls: there is no wildcard, so a token that reached one
  instance (a fake one, say) is worth nothing at any other.
* :class:`Verifier` refuses a token that is malformed, forged (bad MAC),
  expired, issued for another instance (or for none: ``*``), valid for longer than
  ``max_ttl`` or already seen (a nonce is remembered until its token
  expires, so memory is bounded by the call rate times ``max_ttl``).  Each
  refusal is logged with its reason.

:class:`AuditLog` writes one JSON line per state-changing call (time, user,
instance, operation, job, outcome) to a file rotated by size: one
``write(2)`` per record on the call's path, fsync in batches off it.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import hmac
import logging
import logging.handlers
import os
import re
import secrets
import stat
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from fluxlite.errors import InputError
from hierarchy._errors import NotAuthorizedError

__all__ = [
    "USER_KEY",
    "AuditLog",
    "Credential",
    "Verifier",
    "current_user",
    "derive_user_key",
    "new_site_key",
    "read_key_file",
    "read_user_key_file",
    "write_key_file",
    "write_user_key_file",
]

#: gRPC metadata key that carries the caller's signed token.
USER_KEY = "x-fluxlite-user"

_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")
_log = logging.getLogger("fluxlite.instance")


def current_user() -> str:
    """The name of the user running this process."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - no passwd entry
        return f"uid{os.getuid()}"


def check_user(user: str) -> str:
    """``user`` if it is a valid user name (letters, digits, ``_.@-``, at most 64), else InputError."""
    if not isinstance(user, str) or not _USER_RE.match(user):
        raise InputError(f"invalid user name {user!r} (letters, digits and _.@- only, at most 64)")
    return user


def new_site_key() -> bytes:
    """A fresh site key (256 random bits, as hex bytes)."""
    return secrets.token_hex(32).encode()


def derive_user_key(site_key: bytes, user: str) -> bytes:
    """The key of ``user`` under ``site_key``."""
    return hmac.new(site_key, b"fluxlite-user-key|" + check_user(user).encode(), hashlib.sha256).digest()


def _private_write(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise InputError(f"cannot create key file {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _private_read(path: Path, what: str) -> bytes:
    try:
        st = os.stat(path)
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InputError(
            f"{what} {path} is accessible by group/others (mode {stat.S_IMODE(st.st_mode):04o}); chmod 600 it"
        )
    return data


def write_key_file(path: str | Path, key: bytes | None = None) -> bytes:
    """Create a site key file (mode 0600; refuses to overwrite); returns the key."""
    key = key or new_site_key()
    _private_write(Path(path), key + b"\n")
    return key


def read_key_file(path: str | Path) -> bytes:
    """The site key in ``path`` (must be mode 0600 or stricter, at least 32 bytes)."""
    key = _private_read(Path(path), "site key file").strip()
    if len(key) < 32:
        raise InputError(f"site key file {path}: the key is empty or shorter than 32 bytes")
    return key


def write_user_key_file(path: str | Path, site_key: bytes, user: str) -> Credential:
    """Create ``user``'s key file (mode 0600) from the site key; returns the credential."""
    cred = Credential(user, derive_user_key(site_key, user))
    _private_write(Path(path), orjson.dumps({"user": user, "key": cred.key.hex()}) + b"\n")
    return cred


def read_user_key_file(path: str | Path) -> Credential:
    """The credential in a user key file (InputError naming the field at fault)."""
    raw = _private_read(Path(path), "user key file")
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"user key file {path}: not JSON ({exc})") from exc
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("user"), str)
        or not isinstance(doc.get("key"), str)
    ):
        raise InputError(f'user key file {path}: expected {{"user": NAME, "key": HEX}}')
    try:
        key = bytes.fromhex(doc["key"])
    except ValueError as exc:
        raise InputError(f"user key file {path}: field 'key' is not hex") from exc
    if len(key) != 32:
        raise InputError(f"user key file {path}: field 'key' must be 32 bytes")
    return Credential(check_user(doc["user"]), key)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Credential:
    """A user's identity: mints a signed, single-use token per call."""

    __slots__ = ("key", "ttl", "user")

    def __init__(self, user: str, key: bytes, *, ttl: float = 60.0) -> None:
        self.user = check_user(user)
        self.key = key
        self.ttl = ttl

    def token(self, instance: str, *, now: float | None = None, ttl: float | None = None) -> str:
        """A fresh token for one call to the instance named ``instance`` (no wildcards)."""
        if not instance or instance == "*":
            raise InputError("a user token names exactly one instance (no wildcard)")
        exp = int((time.time() if now is None else now) + (self.ttl if ttl is None else ttl))
        payload = _b64(orjson.dumps({"u": self.user, "i": instance, "e": exp, "n": secrets.token_hex(12)}))
        mac = hmac.digest(self.key, payload.encode(), "sha256")  # the one-shot C path
        return f"v1.{payload}.{_b64(mac)}"

    def __repr__(self) -> str:
        return f"Credential(user={self.user!r})"


class Verifier:
    """Checks tokens against the site key (see the module docstring)."""

    def __init__(
        self,
        site_key: bytes,
        instance: str,
        *,
        max_ttl: float = 300.0,
        log: logging.Logger | None = None,
    ) -> None:
        self._site_key = site_key
        self.instance = instance
        self.max_ttl = max_ttl
        self.log = log or _log
        self._keys: dict[str, bytes] = {}
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._next_purge = 0.0
        #: refusals by reason (forged, expired, replayed, ...)
        self.refused: dict[str, int] = {}

    def _refuse(self, reason: str, detail: str, method: str) -> NotAuthorizedError:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        self.log.warning("refused %s: %s token (%s)", method or "call", reason, detail)
        return NotAuthorizedError(f"{reason} user token: {detail}")

    def _key(self, user: str) -> bytes:
        k = self._keys.get(user)
        if k is None:
            k = self._keys[user] = derive_user_key(self._site_key, user)
        return k

    def verify(self, token: str, *, method: str = "", now: float | None = None) -> str:
        """The user the token names; NotAuthorizedError (logged) if it is not acceptable."""
        now = time.time() if now is None else now
        if not token:
            raise self._refuse("missing", "no user token in the call's metadata", method)
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != "v1":
            raise self._refuse("malformed", "expected v1.PAYLOAD.MAC", method)
        try:
            doc = orjson.loads(_unb64(parts[1]))
            mac = _unb64(parts[2])
            user, inst, exp, nonce = doc["u"], doc["i"], doc["e"], doc["n"]
            if not (
                isinstance(user, str)
                and isinstance(inst, str)
                and isinstance(exp, int)
                and isinstance(nonce, str)
            ):
                raise TypeError("field types")
            if user not in self._keys:  # (a cached key was derived from a checked name)
                check_user(user)
        except (ValueError, KeyError, TypeError, InputError, orjson.JSONDecodeError) as exc:
            raise self._refuse("malformed", f"unreadable payload ({type(exc).__name__})", method) from None
        want = hmac.digest(self._key(user), parts[1].encode(), "sha256")
        if not hmac.compare_digest(mac, want):
            raise self._refuse("forged", f"bad signature for user {user!r}", method)
        if exp <= now:
            raise self._refuse("expired", f"user {user!r}, expired {now - exp:.0f} s ago", method)
        if exp > now + self.max_ttl + 5:
            raise self._refuse("overlong", f"user {user!r}, valid for more than {self.max_ttl:.0f} s", method)
        if inst != self.instance:
            reason = "wildcard" if inst in ("*", "") else "misdirected"
            raise self._refuse(reason, f"user {user!r}, issued for instance {inst!r}", method)
        with self._lock:
            if now >= self._next_purge:
                self._seen = {n: e for n, e in self._seen.items() if e > now}
                self._next_purge = now + 10.0
            if nonce in self._seen:
                raise self._refuse("replayed", f"user {user!r}, nonce already used", method)
            self._seen[nonce] = float(exp)
        return user


class AuditLog:
    """One JSON line per state-changing call, in a file rotated by size.

    Off the RPC's critical path, without losing a record on kill -9: a
    record is one ``write(2)`` of one line to an ``O_APPEND`` descriptor
    (a few microseconds; once it returns the line is in the kernel and
    survives the death of the process), and a background thread fsyncs
    the file every ``sync_s`` seconds, so a power loss costs at most the
    last batch.  Rotation (at ``max_bytes``, ``backups`` old files kept)
    happens inline, once per ``max_bytes`` of records.
    """

    def __init__(
        self, path: str | Path, *, max_bytes: int = 10 * 1024 * 1024, backups: int = 5, sync_s: float = 1.0
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size
        self._dirty = False
        self._stop = threading.Event()
        self._syncer = threading.Thread(
            target=self._sync_loop, args=(sync_s,), name="audit-sync", daemon=True
        )
        self._syncer.start()

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise InputError(f"cannot open audit log {self.path}: {exc.strerror or exc}") from exc
        os.fchmod(fd, 0o600)
        return fd

    def _rotate(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)
        for i in range(self.backups - 1, 0, -1):
            src = Path(f"{self.path}.{i}")
            if src.exists():
                os.replace(src, f"{self.path}.{i + 1}")
        if self.backups > 0:
            os.replace(self.path, f"{self.path}.1")
        else:
            os.unlink(self.path)
        self._fd = self._open()
        self._size = 0

    def write(self, **fields: Any) -> None:
        """Append one record (``time``, unix seconds, is added): one write(2), no fsync."""
        line = orjson.dumps({"time": round(time.time(), 6), **fields}, default=str) + b"\n"
        with self._lock:
            if self._size and self._size + len(line) > self.max_bytes:
                self._rotate()
            os.write(self._fd, line)
            self._size += len(line)
            self._dirty = True

    def sync(self) -> None:
        """fsync what was written so far (the background thread does this every ``sync_s``)."""
        with self._lock:
            if self._dirty and self._fd >= 0:
                os.fsync(self._fd)
                self._dirty = False

    def _sync_loop(self, period: float) -> None:
        while not self._stop.wait(period):
            try:
                self.sync()
            except OSError as exc:  # keep serving; say so
                _log.error("audit log %s: fsync failed (%s)", self.path, exc)

    def close(self) -> None:
        self._stop.set()
        self.sync()
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
