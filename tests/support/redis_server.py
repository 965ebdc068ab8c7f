"""A real redis-server on loopback for the tests (scripts/test installs it when it is missing)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    def __init__(self, workdir: Path, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: run scripts/test, which installs it (apt-get)")
        self.binary = binary
        self.workdir = workdir
        self.password = password
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0, password: str | None = None) -> str:
        password = password if password is not None else self.password
        return f"redis://{f':{password}@' if password else ''}127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, password=self.password)

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Starts (or restarts) the server on its port; nothing is persisted across restarts."""
        self._process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
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
