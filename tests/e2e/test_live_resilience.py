"""Live Training never freezes in a real browser: the heaviest run trains to its end on two busy cores with a slow
browser, and a page whose server falls silent says so and gets its run back, paused, with one click."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from tests.e2e.actions import metric
from tests.e2e.conftest import assert_no_exception, save_screenshot, wait_for_app
from ui.training.watchdog import BANNER_ID

HEAVY = "/training?task=char_lm&compare=true&steps=400&batch=32"  # the run that froze the page before
BURN = "import time\nend = time.time() + 900\nwhile time.time() < end: pass"


def step_shown(page) -> int:
    text = metric(page, "Step").inner_text(timeout=5_000)
    return int(text.split("/")[0].replace(",", ""))


@pytest.fixture
def busy_core():
    """A process that keeps one of the machine's cores busy while the test runs."""
    proc = subprocess.Popen([sys.executable, "-c", BURN])
    yield
    proc.kill()
    proc.wait()


@pytest.mark.slow
@pytest.mark.alone  # it makes the cores busy itself: another test beside it would add load it does not account for
def test_character_lm_with_compare_trains_to_the_end_on_busy_cores(page, busy_core):
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 2})  # a browser twice as slow as this one
    page.goto(HEAVY)
    wait_for_app(page)
    page.get_by_role("button", name="Start", exact=True).click()
    seen, last_change, longest_gap = -1, time.monotonic(), 0.0
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            step = step_shown(page)
        except Exception:  # a rerun briefly has no metric
            step = seen
        now = time.monotonic()
        if step != seen:
            longest_gap, seen, last_change = max(longest_gap, now - last_change), step, now
        assert page.locator(f"#{BANNER_ID}").count() == 0, f"the page reported a stall at step {seen}"
        assert now - last_change < 30, f"the Step metric stopped at {seen} for 30 s: the page froze"
        if seen == 400:
            break
        page.wait_for_timeout(500)
    assert seen == 400, f"the run did not reach its end in 10 minutes (step {seen})"
    page.get_by_text(re.compile("^Finished")).first.wait_for(timeout=60_000)
    assert_no_exception(page)
    assert longest_gap < 20, f"the page stood still for {longest_gap:.1f} s"


def test_a_silent_server_shows_the_banner_and_reconnect_brings_the_run_back_paused(page):
    opened: list[int] = []  # the page's connections, numbered in the order they opened
    silenced: set[int] = set()

    def proxy(ws) -> None:
        server = ws.connect_to_server()
        number = len(opened)
        opened.append(number)
        server.on_message(lambda message: None if number in silenced else ws.send(message))
        ws.on_message(lambda message: server.send(message))

    page.route_web_socket(re.compile(r".*/_stcore/stream"), proxy)
    page.goto("/training?task=reverse&steps=3000&d_model=32&d_ff=64&batch=16")
    wait_for_app(page)
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function("() => (document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0')"
                           ".replace(/,/g, '').split(' ')[0] * 1 >= 20", timeout=120_000)
    # The server keeps sending; nothing reaches the page any more, the socket stays open. It stays silent: a
    # connection heard again would let the page change, and the watchdog take its banner away, before the click.
    silenced.update(opened)
    frozen_at = step_shown(page)
    banner = page.locator(f"#{BANNER_ID}")
    banner.wait_for(timeout=40_000)
    assert "connection to the server was lost" in banner.inner_text()
    save_screenshot(page, "live_training_stalled.png")

    banner.get_by_role("button", name="Reconnect").click()  # a reload: the page's new connection is heard
    page.get_by_role("button", name="Resume", exact=True).wait_for(timeout=60_000)
    wait_for_app(page)
    welcome = page.get_by_text(re.compile("Welcome back")).first
    welcome.wait_for()
    paused_at = step_shown(page)
    assert frozen_at <= paused_at < 3000 and f"{paused_at:,}" in welcome.inner_text()
    assert page.locator(f"#{BANNER_ID}").count() == 0
    page.get_by_role("button", name="Resume", exact=True).click()
    page.wait_for_function(f"() => (document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0')"
                           f".replace(/,/g, '').split(' ')[0] * 1 > {paused_at + 5}", timeout=120_000)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    assert_no_exception(page)
