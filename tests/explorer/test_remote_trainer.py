"""Trainers on other hosts: a run queued in Redis trains in `python -m explorer.runs.trainer`, pauses with its
weights back, and is lost with a message when its trainer is killed. Skipped where no redis-server can start."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.host import limits
from explorer.runs.live import RunSpec
from explorer.runs.place import default_place
from explorer.runs.trainer_link import RemoteLink
from explorer.runs.worker import InWorker, WorkerRun
from tests.redis_server import RedisServer, redis_or_skip
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    yield from redis_or_skip()


@pytest.fixture
def trainer(redis):
    """One trainer serving the Redis, as a host would run it."""
    proc = subprocess.Popen([sys.executable, "-m", "explorer.runs.trainer", "--redis", redis.url], cwd=ROOT)
    yield proc
    proc.kill()
    proc.wait()


def _run(url: str, steps: int) -> WorkerRun:
    task = get_task("reverse", seq_len=6)
    train = default_train_config(task, steps=steps, eval_every=10, snapshot_every=10)
    return WorkerRun(task, [RunSpec("A", task.default_model_config(), train)], connect=lambda: RemoteLink.start(url))


def _train_until(run: WorkerRun, step: int, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while run.status == "running" and run.step < step and time.monotonic() < deadline:
        run.advance(0.2)


@pytest.mark.slow
def test_a_run_trains_in_a_trainer_on_another_host(redis, trainer):
    run = _run(redis.url, steps=30)
    run.start()
    _train_until(run, 10)
    run.pause()
    assert run.status == "paused" and run.step >= 10 and run.trainer_pid is None
    run.start()
    _train_until(run, 30)
    assert run.status == "done" and run.step == 30 and len(run.trainers[0].history) == 30
    run.release("finished")


@pytest.mark.slow
def test_a_killed_remote_trainer_loses_its_run(redis, trainer):
    run = _run(redis.url, steps=limits().max_steps)  # long enough, and within what a trainer accepts
    run.start()
    _train_until(run, 3)
    trainer.kill()
    trainer.wait()
    _train_until(run, 10**6, limit_s=30.0)
    assert run.status == "stopped" and "stopped saying it is alive" in run.message


def test_te_trainer_redis_picks_remote_trainers(monkeypatch):
    monkeypatch.setenv("TE_TRAINER", "redis")
    place = default_place()
    assert isinstance(place, InWorker) and place.remote and place.overhead_bytes == 0  # this server holds none


@pytest.mark.slow
def test_a_paused_run_gives_its_remote_trainer_back_and_resumes_from_the_store(redis, trainer):
    """A paused run must not hold one of the few remote trainers: its state waits in the store (under the store's
    prefix), the trainer takes the next job, and Resume goes on at the same step in whichever trainer is free."""
    from explorer.runs.clients import Client
    from explorer.runs.line import RunLine
    from explorer.runs.redis_store import RedisStore
    from explorer.runs.registry import RunRegistry
    from explorer.runs.session import RunSession

    store = RedisStore(redis.url, prefix="class-a:")
    place = InWorker(remote=True)
    place_connect = lambda: RemoteLink.start(redis.url)  # noqa: E731 - the test's Redis, not TE_REDIS_URL
    task = get_task("reverse", seq_len=6)
    train = default_train_config(task, steps=60, eval_every=10, snapshot_every=10, seed=3)
    held = RunSession(Client("tab", browser="b"), max_running=lambda: 4, registry=RunRegistry(store=lambda: store),
                      line=RunLine(), store=lambda: store, place=place)
    held.adopt(WorkerRun(task, [RunSpec("A", task.default_model_config(), train)], connect=place_connect), "s")
    held.resume()
    _train_until(held.run, 12)
    held.pause()
    step = held.run.step
    assert held.run.status == "paused" and not held.run.holds_trainer  # given back at once
    keys = store._redis.keys("class-a:park:*")
    assert len(keys) == 1 and not store._redis.keys("te:park:*")
    other = _run(redis.url, steps=20)  # the one trainer is free for another server's run
    other.start()
    _train_until(other, 20)
    assert other.status == "done"
    other.release("finished")
    held.resume()
    _train_until(held.run, 60)
    assert held.run.status == "done" and [r["step"] for r in held.run.trainers[0].history] == list(range(1, 61))
    assert held.run.step > step and not store._redis.keys("class-a:park:*")
    held.run.release("finished")
    store.close()
