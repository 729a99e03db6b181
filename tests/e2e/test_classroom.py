"""A class in the browser: several students watch the teacher's run, a third run on a small host waits in line and
starts by itself, identical settings replay a recording while changed settings train, dead watch links say so and a
class link follows the teacher's next run."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import metric
from tests.e2e.conftest import assert_no_exception, visitor_tabs, wait_for_app

pytestmark = pytest.mark.browser

LONG = "/training?task=reverse&steps=1000"  # a run that trains for a while on a small host
SHORT = "/training?task=reverse&steps=40&seed=11"  # a run that ends in a few seconds


@pytest.fixture(scope="module")
def small_host(app_servers) -> str:
    """A server with the small-host limits (two runs train at once) that keeps recordings."""
    return app_servers.get({"TE_SMALL_HOST": "1"})


@pytest.fixture
def tabs(browser, small_host):
    """Open tabs, each its own visitor (its own browser context, so its own session)."""
    with visitor_tabs(browser, small_host) as open_tab:
        yield open_tab


def _step(tab) -> int:
    return int(re.match(r"([\d,]+) /", metric(tab, "Step").inner_text()).group(1).replace(",", ""))


def _share(tab) -> str:
    """Turn "Share live" on and return the class link."""
    tab.get_by_text("📡 Share live").click()
    wait_for_app(tab)
    return tab.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()


def _start(tab) -> None:
    tab.get_by_role("button", name="Start", exact=True).click()


def test_several_students_watch_the_teachers_run(tabs) -> None:
    teacher = tabs(LONG)
    link = _share(teacher)
    assert re.search(r"/training\?class=[\w-]{20,}&lang=en$", link)
    _start(teacher)
    expect(teacher.get_by_text("Training…")).to_be_visible()
    path = link[link.index("/training"):]
    students = [_watch(tabs, path) for _ in range(2)]
    for student in students:
        expect(student.get_by_text("Watching a live run, read-only")).to_be_visible()
        first = _step(student)
        expect(metric(student, "Step")).not_to_have_text(re.compile(rf"^{first:,} /"), timeout=60_000)
        assert student.get_by_role("button", name="Pause").count() == 0  # read-only: no controls of the run
        assert student.get_by_role("button", name="Start", exact=True).count() == 0
    expect(teacher.get_by_text(re.compile(r"👀 2 watching"))).to_be_visible(timeout=30_000)
    students[0].get_by_test_id("stRadioOption").filter(has_text="Encoder self-attention").click()  # their own view
    expect(students[0].get_by_text(re.compile(r"^Encoder self-attention · step \d+"))).to_be_visible(timeout=30_000)
    expect(teacher.get_by_text(re.compile(r"^Cross-attention .* · step \d+")).first).to_be_visible()
    title = students[1].get_by_text(re.compile(r"^Cross-attention .* · step \d+")).first  # shared drawings move on
    shown = title.inner_text()
    expect(title).not_to_have_text(shown, timeout=30_000)
    teacher.get_by_role("button", name="Pause").click()
    for student in students:
        expect(student.get_by_text("Paused", exact=True)).to_be_visible(timeout=30_000)
        assert_no_exception(student)


def _watch(tabs, path: str):
    """A student opening the watch link (its page keeps following the run, so only its heading is awaited)."""
    return tabs(path, finishes=False)


def test_a_third_run_on_a_small_host_waits_in_line_then_starts_by_itself(tabs) -> None:
    first, second = tabs(LONG), tabs(LONG)
    for tab in (first, second):
        _start(tab)
        expect(tab.get_by_text("Training…")).to_be_visible()
    third = tabs(LONG)
    _start(third)
    expect(third.get_by_text(re.compile(r"Place 1 in line"))).to_be_visible()
    expect(third.get_by_text("You are next")).to_be_visible()
    first.get_by_role("button", name="Pause").click()  # a place frees: the waiting run starts without a click
    expect(third.get_by_text("Training…")).to_be_visible(timeout=30_000)
    expect(metric(third, "Step")).not_to_have_text(re.compile(r"^0 /"), timeout=60_000)
    assert_no_exception(third)
    for tab in (second, third):
        tab.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()


def test_identical_settings_replay_and_changed_settings_train(tabs) -> None:
    trained = tabs(SHORT)
    _start(trained)
    expect(metric(trained, "Step")).to_have_text("40 / 40", timeout=120_000)
    wait_for_app(trained)
    accuracy = _accuracy(trained).inner_text()
    replayed = tabs(SHORT)  # another student, the same settings
    _start(replayed)
    expect(replayed.get_by_text("▶️ Replay.", exact=False)).to_be_visible()
    expect(metric(replayed, "Step")).to_have_text("40 / 40", timeout=120_000)
    wait_for_app(replayed)
    assert _accuracy(replayed).inner_text() == accuracy
    assert metric(replayed, "Train loss").inner_text() == metric(trained, "Train loss").inner_text()
    changed = tabs(SHORT.replace("seed=11", "seed=12"))  # another seed: nothing recorded, it trains
    _start(changed)
    expect(metric(changed, "Step")).to_have_text("40 / 40", timeout=120_000)
    wait_for_app(changed)
    assert changed.get_by_text("▶️ Replay.", exact=False).count() == 0
    replayed.get_by_role("button", name="Train for real").click()  # one click away
    expect(replayed.get_by_text("▶️ Replay.", exact=False)).to_have_count(0, timeout=60_000)
    expect(metric(replayed, "Step")).to_have_text("40 / 40", timeout=120_000)
    wait_for_app(replayed)
    assert _accuracy(replayed).inner_text() == accuracy  # training for real gives the same run
    assert_no_exception(replayed)


def test_dead_watch_links_say_so_and_a_class_link_follows_the_next_run(tabs) -> None:
    bogus = tabs("/training?watch=not-a-real-run-id-0000")
    expect(bogus.get_by_text("This watch link has expired")).to_be_visible()
    expect(bogus.get_by_role("button", name="Start a fresh run")).to_be_visible()
    owner = tabs(SHORT.replace("seed=11", "seed=13"))
    link = _share(owner)
    _start(owner)
    expect(metric(owner, "Step")).to_have_text("40 / 40", timeout=120_000)
    wait_for_app(owner)
    student = _watch(tabs, link[link.index("/training"):])
    expect(student.get_by_text("Finished")).to_be_visible()
    owner.get_by_role("button", name="Reset").click()  # a new run: the class link follows it
    expect(metric(student, "Step")).to_have_text(re.compile(r"^0 / 40"), timeout=30_000)
    _start(owner)  # the same settings again: a replay of the recording, on the same link
    expect(student.get_by_text("(a replay of a recorded run)", exact=False)).to_be_visible(timeout=30_000)
    assert_no_exception(student)


def test_a_lessons_run_is_shared_live_and_replayed_for_the_next_student(tabs) -> None:
    teacher = tabs("/lessons?lesson=positional")
    teacher.get_by_text("📡 Share live").click()
    wait_for_app(teacher)
    link = teacher.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
    student = _watch(tabs, link[link.index("/training"):])
    expect(student.get_by_text("Watching a live run, read-only")).to_be_visible()
    teacher.get_by_role("button", name=re.compile(r"^Train both models")).click()
    wait_for_app(teacher, timeout_ms=240_000)
    expect(teacher.get_by_text("Sequences reversed exactly")).to_be_visible()
    expect(metric(student, "Step")).to_have_text(re.compile(r"^120 / 120"), timeout=60_000)
    expect(student.get_by_text("no positions").first).to_be_visible()  # both lanes, named for the students
    assert_no_exception(student)
    second = tabs("/lessons?lesson=positional")  # the next student: the same fixed settings replay
    second.get_by_role("button", name=re.compile(r"^Train both models")).click()
    expect(second.get_by_text(re.compile("Replaying the recording of this exact run"))).to_be_visible()
    wait_for_app(second, timeout_ms=240_000)
    expect(second.get_by_text("Sequences reversed exactly")).to_be_visible()
    assert_no_exception(second)


def _accuracy(tab):
    """The value of the Accuracy metric, whose label names the step it was evaluated at."""
    label = tab.get_by_test_id("stMetricLabel").filter(has_text=re.compile(r"^\s*Accuracy · step [\d,]+\s*$"))
    return tab.get_by_test_id("stMetric").filter(has=label).first.get_by_test_id("stMetricValue")
