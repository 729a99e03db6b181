"""A trainer for app servers that share a Redis: ``python -m explorer.runs.trainer [--redis URL]``.

It takes the runs that servers started with ``TE_TRAINER=redis`` from the job queue
(:mod:`explorer.runs.trainer_queue`), one at a time, and trains each exactly as a local trainer process does
(:func:`explorer.runs.trainer_process.serve`); start as many as the hosts have cores. The app servers then only
draw, and their runs train wherever the trainers are.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading

from explorer.runs.trainer_process import serve
from explorer.runs.trainer_queue import ALIVE_S, JOBS, RedisPipe, connect, job_keys

__all__ = ["main", "serve_jobs"]

IDLE_S = 600.0  # a job whose server sent nothing for this long was forgotten: the trainer takes the next
LOG = logging.getLogger("explorer.runs.trainer")


def _keep_alive(client, key: str, done: threading.Event) -> None:
    while not done.is_set():
        client.set(key, os.getpid(), ex=ALIVE_S)
        done.wait(1.0)
    client.delete(key)


def serve_jobs(url: str, *, jobs: int | None = None) -> None:
    """Serve jobs from the Redis at ``url`` (``jobs`` of them, or for ever)."""
    client, beats = connect(url), connect(url)
    served = 0
    while jobs is None or served < jobs:
        popped = client.blpop([JOBS], timeout=10)
        if not popped:
            continue
        job = popped[1].decode()
        commands, news, alive = job_keys(job)
        done = threading.Event()
        beat = threading.Thread(target=_keep_alive, args=(beats, alive, done), daemon=True)
        beat.start()
        LOG.info("serving run %s", job[:6])
        try:
            serve(RedisPipe(client, commands, news, patience_s=IDLE_S))  # type: ignore[arg-type]
        except SystemExit:
            LOG.warning("run %s failed; its server was told", job[:6])
        finally:
            done.set()
            beat.join()
        served += 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", default=os.environ.get("TE_REDIS_URL", ""), help="the Redis the servers share "
                        "(default: TE_REDIS_URL)")
    parser.add_argument("--jobs", type=int, default=None, help="stop after this many runs (default: never)")
    args = parser.parse_args(argv)
    if not args.redis:
        parser.error("give --redis URL or set TE_REDIS_URL")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s trainer %(process)d: %(message)s")
    serve_jobs(args.redis, jobs=args.jobs)


if __name__ == "__main__":
    main()
