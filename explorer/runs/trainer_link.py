"""The web server's end of a trainer process: start it, send it commands, read its news, end it.

Trainers start from a ``forkserver`` (:func:`context`) that imports :mod:`explorer.runs.trainer_process`, and torch
with it, once: each trainer is a fork of that single-threaded process, so it starts in a fraction of a second,
shares torch's pages with its siblings, and the threaded web server itself is never forked. Messages are those of
:mod:`explorer.runs.wire`; each command gets a number, and the trainer's news names the last one it answered
(:attr:`TrainerLink.answered`). :class:`RemoteLink` reaches a trainer on another host through Redis instead.

A trainer never runs the web server's ``__main__``: multiprocessing would have each new process import the main
module first, and under Streamlit that is the page script being run (Streamlit swaps it in as ``__main__``), so
every trainer would run a whole page, headless, before its first step. :class:`_TrainerPopen` leaves it out.
"""

from __future__ import annotations

import contextlib
import io
import logging
import multiprocessing
import os
import threading
import time
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext, ForkServerProcess, set_spawning_popen
from typing import Any

from explorer.heap import LAZY_MODULES
from explorer.runs.redis_url import redact
from explorer.runs.wire import pack, unpack

__all__ = ["RemoteLink", "TrainerLink", "TrainerLost", "context", "mark_unavailable", "unavailable", "warm"]

QUIT_WAIT_S = 2.0  # a trainer told to quit gets this long before it is killed
LOG = logging.getLogger(__name__)
_CONTEXT: BaseContext | None = None
_CONTEXT_LOCK = threading.Lock()
_WARMING: threading.Thread | None = None
_UNAVAILABLE: list[str] = []  # why trainer processes cannot start on this host, once one failed to


class TrainerLost(RuntimeError):
    """The trainer process is gone (crashed, killed, or its pipe broke); the message says how."""


def context() -> BaseContext:
    """The ``forkserver`` context trainers start from; its server imports torch once, on the first trainer."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            ctx = multiprocessing.get_context("forkserver")
            # torch._dynamo too: PyTorch imports it on a trainer's first optimiser step (2.5 s of CPU and 70 MB
            # each); imported once in the fork server, every trainer starts with it (see explorer/heap.py)
            ctx.set_forkserver_preload(["explorer.runs.trainer_process", *LAZY_MODULES])
            _CONTEXT = ctx
        return _CONTEXT


class _TrainerPopen(popen_forkserver.Popen):
    """The fork server's ``Popen`` without the parent's ``__main__`` in what the child prepares from (see the module
    docstring); otherwise the standard library's ``_launch``."""

    def _launch(self, process_obj: Any) -> None:
        prep_data = {k: v for k, v in spawn.get_preparation_data(process_obj._name).items()
                     if k not in ("init_main_from_path", "init_main_from_name")}
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        parent_w = os.dup(w)  # the child's sentinel of this process, as in the standard library
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _TrainerProcess(ForkServerProcess):
    """A fork server's process started by :class:`_TrainerPopen`."""

    @staticmethod
    def _Popen(process_obj: Any) -> _TrainerPopen:  # noqa: N802 - the standard library's name
        return _TrainerPopen(process_obj)


def unavailable() -> str | None:
    """Why trainer processes cannot start here (no ``forkserver`` on this platform, or one failed to start), or
    ``None`` while they can."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "this platform cannot start processes from a fork server"
    return _UNAVAILABLE[0] if _UNAVAILABLE else None


def mark_unavailable(reason: str) -> None:
    """Note that a trainer process could not start, and why: runs then train on the web server's threads."""
    if not _UNAVAILABLE:
        _UNAVAILABLE.append(reason)
        LOG.warning("trainer processes cannot start here (%s): runs train on the web server's threads", reason)


def warm() -> None:
    """Start the fork server in the background, once, so that the first Start does not wait for torch's import
    (a few seconds on a busy small host); called when a page that trains runs opens."""
    global _WARMING
    with _CONTEXT_LOCK:
        if _WARMING is not None:
            return
        _WARMING = threading.Thread(target=_start_fork_server, name="trainer-fork-server", daemon=True)
    _WARMING.start()


def _start_fork_server() -> None:
    context()
    try:
        forkserver.ensure_running()  # holds its own lock: a trainer started meanwhile waits for this one
    except Exception as err:  # noqa: BLE001 - any failure means no trainer processes on this host
        mark_unavailable(f"the trainers' fork server did not start: {type(err).__name__}: {err}")


class TrainerLink:
    """One trainer process and the pipe to it (use :meth:`start`)."""

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process, self.conn = process, conn
        self.pid: int | None = process.pid if process is not None else None
        self.sent = 0  # number of the last command sent
        self.answered = 0  # number of the last command the trainer answered
        self._closed = False

    @classmethod
    def start(cls) -> TrainerLink:
        """A new trainer process, ready for its ``create`` command."""
        from explorer.runs.trainer_process import serve

        ctx = context()
        mine, theirs = ctx.Pipe(duplex=True)
        process = _TrainerProcess(target=serve, args=(theirs,), name="trainer", daemon=True)
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


class RemoteLink(TrainerLink):
    """A trainer on another host, reached through Redis (:mod:`explorer.runs.trainer_queue`); use :meth:`start`."""

    def __init__(self, client: Any, job: str, prefix: str | None = None) -> None:
        from explorer.runs.redis_url import key_prefix
        from explorer.runs.trainer_queue import RedisPipe, job_keys

        self.prefix = key_prefix() if prefix is None else prefix
        commands, news, self._alive = job_keys(job, self.prefix)
        super().__init__(None, RedisPipe(client, news, commands))  # type: ignore[arg-type]
        self.client, self.job = client, job
        self._queued = time.monotonic()
        self._taken = False

    @classmethod
    def start(cls, url: str | None = None) -> RemoteLink:  # type: ignore[override]
        """Queue a job for the trainers serving the Redis at ``url`` (``TE_REDIS_URL`` by default)."""
        from explorer.runs.redis_url import key_prefix
        from explorer.runs.trainer_queue import connect, new_job

        url = url or os.environ.get("TE_REDIS_URL", "")
        try:  # connecting parses the address: its errors may quote a piece of the password
            client = connect(url)
            return cls(client, new_job(client, key_prefix()), key_prefix())
        except Exception as err:  # noqa: BLE001 - any Redis failure means no trainer for this run
            failure = type(err).__name__  # raised below, outside this block: no chained error carries the text
        raise TrainerLost(redact(f"the trainers' Redis cannot be reached ({failure})", url))

    def send(self, header: dict[str, Any], parts: list[bytes] | None = None) -> int:
        try:
            return super().send(header, parts)
        except Exception as err:  # noqa: BLE001 - a Redis failure loses the run, with a message
            raise self._lost(err) from err

    def receive(self, timeout: float) -> tuple[dict[str, Any], list[bytes]] | None:
        from explorer.runs.trainer_queue import TAKE_S

        try:
            message = super().receive(timeout)
            if message is None:
                if self.client.exists(self._alive):
                    self._taken = True
                elif self._taken:
                    raise TrainerLost(f"the trainer of run {self.job[:6]} stopped saying it is alive")
                elif time.monotonic() - self._queued > TAKE_S:
                    self._forget()
                    raise TrainerLost(f"no trainer took the run within {TAKE_S:.0f} s: start "
                                      "`python -m explorer.runs.trainer` on a host that reaches the Redis")
            return message
        except TrainerLost:
            raise
        except Exception as err:  # noqa: BLE001
            raise self._lost(err) from err

    def _lost(self, err: Exception) -> TrainerLost:
        return TrainerLost(f"the trainer of run {self.job[:6]}: {type(err).__name__}")

    def _forget(self) -> None:
        """A job still in the queue leaves it, and its lists (the run's text with them) are deleted; a job that a
        trainer took is left to it (it reads the quit and deletes them)."""
        from explorer.runs.trainer_queue import forget_job, jobs_key

        with contextlib.suppress(Exception):
            if self.client.lrem(jobs_key(self.prefix), 0, self.job):
                forget_job(self.client, self.job, self.prefix)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.conn.send_bytes(pack({"op": "quit", "seq": self.sent + 1}))
        self._forget()
