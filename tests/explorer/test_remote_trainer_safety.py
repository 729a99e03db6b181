"""Remote trainers as safe as local ones: a job beyond the host's limits is refused before anything is built, a
student's text leaves Redis with its run, and every key lives under the store's prefix. Skipped where no
redis-server can start."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from explorer.runs.live import RunSpec
from explorer.runs.trainer_link import RemoteLink
from explorer.runs.trainer_queue import KEEP_S, RedisPipe, connect, job_keys, jobs_key, new_job
from explorer.runs.wire import describe_run, pack, unpack, weights_bytes
from explorer.runs.worker import WorkerRun
from tests.explorer.test_remote_trainer import ROOT, _train_until
from tests.redis_server import RedisServer, redis_or_skip
from transformer_core.tasks import get_task
from transformer_core.tasks.language import CharLMTask
from transformer_core.training import default_train_config

SECRET = "my secret diary line that nobody else may read\n" * 20
PREFIX = "class7:"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    yield from redis_or_skip()


@pytest.fixture
def trainer(redis, monkeypatch):
    """One trainer serving the Redis under the test's key prefix, as a host would run it."""
    monkeypatch.setenv("TE_REDIS_PREFIX", PREFIX)
    proc = subprocess.Popen([sys.executable, "-m", "explorer.runs.trainer", "--redis", redis.url], cwd=ROOT)
    yield proc
    proc.kill()
    proc.wait()


def _answer(pipe: RedisPipe, limit_s: float = 60.0) -> dict:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if pipe.poll(1.0):
            return unpack(pipe.recv_bytes())[0]
    raise AssertionError("the trainer did not answer")


@pytest.mark.parametrize("change", [{"model": {"d_model": 65536, "n_heads": 4}}, {"training": {"batch_size": 10**6}}])
def test_a_job_beyond_the_hosts_limits_is_refused_before_anything_is_built(redis, trainer, change) -> None:
    client = connect(redis.url)
    task = get_task("reverse", seq_len=6)
    described = describe_run(task, [RunSpec("A", task.default_model_config(), default_train_config(task, steps=20))],
                             None)
    spec = described["specs"][0]
    for part, values in change.items():
        spec[part] = {**spec[part], **values}
    job = new_job(client, PREFIX)
    commands, news, _ = job_keys(job, PREFIX)
    pipe = RedisPipe(client, news, commands)
    pipe.send_bytes(pack({"op": "create", "seq": 1, "nice": 0, "run": described}, [b"not weights"]))
    answer = _answer(pipe)
    assert answer["kind"] == "failed" and "refuses the run" in answer["message"]
    assert ("d_model 65,536" in answer["message"]) or ("batch of 1,000,000" in answer["message"])
    assert trainer.poll() is None  # the trainer itself goes on, for the next job


def _own_text_run(url: str) -> WorkerRun:
    task = CharLMTask(SECRET, block_size=16, eval_windows=8)
    config = replace(task.default_model_config(), d_model=16, n_heads=2, d_ff=32, n_layers=1)
    train = default_train_config(task, steps=400, batch_size=4, eval_every=10, snapshot_every=10)
    return WorkerRun(task, [RunSpec("A", config, train)], connect=lambda: RemoteLink.start(url))


def _keys_holding(client, text: bytes) -> list[bytes]:
    found = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        values = client.lrange(key, 0, -1) if kind == b"list" else [client.get(key)] if kind == b"string" else []
        if any(v and text in v for v in values):
            found.append(key)
    return found


@pytest.mark.slow
def test_a_students_text_leaves_redis_with_its_run_and_lives_under_the_stores_prefix(redis, trainer, monkeypatch):
    monkeypatch.setenv("TE_REDIS_PREFIX", PREFIX)
    client = connect(redis.url)
    run = _own_text_run(redis.url)
    run.start()
    _train_until(run, 10)
    assert run.step >= 10
    assert all(key.startswith(PREFIX.encode()) for key in client.scan_iter(count=1000))  # nothing outside it
    for key in client.scan_iter(match=f"{PREFIX}trainers:*", count=1000):  # whatever waits expires soon
        assert client.type(key) != b"list" or 0 < client.ttl(key) <= KEEP_S
    run.release("finished")
    deadline = time.monotonic() + 30
    while _keys_holding(client, b"secret diary") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _keys_holding(client, b"secret diary") == []  # gone with the run, not an hour later
    assert client.llen(jobs_key(PREFIX)) == 0


def test_a_job_no_trainer_takes_leaves_the_queue_with_its_text(redis, monkeypatch) -> None:
    monkeypatch.setenv("TE_REDIS_PREFIX", PREFIX)
    client = connect(redis.url)
    link = RemoteLink.start(redis.url)
    task = CharLMTask(SECRET, block_size=16)
    link.send({"op": "create", "nice": 0, "run": describe_run(task, [], SECRET)}, [weights_bytes(torch_module())])
    assert _keys_holding(client, b"secret diary") and client.llen(jobs_key(PREFIX)) == 1
    assert client.llen(jobs_key("te:")) == 0  # another prefix's trainers never see it
    link.close()  # the run ended before any trainer took it
    assert _keys_holding(client, b"secret diary") == [] and client.llen(jobs_key(PREFIX)) == 0


def torch_module():
    import torch

    return torch.nn.Linear(2, 2)



def test_a_header_longer_than_max_header_is_refused_before_it_is_parsed(monkeypatch) -> None:
    import struct

    from explorer.runs import wire

    monkeypatch.setattr(wire, "MAX_HEADER", 1000)
    message = pack({"op": "create", "text": "x" * 900})
    assert unpack(message)[0]["op"] == "create"
    with pytest.raises(ValueError, match="header"):
        pack({"op": "create", "text": "x" * 2000})
    long = b'{"op": "create", "text": "' + b"x" * 2000 + b'"}'
    with pytest.raises(ValueError, match="at most 1,000"):
        unpack(struct.pack(">I", len(long)) + long)
    with pytest.raises(ValueError, match="cut short"):  # a part that claims more bytes than the message holds
        unpack(pack({"op": "x"}) + struct.pack(">Q", 10**9) + b"abc")


@pytest.mark.parametrize("password", ["pa55#w0rdZ", "pa55/w0rdZ", "pa55@w0rdZ"])
def test_a_trainer_link_never_shows_a_piece_of_the_redis_password(password) -> None:
    from explorer.runs.trainer_link import TrainerLost

    url = f"redis://:{password}@127.0.0.1:1/0"
    with pytest.raises(TrainerLost) as caught:
        RemoteLink.start(url)
    shown = str(caught.value) + repr(caught.value.__cause__) + repr(caught.value.__context__)
    assert "pa55" not in shown and "w0rdZ" not in shown
    done = subprocess.run([sys.executable, "-m", "explorer.runs.trainer", "--redis", url, "--jobs", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "pa55" not in done.stderr + done.stdout and "w0rdZ" not in done.stderr
