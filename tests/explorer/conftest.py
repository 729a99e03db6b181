"""The explorer tests use tiny models: one intra-op thread is as fast, and much faster on a busy machine.

The run-store tests get a real Redis from :mod:`tests.redis_server` (skipped where none can start). The fixtures
``gpt2`` and ``bert`` are small random-initialised pretrained folders: ``(transformers model, loaded model)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from tests.redis_server import RedisServer, redis_or_skip
from transformer_core.pretrained import load_pretrained

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a free port for the whole session (skipped, with the reason, where none starts)."""
    yield from redis_or_skip()


@pytest.fixture
def own_redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test's own, which it may stop and start again."""
    yield from redis_or_skip()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied for this test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture
def redis_pair(redis_url: str) -> Iterator[tuple]:
    """The stores of two app servers on the session's Redis (emptied for this test)."""
    from explorer.runs.redis_store import RedisStore

    first, second = RedisStore(redis_url), RedisStore(redis_url)
    yield first, second
    first.close()
    second.close()



@pytest.fixture(scope="module", name="gpt2")
def gpt2_fixture(tmp_path_factory):
    from tests.pretrained.hf_folders import gpt2_folder  # imports transformers: only for the tests that need it

    folder = tmp_path_factory.mktemp("gpt2")
    return gpt2_folder(folder, layers=2, heads=4, width=16), load_pretrained(folder)


@pytest.fixture(scope="module", name="bert")
def bert_fixture(tmp_path_factory):
    from tests.pretrained.hf_folders import bert_folder, mark_special_tokens

    folder = tmp_path_factory.mktemp("bert")
    hf = bert_folder(folder, layers=2, heads=2)
    mark_special_tokens(folder)
    return hf, load_pretrained(folder)
