"""A throw-away certificate authority and serving certificate for the stand-in server.

kube-apiserver serves HTTPS only, and kubectl sends a bearer token only over TLS, so the
stand-in does the same: each server makes an ECDSA P-256 CA and a serving certificate
for ``127.0.0.1``, ``::1`` and ``localhost`` (valid one day) with the ``cryptography``
library, and hands the CA to clients in the kubeconfig (``certificate-authority-data``).
The key never leaves the process (or the private directory it is written to).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ServingCert", "make_serving_cert"]


@dataclass(frozen=True)
class ServingCert:
    """PEM bytes: the CA certificate clients trust, and the server's certificate chain and key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """A TLS server context with this certificate (TLS 1.2 or later)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="fluxlite-kube-tls-") as d:  # 0700, removed at once
            cert, key = Path(d, "tls.crt"), Path(d, "tls.key")
            cert.write_bytes(self.cert_pem)
            fd = os.open(key, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(self.key_pem)
            ctx.load_cert_chain(cert, key)
        return ctx

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``tls.crt`` and ``tls.key`` (mode 0600) into ``directory``; returns their paths."""
        cert, key = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert.write_bytes(self.cert_pem)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self.key_pem)
        return cert, key

    @classmethod
    def read(cls, cert: str | Path, key: str | Path) -> ServingCert:
        """Load a chain written by :meth:`write` (the CA is the chain's last certificate)."""
        chain = Path(cert).read_bytes()
        marker = b"-----BEGIN CERTIFICATE-----"
        ca = marker + chain.split(marker)[-1]
        return cls(ca_pem=ca, cert_pem=chain, key_pem=Path(key).read_bytes())


def make_serving_cert() -> ServingCert:
    """A fresh CA and a loopback serving certificate signed by it (about 5 ms)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fluxlite-testing-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1"))]  # fmt: skip
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_pem = ca.public_bytes(pem)
    return ServingCert(
        ca_pem=ca_pem,
        cert_pem=cert.public_bytes(pem) + ca_pem,
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
