"""Trainers on other hosts: a trainer's pipe carried by Redis, and the queue of runs waiting for a trainer.

With ``TE_TRAINER=redis`` (and ``TE_REDIS_URL``) the app starts no trainer itself. A run that needs one is a *job*:
its id goes onto the list :data:`JOBS`, and whichever trainer (``python -m explorer.runs.trainer``, on any host
that reaches the Redis) pops it first serves it until told to quit, then takes the next. The job's commands and
news are the same messages as on a local pipe (:mod:`explorer.runs.wire`), carried by two Redis lists
(:class:`RedisPipe`); while it serves a job the trainer refreshes the job's *alive* key every second, and a job
whose key expires (its trainer crashed, was killed or lost the network) is lost with a message, as a local
trainer's would be.

Every key lives under the run store's prefix (:func:`~explorer.runs.redis_url.key_prefix`), so servers and
trainers of another deployment sharing the Redis never take these jobs. A job's lists carry the run's description
(a student's own text included) and its news (samples of that text): they live only as long as the run needs them.
Each list expires :data:`KEEP_S` seconds after it was last written or refreshed; the trainer refreshes them while it
serves the job, and deletes them when the job ends; a job that no trainer took is taken off the queue, its lists
deleted, by the server that gives up on it (:func:`forget_job`).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from explorer.runs.redis_url import key_prefix

__all__ = ["ALIVE_S", "KEEP_S", "TAKE_S", "RedisPipe", "connect", "forget_job", "job_keys", "jobs_key", "new_job",
           "refresh_job"]

ALIVE_S = 5  # a trainer that has not said it is alive for this long is gone
TAKE_S = 60.0  # a job no trainer took within this long is lost ("no trainer is serving")
KEEP_S = int(2 * TAKE_S)  # a job's lists expire this long after their last write or refresh (longer than TAKE_S)


def jobs_key(prefix: str | None = None) -> str:
    """The list of job ids waiting for a trainer, oldest first, under ``prefix`` (the store's by default)."""
    return f"{key_prefix() if prefix is None else prefix}trainers:jobs"


def connect(url: str) -> Any:
    """A Redis client for trainers (its reads may block for up to a few seconds)."""
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)


def job_keys(job: str, prefix: str | None = None) -> tuple[str, str, str]:
    """The job's keys under ``prefix`` (the store's by default): commands to the trainer, news from it, and the
    trainer's alive mark."""
    base = f"{key_prefix() if prefix is None else prefix}trainers:{job}"
    return f"{base}:commands", f"{base}:news", f"{base}:alive"


def new_job(client: Any, prefix: str | None = None) -> str:
    """Queue a new job for the next free trainer; returns its id."""
    job = secrets.token_urlsafe(16)
    client.rpush(jobs_key(prefix), job)
    return job


def refresh_job(client: Any, job: str, prefix: str | None = None) -> None:
    """Keep the job's lists for another :data:`KEEP_S` seconds (its trainer does so while it serves the job)."""
    commands, news, _ = job_keys(job, prefix)
    pipe = client.pipeline()
    pipe.expire(commands, KEEP_S)
    pipe.expire(news, KEEP_S)
    pipe.execute()


def forget_job(client: Any, job: str, prefix: str | None = None, *, news: bool = True) -> None:
    """Take the job off the queue and delete its lists (with them the run's text); ``news=False`` keeps its news
    list until it expires, for a server that has yet to read why the job failed."""
    commands, news_key, alive = job_keys(job, prefix)
    pipe = client.pipeline()
    pipe.lrem(jobs_key(prefix), 0, job)
    pipe.delete(commands, alive, *([news_key] if news else []))
    pipe.execute()


class RedisPipe:
    """One end of a trainer's pipe over two Redis lists (``poll``, ``recv_bytes``, ``send_bytes``, ``close``, as
    :class:`multiprocessing.connection.Connection` has them); ``patience_s``: how long ``recv_bytes`` waits before
    it says the other end is gone."""

    def __init__(self, client: Any, inbox: str, outbox: str, *, patience_s: float | None = None) -> None:
        self.client, self.inbox, self.outbox, self.patience_s = client, inbox, outbox, patience_s
        self._held: bytes | None = None

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message waits (waiting up to ``timeout`` seconds for one)."""
        if self._held is None:
            if timeout:
                popped = self.client.blpop([self.inbox], timeout=max(0.01, min(timeout, 10.0)))
                self._held = popped[1] if popped else None
            else:
                self._held = self.client.lpop(self.inbox)
        return self._held is not None

    def recv_bytes(self) -> bytes:
        """The next message; ``EOFError`` when none came for ``patience_s`` seconds."""
        waited = time.monotonic()
        while not self.poll(1.0):
            if self.patience_s is not None and time.monotonic() - waited > self.patience_s:
                raise EOFError("no message from the other end")
        message, self._held = self._held, None
        return message

    def send_bytes(self, data: bytes) -> None:
        pipe = self.client.pipeline()
        pipe.rpush(self.outbox, data)
        pipe.expire(self.outbox, KEEP_S)
        pipe.execute()

    def close(self) -> None:
        """Nothing to close: the lists expire by themselves."""
