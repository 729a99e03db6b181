"""Two app servers that share one Redis (``TE_REDIS_URL``), no proxy: a watch link and a replay made on one server
work on the other. Skipped, with the reason, where no redis-server can start."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import choose, metric
from tests.e2e.conftest import APP_RUN_TIMEOUT_MS, assert_no_exception, serve_app, wait_for_app
from tests.redis_server import RedisServer, redis_or_skip

pytestmark = pytest.mark.browser
RUN = "/training?task=reverse&steps=300&seed=21"  # long enough for the owner to see its watcher while it trains
WATCHING = re.compile(r"Watching a (live|finished) run, read-only")  # a short run may be over already


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    yield from redis_or_skip()


@pytest.fixture(scope="module")
def servers(redis: RedisServer) -> Iterator[list[str]]:
    """Two app servers on one Redis."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(serve_app({"TE_REDIS_URL": redis.url})) for _ in range(2)]


@contextlib.contextmanager
def tab(browser, base: str, path: str, *, finishes: bool = True):
    context = browser.new_context(base_url=base, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(APP_RUN_TIMEOUT_MS)
    page.goto(path)
    if finishes:
        wait_for_app(page)
    else:
        page.locator("[data-testid=stMain] h1").first.wait_for(state="visible")
    try:
        yield page
    finally:
        context.close()


def test_watch_and_replay_across_servers(browser, servers) -> None:
    first, second = servers
    with tab(browser, first, RUN) as owner:
        owner.get_by_text("📡 Share live").click()
        wait_for_app(owner)
        link = owner.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
        owner.get_by_role("button", name="Start", exact=True).click()
        path = link[link.index("/training"):]  # the class link, followed on the other server
        with tab(browser, second, path, finishes=False) as watcher:
            expect(watcher.get_by_text(WATCHING)).to_be_visible()
            expect(owner.get_by_text(re.compile(r"👀 1 watching"))).to_be_visible(timeout=30_000)
            expect(metric(watcher, "Step")).to_have_text(re.compile(r"^300 / 300"), timeout=120_000)
            assert_no_exception(watcher)
        wait_for_app(owner)
        accuracy = _accuracy(owner).inner_text()
    with tab(browser, second, RUN) as student:  # the recording made on the first server replays on the second
        student.get_by_role("button", name="Start", exact=True).click()
        expect(student.get_by_text("▶️ Replay.", exact=False)).to_be_visible()
        choose(student, "Replay speed", "8×")  # the same recording, eight times as fast as it was trained
        expect(metric(student, "Step")).to_have_text("300 / 300", timeout=120_000)
        wait_for_app(student)
        assert _accuracy(student).inner_text() == accuracy
        assert_no_exception(student)


def _accuracy(tab):
    """The value of the Accuracy metric, whose label names the step it was evaluated at."""
    label = tab.get_by_test_id("stMetricLabel").filter(has_text=re.compile(r"^\s*Accuracy · step [\d,]+\s*$"))
    return tab.get_by_test_id("stMetric").filter(has=label).first.get_by_test_id("stMetricValue")
