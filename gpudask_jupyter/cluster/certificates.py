"""Fresh credentials for one cluster: a self-signed certificate that is its own CA.

Like ``distributed.Security.temporary()`` (one certificate for every role, the same name, mutual
authentication), but with an elliptic-curve key (P-256) instead of 2048-bit RSA: the key is
made at once where an RSA key takes a noticeable part of a start, and every TLS handshake between
the client, the scheduler, the nannies and the workers is cheaper too, which is most of what TLS
adds to a start. The key exists in memory and, for the user's own Jupyter server, in the owner-only
registry folder (:func:`..registry.write_tls`).
"""

from __future__ import annotations

import datetime
from typing import Any

#: the name distributed's own temporary certificates carry
NAME = "dask-internal"
VALID = datetime.timedelta(days=365)


def fresh_pem() -> dict[str, str]:
    """PEM text by role: ``ca`` (the certificate itself), ``cert`` and ``key``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)])
    now = datetime.datetime.now(tz=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {"ca": cert_pem, "cert": cert_pem, "key": key_pem}


def security_of(pem: dict[str, str]) -> Any:
    """The ``distributed.Security`` that uses ``pem`` for every role, encryption required, its
    SSL contexts made once per process (:mod:`.tls_contexts`)."""
    # lazy: it imports distributed, which a kernel that never starts a cluster does not need
    from .tls_contexts import ClusterSecurity

    return ClusterSecurity(
        require_encryption=True,
        tls_ca_file=pem["ca"],
        tls_client_key=pem["key"],
        tls_client_cert=pem["cert"],
        tls_scheduler_key=pem["key"],
        tls_scheduler_cert=pem["cert"],
        tls_worker_key=pem["key"],
        tls_worker_cert=pem["cert"],
    )
