"""A local EC2-compatible endpoint for tests, benchmarks and the walkthrough: moto's server on loopback.

Nothing here talks to AWS: the server binds 127.0.0.1 only, and clients
get dummy credentials.  moto keeps one set of resources per account; it
tells accounts apart by the access key of each request, once that key was
created through IAM in that account.  :func:`account_credentials` does
exactly that, so two provider configs with two key pairs are two cloud
accounts that cannot see each other's instances - as with real EC2.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["MotoServer", "account_credentials", "moto_server"]

#: Credentials for calls that only need *some* account (moto's default one).
DUMMY_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAFLUXLITETEST0001",
    "AWS_SECRET_ACCESS_KEY": "fluxlite-local-moto-only",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class MotoServer:
    """moto's threaded server on 127.0.0.1 (a free port unless one is given)."""

    def __init__(self, port: int = 0) -> None:
        import logging

        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request otherwise
        self._srv = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.url = ""

    def start(self) -> MotoServer:
        self._srv.start()
        host, port = self._srv.get_host_and_port()
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._srv.stop()


@contextlib.contextmanager
def moto_server(port: int = 0) -> Iterator[MotoServer]:
    """A running local moto server; dummy credentials in the environment meanwhile (restored after)."""
    old = {k: os.environ.get(k) for k in DUMMY_ENV}
    for k, v in DUMMY_ENV.items():
        os.environ.setdefault(k, v)
    srv = MotoServer(port).start()
    try:
        yield srv
    finally:
        srv.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def account_credentials(url: str, account_id: str, user: str = "fluxlite") -> dict[str, str]:
    """A new access key pair of ``account_id`` on the moto server at ``url`` (its IAM, that account)."""
    import boto3

    iam = boto3.client(
        "iam",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=DUMMY_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=DUMMY_ENV["AWS_SECRET_ACCESS_KEY"],
    )

    def to_account(request: Any, **kw: Any) -> None:
        request.headers["x-moto-account-id"] = account_id

    iam.meta.events.register("before-sign.iam.*", to_account)
    with contextlib.suppress(iam.exceptions.EntityAlreadyExistsException):
        iam.create_user(UserName=user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
