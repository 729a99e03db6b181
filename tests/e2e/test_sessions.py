"""Three visitors train at the same time: every run progresses, each sees only its own run, nothing crashes."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.actions import metric
from tests.e2e.conftest import APP_RUN_TIMEOUT_MS, assert_no_exception, wait_for_app

# One run per visitor, each with its own task and length, so that any mix-up between sessions shows.
RUNS = (("reverse", 10), ("sort", 12), ("copy", 14))
TASK_TITLES = {"reverse": "Reverse", "sort": "Sort", "copy": "Copy"}


def _tab(browser, base_url: str):
    context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(APP_RUN_TIMEOUT_MS)
    return context, tab


def _step_of(tab) -> tuple[int, int]:
    done, total = re.match(r"(\d[\d,]*) / (\d[\d,]*)", metric(tab, "Step").inner_text()).groups()
    return int(done.replace(",", "")), int(total.replace(",", ""))


def test_three_sessions_train_at_once(browser, warm_app):
    contexts, tabs = [], []
    try:
        for task, steps in RUNS:  # the three visitors arrive at once: their first runs overlap on the server
            context, tab = _tab(browser, warm_app)
            contexts.append(context)
            tabs.append(tab)
            tab.goto(f"/training?task={task}&steps={steps}&seed={steps}", wait_until="commit")
        for (_, steps), tab in zip(RUNS, tabs, strict=True):
            wait_for_app(tab)
            assert _step_of(tab) == (0, steps)
        for tab in tabs:  # start all three; they then train concurrently on the server
            tab.get_by_role("button", name="Start").click()
        for tab in tabs:
            expect(metric(tab, "Step")).not_to_have_text(re.compile(r"^0 /"), timeout=120_000)
        for (task, steps), tab in zip(RUNS, tabs, strict=True):
            expect(metric(tab, "Step")).to_have_text(f"{steps} / {steps}", timeout=240_000)
            wait_for_app(tab)
            assert_no_exception(tab)
            shown = tab.locator("input[aria-label='Task']").input_value()  # in the collapsed settings panel
            assert shown == TASK_TITLES[task], f"session {task} shows another task: {shown}"
        losses = [metric(tab, "Train loss").inner_text() for tab in tabs]
        assert len(set(losses)) == len(losses), f"the runs should differ: {losses}"
    finally:
        for context in contexts:
            context.close()
