"""An HTTPS upstream whose certificate comes from a CA of its own, as behind a TLS-intercepting corporate proxy."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ANSWER = b'{"id": "chatcmpl-corporate", "choices": []}'


def issue_certificate(
    subject: str, key, issuer: x509.Name, issuer_key, *, ca: bool, hosts: Sequence[str] = ()
) -> x509.Certificate:
    """A certificate for 127.0.0.1, localhost and `hosts` (a CA's, with `ca`)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        # Python 3.13's default context checks certificates strictly (VERIFY_X509_STRICT): a key identifier each.
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:
        names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        names += [x509.DNSName(host) for host in hosts]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class _Answer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args: object) -> None:
        pass


def server_context(folder: Path, hosts: Sequence[str] = ()) -> tuple[ssl.SSLContext, Path]:
    """A TLS server context for 127.0.0.1 (and `hosts`) whose certificate a CA of its own issued, and that CA's PEM
    file."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Corporate Inspection CA")])
    ca = issue_certificate("Corporate Inspection CA", ca_key, ca_name, ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = issue_certificate("127.0.0.1", key, ca_name, ca_key, ca=False, hosts=hosts)
    ca_file = folder / "corporate-ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    chain = folder / "upstream.pem"
    chain.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + leaf.public_bytes(serialization.Encoding.PEM)
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(chain)
    return context, ca_file


class TLSUpstream:
    """Serves ANSWER over HTTPS on loopback; `ca_file` is the PEM of the CA that issued its certificate."""

    def __init__(self, folder: Path) -> None:
        context, self.ca_file = server_context(folder)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> TLSUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
