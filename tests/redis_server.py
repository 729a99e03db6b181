"""A real ``redis-server`` for tests: started on a free loopback port, nothing saved to disk, stopped afterwards.

:func:`start_redis` returns a running :class:`RedisServer`, or raises :class:`RedisMissing` with the reason the
tests are skipped (no ``redis-server`` on the PATH, no ``redis`` package, or the server would not start);
fixtures ``yield from`` :func:`redis_or_skip`. Only that function needs pytest, so benchmarks import this module.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 20.0


class RedisMissing(RuntimeError):
    """Why no Redis can be started here (the message is the skip reason)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One ``redis-server`` process on ``port`` (see :func:`start_redis`); :meth:`stop` ends it, :meth:`start`
    starts it again on the same port, empty."""

    def __init__(self, binary: str, port: int) -> None:
        self.binary, self.port = binary, port
        self.url = f"redis://127.0.0.1:{port}/0"
        self._dir = tempfile.TemporaryDirectory(prefix="te-redis-")
        self._proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        log = Path(self._dir.name) / "redis.log"
        self._proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self._dir.name, "--logfile", str(log), "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                text = log.read_text(errors="replace")[-500:] if log.exists() else ""
                raise RedisMissing(f"redis-server exited with code {self._proc.returncode}: {text}")
            if self.ping():
                return
            time.sleep(0.05)
        self.stop()
        raise RedisMissing(f"redis-server did not answer within {START_TIMEOUT_S:.0f} s")

    def ping(self) -> bool:
        """Whether the server answers PING now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it lingers)."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def close(self) -> None:
        """Stop the server and remove its folder."""
        self.stop()
        self._dir.cleanup()


def start_redis() -> RedisServer:
    """A running ``redis-server`` on a free port; :class:`RedisMissing` says why there can be none."""
    try:
        import redis  # noqa: F401  (the store's client; without it there is nothing to test)
    except ImportError as err:
        raise RedisMissing("the redis package is not installed (pip install -r requirements.txt)") from err
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisMissing("redis-server not found (apt-get install redis-server; ./test.sh installs it as root)")
    server = RedisServer(binary, free_port())
    try:
        server.start()
    except (RedisMissing, OSError) as err:
        server.close()
        raise RedisMissing(f"redis-server would not start: {err}") from err
    return server


def redis_or_skip() -> Iterator[RedisServer]:
    """For a fixture to ``yield from``: a running server, closed afterwards; the test is skipped, with the reason,
    where none can start."""
    import pytest

    try:
        server = start_redis()
    except RedisMissing as err:
        pytest.skip(str(err))
    yield server
    server.close()
