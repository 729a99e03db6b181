"""Live Training in a real browser, while it trains: one step on screen at a time, no leftover charts of an
earlier run, and no Vega warnings about charts drawn without data."""

from __future__ import annotations

import pytest

from tests.e2e.actions import choose, click_button, open_expander
from tests.e2e.conftest import assert_no_exception, save_screenshot, wait_for_app

SMALL = "d_model=32&d_ff=64&batch=32"  # quick on two cores
# Read the steps the page names once the page has held still for a moment (a redraw arrives as several
# messages; a reading taken between two of them would mix two redraws).
STEPS_JS = """async () => {
  const read = () => {
    const texts = [...document.querySelectorAll('[data-testid=stMarkdownContainer]')].map(e => e.innerText);
    const line = texts.flatMap(t => [...t.matchAll(/Time-lapse: attention at step (\\d+)/g)].map(m => +m[1]));
    const heads = texts.flatMap(t => [...t.matchAll(/^Cross-attention.*· step (\\d+)$/gm)].map(m => +m[1]));
    return JSON.stringify({line, heads});
  };
  for (let i = 0; i < 100; i++) {
    const first = read();
    await new Promise(r => setTimeout(r, 200));
    if (first === read()) return JSON.parse(first);
  }
  return null;
}"""
STALE_JS = """() => [...document.querySelectorAll('[data-testid=stMain] [data-stale=true]')]
  .filter(e => !e.querySelector('[data-testid=stEmpty]')).map(e => e.innerText.slice(0, 60))"""


def _warnings(page) -> list[str]:
    seen: list[str] = []
    page.on("console", lambda msg: seen.append(msg.text) if msg.type in ("warning", "error") else None)
    return seen


def _running(page, at_least: int) -> None:
    page.wait_for_function(
        f"() => [...document.querySelectorAll('[data-testid=stMarkdownContainer]')].some(e => "
        f"/Time-lapse: attention at step (\\d+)/.test(e.innerText) && "
        f"+e.innerText.match(/step (\\d+)/)[1] >= {at_least})", timeout=240_000)


@pytest.mark.slow
def test_while_training_every_label_shows_one_step_and_ab_agree(page):
    warnings = _warnings(page)
    page.goto(f"/training?task=reverse&steps=2000&compare=true&{SMALL}")
    wait_for_app(page)
    page.get_by_role("button", name="Start", exact=True).click()
    for at_least in (30, 90, 150):
        _running(page, at_least)
        shown = page.evaluate(STEPS_JS)
        assert shown is not None, "the page never held still"
        assert len(shown["heads"]) == 2 and len(shown["line"]) == 1, shown
        assert set(shown["heads"]) == set(shown["line"]), f"the page shows several steps at once: {shown}"
    save_screenshot(page, "live_training_following.png")
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    assert_no_exception(page)
    vega = [w for w in warnings if "Infinite extent" in w or "domain includes zero" in w]
    assert not vega, vega


@pytest.mark.slow
def test_a_new_task_leaves_no_charts_of_the_last_run(page):
    page.goto(f"/training?task=reverse&steps=30&compare=true&{SMALL}")
    wait_for_app(page)
    click_button(page, "Start")  # 30 steps: finished when the page is done
    page.get_by_text("Finished").first.wait_for()
    open_expander(page, "⚙️ Task, model and training")
    choose(page, "Task", "Protein GRAVY hydropathy")
    page.get_by_role("button", name="Start", exact=True).click()
    _running(page, 1)
    page.wait_for_timeout(1000)  # the new run draws a few frames while the script keeps running
    left = page.evaluate(STALE_JS)
    assert not left, f"the previous run's view is still on screen, faded: {left}"
    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()
    wait_for_app(page)
