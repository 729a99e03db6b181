"""Scale-out: two app servers and two trainer processes share one Redis. A run started on one server trains in a
trainer (not in either server) and is watched, to its end, from the other server. Skipped where no redis-server
can start."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import metric
from tests.e2e.conftest import REPO_ROOT, serve_app, wait_for_app
from tests.e2e.test_redis_watch import tab
from tests.e2e.test_trainer_process import trainers
from tests.redis_server import RedisServer, redis_or_skip

pytestmark = pytest.mark.browser
RUN = "/training?task=reverse&steps=200&seed=23&d_model=32&d_ff=64&batch=32"
WATCHING = re.compile(r"Watching a (live|finished) run, read-only")  # a short run may be over already


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    yield from redis_or_skip()


@pytest.fixture(scope="module")
def cluster(redis: RedisServer, tmp_path_factory) -> Iterator[tuple[list[str], list[Path]]]:
    """Two app servers and two trainers on one Redis; yields the servers' addresses and the trainers' logs."""
    env = {"TE_REDIS_URL": redis.url, "TE_TRAINER": "redis"}
    command = [sys.executable, "-m", "explorer.runs.trainer", "--redis", redis.url]
    logs = [tmp_path_factory.mktemp("trainer") / "log" for _ in range(2)]
    workers = []
    for log in logs:
        with log.open("w") as out:
            workers.append(subprocess.Popen(command, cwd=REPO_ROOT, stderr=out))
    try:
        with contextlib.ExitStack() as stack:
            yield [stack.enter_context(serve_app(env)) for _ in range(2)], logs
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()


def test_a_run_trains_in_a_remote_trainer_and_is_watched_from_the_other_server(browser, cluster) -> None:
    (first, second), logs = cluster
    with tab(browser, first, RUN) as owner:
        owner.get_by_text("📡 Share live").click()
        wait_for_app(owner)
        link = owner.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
        owner.get_by_role("button", name="Start", exact=True).click()
        expect(metric(owner, "Step")).to_have_text(re.compile(r"^[1-9]"), timeout=120_000)  # it trains
        with tab(browser, second, link[link.index("/training"):], finishes=False) as watcher:
            expect(watcher.get_by_text(WATCHING)).to_be_visible()
            expect(metric(watcher, "Step")).to_have_text(re.compile(r"^[1-9]"), timeout=120_000)
            assert trainers(first) == [] and trainers(second) == []  # neither server started a trainer
            expect(metric(watcher, "Step")).to_have_text(re.compile(r"^200 / 200"), timeout=180_000)
        expect(metric(owner, "Step")).to_have_text(re.compile(r"^200 / 200"), timeout=60_000)
    assert sum("serving run" in log.read_text() for log in logs) == 1  # one trainer took the run
