"""Nothing of one visitor reaches another, in real browsers (each its own browser context, so its own cookies):
a run on one student's text is never replayed to the next nor sent to its watchers unless its owner agrees, an
address read off a projector does not hand the run over, and one browser's tabs cannot take every place."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import metric, pick_radio
from tests.e2e.conftest import APP_RUN_TIMEOUT_MS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.browser

SMALL = "d_model=32&d_ff=64&layers=1&batch=16"
OWN_TEXT = f"/training?task=char_lm&steps=30&{SMALL}"
LONG = "/training?task=reverse&steps=1000"  # a run that trains for a while on a small host
STORY_A = "the cat sat on the mat. the dog ran to the cat. " * 8
STORY_B = "the dog sat on the cat. the mat ran to the dog. " * 8  # the same characters, another text
DIARY = "\n".join(f"Dear diary, quokka {i} hides my secret under the old oak tree." for i in range(30))


@pytest.fixture(scope="module")
def server(app_servers) -> str:
    """A small host (two runs train at once) that keeps recordings, as a classroom server does."""
    return app_servers.get({"TE_SMALL_HOST": "1"})


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
    greedy = browsers()  # on a small host (two places) one browser holds one place
    tabs = [_tab(greedy, LONG) for _ in range(2)]
    tabs[0].get_by_role("button", name="Start", exact=True).click()
    expect(tabs[0].get_by_text("Training…")).to_be_visible()
    tabs[1].get_by_role("button", name="Start", exact=True).click()
    wait_for_app(tabs[1])
    expect(tabs[1].get_by_text(re.compile(r"already holds 1 run training, paused or waiting"))).to_be_visible()
    assert tabs[1].get_by_text(re.compile(r"Place \d+ in line")).count() == 0  # not even in line
    tabs[0].get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()
    wait_for_app(tabs[0])
    for tab in tabs:
        assert_no_exception(tab)


def test_a_run_on_own_text_shared_live_sends_watchers_no_line_of_it_until_its_owner_agrees(browsers) -> None:
    owner = _tab(browsers(), OWN_TEXT)
    pick_radio(owner, "Training text", "Your own text")
    box = owner.get_by_role("textbox", name="Your text")
    box.fill(DIARY)
    box.press("Control+Enter")
    wait_for_app(owner)
    owner.get_by_text("📡 Share live with a class").click()
    wait_for_app(owner)
    expect(owner.get_by_text(re.compile("They receive no line of your text"))).to_be_visible()
    link = owner.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
    owner.get_by_role("button", name="Start", exact=True).click()
    expect(metric(owner, "Step")).to_have_text("30 / 30", timeout=180_000)
    wait_for_app(owner)
    expect(owner.get_by_test_id("stMain")).to_contain_text("diary", use_inner_text=True)  # the owner's samples
    watcher = browsers().new_page()
    watcher.set_default_timeout(APP_RUN_TIMEOUT_MS)
    watcher.goto(link[link.index("/training"):])
    expect(watcher.get_by_text("Watching a finished run, read-only")).to_be_visible()  # over: it no longer updates
    expect(metric(watcher, "Step")).to_have_text("30 / 30", timeout=60_000)
    shown = watcher.get_by_test_id("stMain").text_content()  # hidden parts included
    assert "diary" not in shown and "quokka" not in shown and "oak tree" not in shown
    owner.get_by_role("button", name="Show watchers the samples…").click()
    dialog = owner.get_by_role("dialog")
    expect(dialog).to_contain_text("diary", use_inner_text=True)  # what watchers would receive
    dialog.get_by_role("button", name="Show them to watchers").click()
    wait_for_app(owner)
    expect(owner.get_by_text(re.compile("you agreed for this run"))).to_be_visible()
    watcher.reload()
    expect(watcher.get_by_test_id("stMain")).to_contain_text("diary", use_inner_text=True, timeout=60_000)
    for tab in (owner, watcher):
        assert_no_exception(tab)
