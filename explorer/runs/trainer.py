"""A trainer for app servers that share a Redis: ``python -m explorer.runs.trainer [--redis URL]``.

It takes the runs that servers started with ``TE_TRAINER=redis`` from the job queue
(:mod:`explorer.runs.trainer_queue`), one at a time, and trains each exactly as a local trainer process does
(:func:`explorer.runs.trainer_process.serve`), after checking each against this host's limits as a page does
(a job is data that anything reaching the Redis can write); start as many as the hosts have cores. The app
servers then only draw, and their runs train wherever the trainers are.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading

from explorer.runs.redis_url import key_prefix, redact
from explorer.runs.trainer_process import serve
from explorer.runs.trainer_queue import ALIVE_S, RedisPipe, connect, forget_job, job_keys, jobs_key, refresh_job

__all__ = ["main", "serve_jobs"]

IDLE_S = 600.0  # a job whose server sent nothing for this long was forgotten: the trainer takes the next
LOG = logging.getLogger("explorer.runs.trainer")


def _keep_alive(client, job: str, prefix: str, done: threading.Event) -> None:
    """Say the trainer is alive, and keep the job's lists, every second until ``done``."""
    alive = job_keys(job, prefix)[2]
    while not done.is_set():
        client.set(alive, os.getpid(), ex=ALIVE_S)
        refresh_job(client, job, prefix)
        done.wait(1.0)
    client.delete(alive)


def serve_jobs(url: str, *, jobs: int | None = None, prefix: str | None = None) -> None:
    """Serve jobs from the Redis at ``url`` (``jobs`` of them, or for ever), under ``prefix`` (the store's key
    prefix, ``TE_REDIS_PREFIX``, by default)."""
    prefix = key_prefix() if prefix is None else prefix
    client, beats = connect(url), connect(url)
    served = 0
    while jobs is None or served < jobs:
        popped = client.blpop([jobs_key(prefix)], timeout=10)
        if not popped:
            continue
        job = popped[1].decode()
        commands, news, _ = job_keys(job, prefix)
        done = threading.Event()
        beat = threading.Thread(target=_keep_alive, args=(beats, job, prefix, done), daemon=True)
        beat.start()
        LOG.info("serving run %s", job[:6])
        failed = False
        try:
            serve(RedisPipe(client, commands, news, patience_s=IDLE_S), checked=True)  # type: ignore[arg-type]
        except SystemExit:
            failed = True
            LOG.warning("run %s failed; its server was told", job[:6])
        finally:
            done.set()
            beat.join()
            # The run is over: its text goes with its lists (the news of a failure stay until they expire, so
            # that the server reads why).
            forget_job(client, job, prefix, news=not failed)
        served += 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", default=os.environ.get("TE_REDIS_URL", ""), help="the Redis the servers share "
                        "(default: TE_REDIS_URL)")
    parser.add_argument("--jobs", type=int, default=None, help="stop after this many runs (default: never)")
    parser.add_argument("--prefix", default=None, help="the servers' Redis key prefix (default: TE_REDIS_PREFIX, "
                        "else te:)")
    args = parser.parse_args(argv)
    if not args.redis:
        parser.error("give --redis URL or set TE_REDIS_URL")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s trainer %(process)d: %(message)s")
    try:
        serve_jobs(args.redis, jobs=args.jobs, prefix=args.prefix)
    except KeyboardInterrupt:
        return
    except Exception as err:  # noqa: BLE001 - said without the address's secrets, then the trainer ends
        parser.exit(1, redact(f"trainer: the Redis cannot be used: {type(err).__name__}: {err}\n", args.redis))


if __name__ == "__main__":
    main()
