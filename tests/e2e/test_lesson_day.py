"""A teacher's lesson day in the browser: a paused replay is the model of the step it shows, one class link follows
three new runs with three students watching (one joined by its code), a stopped student page says so and
reconnects, and the lesson "Which head does the work?" shows the heads before students bet."""

from __future__ import annotations

import importlib.util
import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import metric, metric_values
from tests.e2e.conftest import assert_no_exception, visitor_tabs, wait_for_app
from ui.training.watchdog import BANNER_ID

pytestmark = pytest.mark.browser

SMALL = "task=reverse&d_model=32&d_ff=64&batch=32"
TRAIN_MS = 400_000  # training on two busy cores


@pytest.fixture(scope="module")
def server(app_servers) -> str:
    """A server that keeps recordings (the session's shared server keeps none)."""
    return app_servers.get({})


@pytest.fixture
def tabs(browser, server):
    """Open tabs, each its own visitor (its own browser context, so its own session)."""
    with visitor_tabs(browser, server) as open_tab:
        yield open_tab


def _step(tab) -> int:
    return int(re.match(r"([\d,]+) /", metric(tab, "Step").inner_text()).group(1).replace(",", ""))


def _press(tab, name: str) -> None:
    tab.get_by_role("button", name=name, exact=True).click()


def test_a_paused_replay_switches_heads_off_on_the_model_of_its_step(tabs) -> None:
    owner = tabs(f"/training?{SMALL}&steps=300&seed=31")
    _press(owner, "Start")
    expect(metric(owner, "Step")).to_have_text(re.compile(r"^300 / 300"), timeout=TRAIN_MS)
    wait_for_app(owner)
    _press(owner, "Start")  # the same settings again: the recording plays
    expect(owner.get_by_text("▶️ Replay.", exact=False)).to_be_visible()
    owner.wait_for_function("() => ((document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0')"
                            ".replace(/,/g, '').split(' ')[0] * 1) >= 90", timeout=120_000)
    _press(owner, "Pause")
    owner.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(owner)
    step = _step(owner)
    assert step % 25 == 0 and 75 <= step < 300, step  # it rests on a step whose model was recorded
    expect(owner.get_by_text(f"Measured now on the model at step {step}")).to_be_visible()
    shown = metric_values(owner)
    assert shown[f"Accuracy · step {step}"] == shown["Accuracy · all heads on"] != "0.0%", shown
    live = owner.get_by_text(re.compile(rf"^Sample predictions · step {step} — \d of 6 right")).inner_text()
    measured = owner.get_by_text(re.compile(rf"^All heads on · step {step} — \d of 6 right")).inner_text()
    assert live.split("—")[1] == measured.split("—")[1]  # the same model at the same step: the same samples right
    _press(owner, "Step once")  # one recorded step on: the next recorded model
    wait_for_app(owner)
    assert _step(owner) == step + 25
    expect(owner.get_by_text(f"Measured now on the model at step {step + 25}")).to_be_visible()
    assert_no_exception(owner)


def _class_link(teacher) -> tuple[str, str]:
    """Turn sharing on; the class link and its short code."""
    teacher.get_by_text("📡 Share live with a class").click()
    wait_for_app(teacher)
    link = teacher.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
    code = re.search(r"Class code: ([A-Z2-9]{6})", teacher.get_by_test_id("stMain").inner_text()).group(1)
    return link, code


def _watching(teacher, count: int) -> None:
    expect(teacher.get_by_text(re.compile(rf"👀 {count} watching"))).to_be_visible(timeout=60_000)


def test_a_class_link_follows_three_new_runs_with_three_students(tabs) -> None:
    teacher = tabs(f"/training?{SMALL}&steps=3000&seed=41")
    link, code = _class_link(teacher)
    assert not {urlsplit(link).hostname} & {"127.0.0.1", "localhost"}, link  # an address students can open
    assert re.search(r"/training\?class=[\w-]{20,}&lang=en$", link) and not set(code) & set("ILO01")
    if importlib.util.find_spec("segno") is not None:  # the server runs with the same packages
        expect(teacher.get_by_test_id("stImage").filter(has_text="Scan to watch")).to_be_visible()
    path = link[link.index("/training"):]
    students = [tabs(path, finishes=False)]
    for typed in (code.lower(), link):  # the code as typed, or the whole link pasted into its box
        joining = tabs("/training")
        joining.get_by_text("👀 Join a class").first.click()
        joining.get_by_label("Class code", exact=True).and_(joining.get_by_test_id("stTextInputField")).fill(typed)
        joining.get_by_role("button", name="👀 Join a class").click()
        students.append(joining)
    for student in students:
        expect(student.get_by_text("Watching a live run, read-only")).to_be_visible()
    for joined in students[1:]:  # the page's own view (Start, its empty charts) gone, not left faded below
        expect(joined.get_by_role("button", name="Start", exact=True)).to_have_count(0)
        assert "lang=en" in joined.url  # the class's language travels with the joined page's address
    _watching(teacher, 3)  # ready, not training: the count is current all the same
    for new_run in range(3):
        if new_run:
            _press(teacher, "Reset")  # a new run: the same link follows it
            for student in students:
                expect(metric(student, "Step")).to_have_text(re.compile(r"^0 / 3,000"), timeout=60_000)
        _press(teacher, "Start")
        for student in students:
            expect(metric(student, "Step")).not_to_have_text(re.compile(r"^0 /"), timeout=120_000)
        _press(teacher, "Pause")
        teacher.get_by_role("button", name="Resume", exact=True).wait_for()
        for student in students:
            expect(student.get_by_text("Paused", exact=True)).to_be_visible(timeout=60_000)
        _watching(teacher, 3)  # paused: still three
    stopped = students[0]
    stopped.get_by_test_id("stStatusWidget").get_by_role("button", name="Stop").click()
    banner = stopped.locator(f"#{BANNER_ID}")
    expect(banner).to_contain_text("stopped following the run", timeout=30_000)
    banner.get_by_role("button", name="Reconnect").click()
    expect(stopped.get_by_text("Watching a live run, read-only")).to_be_visible()
    expect(banner).to_have_count(0, timeout=30_000)
    for student in students:
        assert_no_exception(student)


def test_the_head_lesson_shows_the_heads_before_students_bet(tabs) -> None:
    student = tabs("/lessons?lesson=importance")
    student.get_by_role("button", name=re.compile("^Train the reverse model")).click()
    wait_for_app(student, TRAIN_MS)
    heads = student.locator('[role=img][aria-label^="Cross-attention"]').first
    scores = student.get_by_test_id("stVegaLiteChart").first
    expect(heads).to_be_visible()
    expect(scores).to_be_visible()
    switches = student.locator(".st-key-lessons-importance-off-cross-0").first
    assert heads.bounding_box()["y"] < switches.bounding_box()["y"]  # on screen before the bet is clicked
    assert scores.bounding_box()["height"] >= 100
    assert_no_exception(student)
