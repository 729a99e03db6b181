"""Every page's first screen in German (about 30% longer than English), Spanish and Chinese on a 1024 × 768
projector: the page is in that language, nothing runs off the side, no button is squeezed into a column of broken
words, no label is cut. Screenshots are saved under screenshots/ (git-ignored) for a person to look at."""

from __future__ import annotations

import pytest

from explorer.i18n import _, using_language
from tests.e2e.actions import open_page
from tests.e2e.conftest import assert_no_exception, save_screenshot
from ui.pages import PAGES

PROJECTOR = {"width": 1024, "height": 768}
MAX_BUTTON_LINES = 2  # a button's text may wrap once; more reads as a column of broken words

# Per visible button in the main area: its text, its height and its text's line height.
BUTTONS = """() => [...document.querySelectorAll('[data-testid=stMain] button')]
    .filter(b => b.offsetParent !== null && b.innerText.trim() && b.getBoundingClientRect().top < innerHeight)
    .map(b => { const p = b.querySelector('p') || b; const style = getComputedStyle(p);
                return {text: b.innerText.trim(), lines: p.getBoundingClientRect().height /
                        (parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.4)}; })"""
# Widget and metric labels cut off by their box (no ellipsis allowed on a label a class has to read).
CUT_LABELS = """() => [...document.querySelectorAll(
        '[data-testid=stMain] [data-testid=stWidgetLabel] p, [data-testid=stMain] [data-testid=stMetricLabel] *')]
    .filter(p => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 2).map(p => p.innerText)"""


def _heading(page_info, code: str) -> str:
    with using_language(code):
        return _(page_info.title) if not page_info.headline else "Transformer Explorer"


@pytest.mark.parametrize("code", ["de", "es", "zh-CN"])
@pytest.mark.parametrize("info", PAGES, ids=lambda info: info.name)
def test_the_first_screen_fits_a_projector_in_a_longer_language(page, info, code):
    page.set_viewport_size(PROJECTOR)
    open_page(page, f"/{info.url_path}?present=true&lang={code}")
    assert_no_exception(page)
    heading = page.locator("[data-testid=stMain] h1").first
    assert _heading(info, code) in heading.inner_text()
    save_screenshot(page, f"projector_{info.name}_{code}.png")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - innerWidth")
    assert overflow <= 1, f"{info.name} in {code} runs {overflow} px off the side"
    squeezed = [b for b in page.evaluate(BUTTONS) if b["lines"] > MAX_BUTTON_LINES + 0.5]
    assert not squeezed, f"{info.name} in {code}: buttons wrapped into columns: {squeezed}"
    cut = page.evaluate(CUT_LABELS)
    assert not cut, f"{info.name} in {code}: labels cut off: {cut}"
