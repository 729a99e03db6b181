"""Nothing of one visitor reaches another, in real browsers (each its own browser context, so its own cookies):
a run on one student's text is never replayed to the next, an address read off a projector does not hand the
run over, and one browser's tabs cannot take every place."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import metric, pick_radio
from tests.e2e.conftest import APP_RUN_TIMEOUT_MS, assert_no_exception, serve_app, wait_for_app

pytestmark = pytest.mark.browser

SMALL = "d_model=32&d_ff=64&layers=1&batch=16"
OWN_TEXT = f"/training?task=char_lm&steps=30&{SMALL}"
LONG = "/training?task=reverse&steps=1000"  # a run that trains for a while on a small host
STORY_A = "the cat sat on the mat. the dog ran to the cat. " * 8
STORY_B = "the dog sat on the cat. the mat ran to the dog. " * 8  # the same characters, another text


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A small host (two runs train at once) that keeps recordings, as a classroom server does."""
    with serve_app({"TE_SMALL_HOST": "1"}) as base_url:
        yield base_url


@pytest.fixture
def browsers(browser, server):
    """Open browser contexts: each is another visitor's browser (its own cookies)."""
    contexts = []

    def open_browser():
        context = browser.new_context(base_url=server, viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        return context

    yield open_browser
    for context in contexts:
        context.close()


def _tab(context, path: str):
    tab = context.new_page()
    tab.set_default_timeout(APP_RUN_TIMEOUT_MS)
    tab.goto(path)
    wait_for_app(tab)
    return tab


def _step(tab) -> int:
    return int(re.match(r"([\d,]+) /", metric(tab, "Step").inner_text()).group(1).replace(",", ""))


def _train_on_own_text(tab, text: str) -> None:
    pick_radio(tab, "Training text", "Your own text")
    box = tab.get_by_role("textbox", name="Your text")
    box.fill(text)
    box.press("Control+Enter")
    wait_for_app(tab)
    expect(tab.get_by_text(re.compile("never replayed to anyone else"))).to_be_visible()
    tab.get_by_role("button", name="Start", exact=True).click()


def test_a_students_text_is_never_replayed_to_another_student(browsers) -> None:
    first = _tab(browsers(), OWN_TEXT)
    _train_on_own_text(first, STORY_A)
    expect(metric(first, "Step")).to_have_text("30 / 30", timeout=180_000)
    wait_for_app(first)
    second = _tab(browsers(), OWN_TEXT)  # another student, another text with the same characters
    _train_on_own_text(second, STORY_B)
    expect(second.get_by_text("Training…").or_(metric(second, "Step").filter(has_text="30 / 30"))).to_be_visible()
    assert second.get_by_text("▶️ Replay.", exact=False).count() == 0, "the first student's run was replayed"
    expect(metric(second, "Step")).to_have_text("30 / 30", timeout=180_000)
    wait_for_app(second)
    assert second.get_by_text("▶️ Replay.", exact=False).count() == 0
    third = _tab(browsers(), OWN_TEXT)  # even the very same text: a run on a user's own text is never shared
    _train_on_own_text(third, STORY_A)
    expect(metric(third, "Step")).to_have_text("30 / 30", timeout=180_000)
    assert third.get_by_text("▶️ Replay.", exact=False).count() == 0
    for tab in (first, second, third):
        assert_no_exception(tab)


def test_an_address_read_off_the_projector_does_not_hand_the_run_over(browsers) -> None:
    teacher_browser = browsers()
    teacher = _tab(teacher_browser, LONG)
    teacher.get_by_role("button", name="Start", exact=True).click()
    expect(metric(teacher, "Step")).not_to_have_text(re.compile(r"^0 /"), timeout=120_000)
    teacher.wait_for_url(re.compile(r"[?&]run=[\w-]{20,}"))
    address = teacher.url[teacher.url.index("/training"):]

    student = _tab(browsers(), address)  # the same address typed into another browser
    expect(metric(student, "Step")).to_have_text(re.compile(r"^0 /"))  # a fresh page of its own
    assert student.get_by_role("button", name="Resume", exact=True).count() == 0
    assert student.get_by_text(re.compile("Welcome back")).count() == 0
    assert "run=" not in student.url
    seen = _step(teacher)
    expect(metric(teacher, "Step")).not_to_have_text(re.compile(rf"^{seen:,} /"), timeout=60_000)  # trains on
    assert teacher.get_by_text(re.compile("opened in another tab")).count() == 0

    teacher.reload()  # the teacher's own browser still takes its run back
    teacher.get_by_role("button", name="Resume", exact=True).wait_for(timeout=60_000)
    wait_for_app(teacher)
    expect(teacher.get_by_text(re.compile("Welcome back")).first).to_be_visible()
    assert _step(teacher) >= seen
    teacher.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()
    for tab in (teacher, student):
        assert_no_exception(tab)


def test_one_browsers_tabs_cannot_take_every_place(browsers) -> None:
    greedy = browsers()
    tabs = [_tab(greedy, LONG) for _ in range(3)]
    for tab in tabs[:2]:
        tab.get_by_role("button", name="Start", exact=True).click()
        expect(tab.get_by_text("Training…")).to_be_visible()
    tabs[2].get_by_role("button", name="Start", exact=True).click()
    wait_for_app(tabs[2])
    expect(tabs[2].get_by_text(re.compile(r"already holds 2 runs training, paused or waiting"))).to_be_visible()
    assert tabs[2].get_by_text(re.compile(r"Place \d+ in line")).count() == 0  # not even in line
    for tab in tabs[:2]:
        tab.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()
        wait_for_app(tab)
    for tab in tabs:
        assert_no_exception(tab)
