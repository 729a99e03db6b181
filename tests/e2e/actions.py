"""What a visitor does in the browser, written once: open a page, pick an option, move a slider, read the page.

Every action that reruns the script waits for the run to finish (``wait_for_app``), so tests never sleep.
Widgets are found by their visible label inside Streamlit's stable ``data-testid`` containers.
"""

from __future__ import annotations

import re

from tests.e2e.conftest import SCREENSHOT_DIR, wait_for_app

ALERTS = "[data-testid=stAlert]"


def open_page(page, path: str) -> None:
    """Go to ``path`` (e.g. "/attention?attn.heads=4") and wait for its first run to finish."""
    page.goto(path)
    wait_for_app(page)
    page.locator("[data-testid=stMain] h1").first.wait_for(state="visible")


def open_pretrained(page, model: str) -> None:
    """Open the Attention Lab on the pretrained model ``model`` (its menu entry is the name and then its size)."""
    open_page(page, "/attention")
    pick_radio(page, "Weights", "Pretrained (GPT-2, Llama, BERT)")
    menu = page.get_by_test_id("stSelectbox").filter(has_text="Pretrained model").first
    menu.click()
    entry = next(o.inner_text().strip() for o in page.get_by_role("option").all()
                 if o.inner_text().strip().startswith(model + " "))
    page.keyboard.press("Escape")
    wait_for_app(page)
    choose(page, "Pretrained model", entry)


def widget(page, testid: str, label: str):
    """The widget container ``testid`` (e.g. "stSelectbox") whose label is ``label`` (exactly)."""
    pattern = re.compile(rf"^\s*{re.escape(label)}\s*$")
    return page.get_by_test_id(testid).filter(has=page.get_by_test_id("stWidgetLabel").filter(has_text=pattern))


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label``."""
    box = widget(page, "stSelectbox", label).first
    box.scroll_into_view_if_needed()
    box.click()
    if not page.get_by_role("listbox").is_visible():  # a click that scrolled the page can leave the menu shut
        page.wait_for_timeout(300)
        if not page.get_by_role("listbox").is_visible():
            box.click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_for_app(page)


def pick_radio(page, label: str, option: str) -> None:
    """Click the radio option ``option`` of the radio group labelled ``label``."""
    group = widget(page, "stRadio", label).first
    group.get_by_test_id("stRadioOption").filter(has_text=re.compile(rf"^\s*{re.escape(option)}\s*$")).click()
    wait_for_app(page)


def nudge_slider(page, label: str, presses: int = 1) -> None:
    """Move the slider labelled ``label`` by ``presses`` steps (negative: to the left) with the keyboard."""
    thumb = widget(page, "stSlider", label).first.locator("input[type=range]").first
    thumb.focus()
    for _ in range(abs(presses)):
        thumb.press("ArrowRight" if presses > 0 else "ArrowLeft")
    wait_for_app(page)


def click_button(page, name: str) -> None:
    """Click the button called ``name`` and wait for the rerun."""
    page.get_by_role("button", name=name).first.click()
    wait_for_app(page)


def open_expander(page, title_start: str) -> None:
    """Open the expander whose title starts with ``title_start`` (no rerun)."""
    page.get_by_test_id("stExpander").filter(has_text=title_start).first.locator("summary").first.click()


def alerts(page) -> list[str]:
    """Texts of every st.info / st.warning / st.error / st.success box on the page."""
    return page.locator(ALERTS).all_inner_texts()


def main_text(page) -> str:
    """All visible text of the page's main area."""
    return page.get_by_test_id("stMain").inner_text()


def metric_values(page) -> dict[str, str]:
    """Label -> value of every st.metric on the page."""
    out = {}
    metrics = page.get_by_test_id("stMetric")
    for i in range(metrics.count()):
        metric = metrics.nth(i)
        label = metric.get_by_test_id("stMetricLabel").inner_text().strip()
        out[label] = metric.get_by_test_id("stMetricValue").inner_text().strip()
    return out


def click_radio_option(page, option: str) -> None:
    """Click the radio option labelled ``option`` wherever it is (for radio groups whose label is hidden)."""
    pattern = re.compile(rf"^\s*{re.escape(option)}\s*$")
    page.get_by_test_id("stRadioOption").filter(has_text=pattern).first.click()
    wait_for_app(page)


def radio_options(page, label: str) -> list[str]:
    """The option texts of the radio group labelled ``label``."""
    return [t.strip() for t in widget(page, "stRadio", label).first.get_by_test_id("stRadioOption").all_inner_texts()]


README_VIEW = {"width": 1400, "height": 1000}  # the README's pictures
PROJECTOR_VIEW = {"width": 1024, "height": 768}  # a classroom projector
BROWSE_VIEW = {"width": 1400, "height": 900}  # the tests' usual window


def readme_screenshot(page, name: str, height: int = README_VIEW["height"], start=None) -> None:
    """Save ``height`` pixels of the page, 1400 wide, as screenshots/<name> (the README's pictures).

    The picture starts at the top of the page, or at the element ``start`` (a locator) when given. Streamlit's
    main area scrolls by itself, so a "full page" screenshot would only show the window; the window is made
    taller for the picture instead.
    """
    _screenshot(page, name, {"width": README_VIEW["width"], "height": height}, start)


def projector_screenshot(page, name: str, start=None) -> None:
    """Turn projector mode on with the sidebar toggle and save the 1024 × 768 first screen as screenshots/<name>.

    The toggle keeps the page's state (a trained run, a chosen lesson), which reloading a ``?present=true``
    link would not. Projector mode stays on afterwards.
    """
    page.get_by_test_id("stSidebar").get_by_test_id("stWidgetLabel").filter(has_text="Projector mode").click()
    wait_for_app(page)
    _screenshot(page, name, PROJECTOR_VIEW, start)


def _screenshot(page, name: str, view: dict[str, int], start) -> None:
    page.set_viewport_size(view)
    if start is None:
        page.get_by_test_id("stMain").evaluate("main => main.scrollTo(0, 0)")
    else:
        start.evaluate("element => element.scrollIntoView({block: 'start'})")
    wait_for_app(page)
    SCREENSHOT_DIR.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / name))
    page.set_viewport_size(BROWSE_VIEW)


def metric(page, label: str):
    """The value element of the st.metric whose label is exactly ``label``."""
    pattern = re.compile(rf"^\s*{re.escape(label)}\s*$")
    box = page.get_by_test_id("stMetric").filter(has=page.get_by_test_id("stMetricLabel").filter(has_text=pattern))
    return box.first.get_by_test_id("stMetricValue")
