"""The web server's end of a trainer process: start it, send it commands, read its news, end it.

Trainers start from a ``forkserver`` (:func:`context`) that imports :mod:`explorer.runs.trainer_process`, and torch
with it, once: each trainer is a fork of that single-threaded process, so it starts in a fraction of a second,
shares torch's pages with its siblings, and the threaded web server itself is never forked. Messages are those of
:mod:`explorer.runs.wire`; each command gets a number, and the trainer's news names the last one it answered
(:attr:`TrainerLink.answered`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import Any

from explorer.runs.wire import pack, unpack

__all__ = ["TrainerLink", "TrainerLost", "context"]

QUIT_WAIT_S = 2.0  # a trainer told to quit gets this long before it is killed
_CONTEXT: BaseContext | None = None
_CONTEXT_LOCK = threading.Lock()


class TrainerLost(RuntimeError):
    """The trainer process is gone (crashed, killed, or its pipe broke); the message says how."""


def context() -> BaseContext:
    """The ``forkserver`` context trainers start from; its server imports torch once, on the first trainer."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["explorer.runs.trainer_process"])
            _CONTEXT = ctx
        return _CONTEXT


class TrainerLink:
    """One trainer process and the pipe to it (use :meth:`start`)."""

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process, self.conn = process, conn
        self.pid: int | None = process.pid
        self.sent = 0  # number of the last command sent
        self.answered = 0  # number of the last command the trainer answered
        self._closed = False

    @classmethod
    def start(cls) -> TrainerLink:
        """A new trainer process, ready for its ``create`` command."""
        from explorer.runs.trainer_process import serve

        ctx = context()
        mine, theirs = ctx.Pipe(duplex=True)
        process = ctx.Process(target=serve, args=(theirs,), name="trainer", daemon=True)
        process.start()
        theirs.close()
        return cls(process, mine)

    def send(self, header: dict[str, Any], parts: list[bytes] | None = None) -> int:
        """Send a command; returns its number. :class:`TrainerLost` when the trainer is gone."""
        self.sent += 1
        try:
            self.conn.send_bytes(pack({**header, "seq": self.sent}, parts or []))
        except (OSError, ValueError) as err:
            raise self._lost(err) from err
        return self.sent

    def receive(self, timeout: float) -> tuple[dict[str, Any], list[bytes]] | None:
        """The next message within ``timeout`` seconds, or ``None``. :class:`TrainerLost` when the trainer is gone."""
        try:
            if not self.conn.poll(timeout):
                return None
            header, parts = unpack(self.conn.recv_bytes())
        except (EOFError, OSError, ValueError) as err:
            raise self._lost(err) from err
        if header.get("ack") is not None:
            self.answered = max(self.answered, int(header["ack"]))
        return header, parts

    def _lost(self, err: Exception) -> TrainerLost:
        self.process.join(timeout=1.0)
        code = self.process.exitcode
        how = f"exit code {code}" if code is not None else type(err).__name__
        return TrainerLost(f"trainer process {self.pid}: {how}")

    def close(self) -> None:
        """Tell the trainer to quit, and make sure it does (idempotent)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError):
            self.conn.send_bytes(pack({"op": "quit", "seq": self.sent + 1}))
        self.conn.close()
        self.process.join(timeout=QUIT_WAIT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=QUIT_WAIT_S)
