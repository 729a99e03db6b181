"""Live Training's runs train in trainer processes: a trainer killed mid-run loses its run with a message on the
owner's page, the server goes on, and the next run trains in a new trainer."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

from playwright.sync_api import expect

from explorer.process_tree import children
from tests.e2e.actions import metric
from tests.e2e.conftest import assert_no_exception, new_tab, save_screenshot, serve_app, wait_for_app

URL = "/training?task=reverse&steps=1000&d_model=32&d_ff=64&batch=32"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def trainers(base_url: str) -> list[int]:
    """The trainer processes of the app server at ``base_url``: children of its fork server."""
    port = base_url.rsplit(":", 1)[1]
    servers = [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/cmdline")
               if f"--server.port {port} " in _cmdline(int(p.parent.name)) + " "]
    forkservers = [c for s in servers for c in children(s) if "forkserver" in _cmdline(c)]
    return [t for f in forkservers for t in children(f)]


def step_shown(page) -> int:
    try:
        return int(metric(page, "Step").inner_text(timeout=5_000).split("/")[0].replace(",", ""))
    except Exception:  # a rerun briefly has no metric
        return -1


def wait_for_step(page, above: int, limit_s: float = 90.0) -> int:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        step = step_shown(page)
        if step > above:
            return step
        page.wait_for_timeout(300)
    raise AssertionError(f"the Step metric did not pass {above} in {limit_s:.0f} s")


def test_a_killed_trainer_loses_its_run_with_a_message_and_the_server_goes_on(browser):
    env = {"TE_RECORDINGS_MB": "0", "TE_TRAINER": "process"}
    with serve_app(env) as base_url, new_tab(browser, base_url) as page:
        page.goto(URL)
        wait_for_app(page)
        page.get_by_role("button", name="Start", exact=True).click()
        wait_for_step(page, 5)
        found = trainers(base_url)
        assert len(found) == 1, f"one trainer process trains the run, found {found}"
        os.kill(found[0], signal.SIGKILL)
        page.get_by_text("trainer process ended unexpectedly").first.wait_for(timeout=30_000)
        save_screenshot(page, "trainer-killed.png")
        assert_no_exception(page)
        page.get_by_role("button", name="Start", exact=True).click()  # a new run, in a new trainer
        deadline = time.monotonic() + 60
        while not trainers(base_url) and time.monotonic() < deadline:
            page.wait_for_timeout(300)
        again = trainers(base_url)
        assert again and again != found, "a new trainer trains the new run"
        expect(page.get_by_text("trainer process ended unexpectedly")).to_have_count(0)
        expect(metric(page, "Step")).to_have_text(re.compile(r"^[1-9]"), timeout=150_000)
