"""Live Training in projector mode at 1024 × 768, measured in the browser: the first screen holds the control row,
the step line, the chosen head's heatmap (at least 200 px tall) and the loss and accuracy curves, without scrolling,
for the owner before Start and while training, for a student following the class link, and in a lesson's live
step; the settings sit in a folded panel; the head-score strip of a paused run keeps its rows apart. The screenshots
go to docs/screenshots/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import open_page
from tests.e2e.conftest import assert_no_exception, visitor_tabs, wait_for_app

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1024, "height": 768}
MIN_HEATMAP_PX = 200
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
QUERY = "task=reverse&steps=300&d_model=32&d_ff=64&batch=32&seed=5"
URL = f"/training?present=true&{QUERY}"
# A run long enough to be still training when a student's tab has opened, however busy the machine
LONG_URL = URL.replace("steps=300", "steps=1000")
HEAD = "[role=img][aria-label*=' of layer ']"  # the first screen's heatmap of one head (its labels included)
STEP = re.compile(r"^Step [\d,]+ / [\d,]+ ·")  # the step line


def _box(locator) -> dict:
    """The element's box; read again when a live redraw replaced the element as it was read (a box of zeros)."""
    for _ in range(20):
        locator.wait_for(state="visible")
        box = locator.evaluate("e => e.isConnected ? e.getBoundingClientRect().toJSON() : null")
        if box is not None and box["width"] > 0:
            return box
        locator.page.wait_for_timeout(100)
    raise AssertionError(f"no box for {locator}")


def _on_first_screen(box: dict) -> bool:
    return box["top"] >= 0 and box["left"] >= 0 and box["bottom"] <= PROJECTOR["height"] and \
        box["right"] <= PROJECTOR["width"]


def assert_first_screen(page, *, controls: tuple[str, ...]) -> None:
    """The step line, the heatmap (its picture ≥ 200 px tall), the loss and accuracy curves and the ``controls``
    all lie inside the 1024 × 768 viewport with the page scrolled to its top."""
    page.get_by_test_id("stMain").evaluate("main => main.scrollTo(0, 0)")
    page.wait_for_timeout(300)
    heatmap = page.locator(HEAD).first
    boxes = {
        "step line": _box(page.get_by_text(STEP).first),
        "heatmap": _box(heatmap),
        "loss": _box(page.get_by_test_id("stVegaLiteChart").filter(has_text=re.compile("Loss|loss curve")).first),
        "accuracy": _box(page.get_by_test_id("stVegaLiteChart").filter(
            has_text=re.compile("Accuracy|held-out metric")).first),
        **{name: _box(page.get_by_role("button", name=name, exact=True)) for name in controls},
    }
    outside = {name: box for name, box in boxes.items() if not _on_first_screen(box)}
    assert not outside, outside
    picture = _box(heatmap.locator("img[alt^='layer ']"))
    assert picture["height"] >= MIN_HEATMAP_PX, picture
    curves = boxes["loss"], boxes["accuracy"]
    assert all(c["left"] >= boxes["heatmap"]["right"] - 1 for c in curves), boxes  # beside the heatmap


def _shoot(page, name: str) -> None:
    page.mouse.move(1000, 20)  # no button's tooltip over the picture
    page.wait_for_timeout(400)
    DOCS.mkdir(exist_ok=True)
    page.screenshot(path=str(DOCS / name))


def _step(page) -> int:
    return int(re.match(r"Step ([\d,]+)", page.get_by_text(STEP).first.inner_text()).group(1).replace(",", ""))


def test_the_first_screen_before_start_while_training_and_for_the_class(browser, warm_app) -> None:
    with visitor_tabs(browser, warm_app) as open_tab:
        teacher = open_tab(LONG_URL)
        teacher.set_viewport_size(PROJECTOR)
        wait_for_app(teacher)
        expect(teacher.get_by_role("button", name="⚙️ Settings")).to_be_visible()  # the settings, folded
        expect(teacher.get_by_text(re.compile(r"^Step 0 / 1,000 · .*Ready"))).to_be_visible()
        expect(teacher.locator(HEAD).first).to_have_attribute("aria-label", re.compile(r"at step 0:"))  # untrained
        assert_first_screen(teacher, controls=("Start", "Reset"))
        _shoot(teacher, "live_training_projector_before_start_1024.png")

        teacher.get_by_text("📡 Share live").click()
        wait_for_app(teacher)
        link = teacher.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
        teacher.get_by_role("button", name="Start", exact=True).click()
        teacher.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMarkdownContainer] p')]"
                                  ".some(p => /^Step ([\\d,]+) \\//.test(p.textContent) && "
                                  "+p.textContent.match(/^Step ([\\d,]+)/)[1].replace(/,/g, '') >= 350)",
                                  timeout=300_000)
        student = open_tab(link[link.index("/training"):] + "&present=true", finishes=False)
        student.set_viewport_size(PROJECTOR)
        expect(student.get_by_text("Watching a live run, read-only")).to_be_visible()
        expect(student.locator(HEAD).first).to_be_visible(timeout=60_000)
        assert_first_screen(teacher, controls=("Start", "Pause", "Reset"))
        _shoot(teacher, "live_training_projector_1024.png")
        assert_first_screen(student, controls=("Train my own",))
        first = _step(student)
        expect(student.get_by_text(STEP).first).not_to_have_text(re.compile(rf"^Step {first:,} /"), timeout=60_000)
        _shoot(student, "live_training_projector_student_1024.png")
        assert_no_exception(teacher)
        assert_no_exception(student)


def test_the_lessons_live_step_on_a_projector(page) -> None:
    page.set_viewport_size(PROJECTOR)
    open_page(page, "/lessons?lesson=heads&present=true")
    page.get_by_text("Step 1", exact=True).scroll_into_view_if_needed()
    page.get_by_text("Step 1", exact=True).evaluate("e => e.scrollIntoView({block: 'start'})")
    expect(page.locator(HEAD).first).to_have_attribute("aria-label", re.compile(r"at step 0:"))  # the "before"
    assert _on_first_screen(_box(page.locator(HEAD).first))
    page.get_by_role("button", name=re.compile(r"^Train the reverse model")).click()
    page.wait_for_function("() => [...document.querySelectorAll('[role=img]')].some(e => "
                           "/ of layer .* at step [1-9]/.test(e.getAttribute('aria-label')))", timeout=120_000)
    page.get_by_text("Step 1", exact=True).evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    heatmap = _box(page.locator(HEAD).first)
    curves = [_box(page.get_by_test_id("stVegaLiteChart").filter(has_text=text).first)
              for text in ("Loss", "Accuracy")]
    step_line = _box(page.get_by_text(STEP).first)
    assert all(_on_first_screen(b) for b in (heatmap, step_line, *curves)), (heatmap, step_line, curves)
    assert _box(page.locator(HEAD).first.locator("img[alt^='layer ']"))["height"] >= MIN_HEATMAP_PX
    _shoot(page, "lessons_live_step_projector_1024.png")
    wait_for_app(page, 240_000)
    expect(page.get_by_text(re.compile(r"Trained for \d+ steps"))).to_be_visible()


def test_a_paused_run_keeps_its_head_scores_apart_below(page) -> None:
    page.set_viewport_size(PROJECTOR)
    open_page(page, URL)
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMarkdownContainer] p')]"
                           ".some(p => /^Step ([\\d,]+) \\//.test(p.textContent) && "
                           "+p.textContent.match(/^Step ([\\d,]+)/)[1].replace(/,/g, '') >= 150)", timeout=400_000)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    assert_first_screen(page, controls=("Resume", "Reset"))
    curves = page.locator("[data-testid=stVegaLiteChart]").filter(has_text=re.compile("Loss|held-out|Best head"))
    sizes = curves.locator(".role-axis-label text").evaluate_all(
        "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert sizes and min(sizes) >= 16, sizes
    strip = page.locator("[data-testid=stVegaLiteChart]").filter(has_text="How anti-diagonal").first
    strip.scroll_into_view_if_needed()
    rows = strip.locator(".role-axis-label text").filter(has_text=re.compile(r"^layer \d$")).evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().toJSON())")
    assert len(rows) == 2, rows
    first, second = sorted(rows, key=lambda r: r["top"])
    assert second["top"] - first["top"] >= 30 and first["bottom"] <= second["top"], rows  # never overprinted
    _shoot(page, "live_training_projector_paused_1024.png")
    page.get_by_role("button", name="⚙️ Settings").click()  # the settings open in place
    expect(page.get_by_text("Task", exact=True).first).to_be_visible()
    assert_no_exception(page)
