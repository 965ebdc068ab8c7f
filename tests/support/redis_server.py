"""A real redis-server on loopback for the tests (scripts/test installs it when it is missing)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .tls_upstream import issue_certificate


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_tls_files(folder: Path) -> tuple[Path, Path, Path]:
    """A CA of its own and a certificate it issued for 127.0.0.1, with that certificate's key: (ca, cert, key)."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Redis Test CA")])
    ca = issue_certificate("Redis Test CA", ca_key, ca_name, ca_key, ca=True)
    leaf = issue_certificate("127.0.0.1", key, ca_name, ca_key, ca=False)
    paths = folder / "redis-ca.pem", folder / "redis-cert.pem", folder / "redis-key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class RedisServer:
    """A redis-server on a port of its own; with `tls`, that port speaks only TLS, with a certificate from a CA
    of the test's own (`ca_file`), which nothing trusts unless told to."""

    def __init__(self, workdir: Path, password: str | None = None, *, tls: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: run scripts/test, which installs it (apt-get)")
        self.binary = binary
        self.workdir = workdir
        self.password = password
        self.port = free_port()
        self.tls_files = write_tls_files(workdir) if tls else None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def ca_file(self) -> Path:
        assert self.tls_files is not None, "a server started without tls has no CA"
        return self.tls_files[0]

    def url(self, db: int = 0, password: str | None = None) -> str:
        password = password if password is not None else self.password
        scheme = "rediss" if self.tls_files else "redis"
        return f"{scheme}://{f':{password}@' if password else ''}127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0) -> redis.Redis:
        tls = {"ssl": True, "ssl_ca_certs": str(self.ca_file)} if self.tls_files else {}
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, password=self.password, **tls)

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Starts (or restarts) the server on its port; nothing is persisted across restarts."""
        if self.tls_files:  # Debian's redis-server is built with TLS
            ca, cert, key = map(str, self.tls_files)
            ports = ["--port", "0", "--tls-port", str(self.port), "--tls-auth-clients", "no"]
            ports += ["--tls-ca-cert-file", ca, "--tls-cert-file", cert, "--tls-key-file", key]
        else:
            ports = ["--port", str(self.port)]
        self._process = subprocess.Popen(
            [
                self.binary,
                *ports,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                *(["--requirepass", self.password] if self.password else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with self.client() as probe:
                    probe.ping()
                return self
            except redis.ConnectionError:
                if self._process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self._process.returncode}") from None
                time.sleep(0.05)
        raise TimeoutError("redis-server did not answer")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)
        self._process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
