"""The app starts, shows its Home page in a real browser and raises nothing."""

from __future__ import annotations

from tests.e2e.conftest import assert_no_exception, save_screenshot, wait_for_app


def test_home_page_renders(page):
    page.goto("/")
    wait_for_app(page)

    title = page.locator("[data-testid=stMain] h1").first
    title.wait_for(state="visible")
    assert "Transformer Explorer" in title.inner_text()
    assert_no_exception(page)
    save_screenshot(page, "smoke_home.png")
