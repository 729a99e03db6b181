"""Paused runs inside every limit, in a real browser: four tabs of one browser each Start, Pause and close; their
trainer processes are gone soon after, and the owner reopening a tab's address resumes its run from the run store
with the step count and curves it had."""

from __future__ import annotations

import re
import time

from tests.e2e.conftest import assert_no_exception, save_screenshot, serve_app, wait_for_app
from tests.e2e.test_trainer_process import step_shown, trainers, wait_for_step

URL = "/training?task=reverse&steps=3000&d_model=32&d_ff=64&batch=16"
RELEASE_S = 4  # the delay before a closed tab's paused run gives its trainer back (a minute by default)
GONE_WITHIN_S = 60  # what the test allows: many times the delay and its sweep, on a loaded machine


def sidebar_line(page) -> str:
    return page.locator("[data-testid=stSidebar]").get_by_text(re.compile("^Training here")).inner_text()


def test_four_paused_and_closed_tabs_give_their_trainers_back_and_the_owner_resumes_from_the_store(browser):
    env = {"TE_RECORDINGS_MB": "0", "TE_TRAINER": "process", "TE_TRAINER_RELEASE_S": str(RELEASE_S)}
    with serve_app(env) as base_url:
        context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 900})
        try:
            addresses, steps, seen = [], [], set()
            for _ in range(4):  # one browser, four tabs: each Start, Pause, close
                tab = context.new_page()
                tab.goto(URL)
                wait_for_app(tab)
                tab.get_by_role("button", name="Start", exact=True).click()
                wait_for_step(tab, 3)
                seen.update(trainers(base_url))
                tab.get_by_role("button", name="Pause", exact=True).click()
                tab.get_by_role("button", name="Resume", exact=True).wait_for()
                wait_for_app(tab)
                assert_no_exception(tab)
                steps.append(step_shown(tab))
                addresses.append(tab.url)
                tab.close()
            assert len(seen) >= 4, f"each run trained in a trainer process of its own: {seen}"
            deadline = time.monotonic() + GONE_WITHIN_S
            while trainers(base_url) and time.monotonic() < deadline:
                time.sleep(0.5)
            left = trainers(base_url)
            assert not left, f"trainer processes still alive {GONE_WITHIN_S} s after their tabs closed: {left}"

            page = context.new_page()  # the owner comes back to the last tab's address
            page.goto(addresses[-1])
            wait_for_app(page)
            page.get_by_text(re.compile("Welcome back")).first.wait_for()
            assert step_shown(page) == steps[-1], "the run comes back at the step it had"
            assert page.locator("[data-testid=stVegaLiteChart]").count() > 0, "with its curves"
            assert "trainers 0 of" in sidebar_line(page)
            page.get_by_role("button", name="Resume", exact=True).click()
            resumed = wait_for_step(page, steps[-1] + 3)
            assert resumed > steps[-1]
            assert len(trainers(base_url)) == 1, "the resumed run trains in a new trainer process"
            expect_none = page.get_by_text("trainer process ended unexpectedly")
            assert expect_none.count() == 0
            page.get_by_role("button", name="Pause", exact=True).click()
            page.get_by_role("button", name="Resume", exact=True).wait_for()
            wait_for_app(page)
            assert re.search(r"0 of \d+ running · 1 paused · 0 waiting · trainers 1 of", sidebar_line(page))
            save_screenshot(page, "paused_run_resumed_from_store.png")
            assert_no_exception(page)
        finally:
            context.close()
