"""A shared link opened as the very first request of a freshly started server shows the right page.

Streamlit runs a ``pages/`` script on its own until ``st.navigation`` has run once in the process; the pages'
``ensure_router()`` call sends such a visit back through ``app.py`` (see ``ui/common/router.py``).
"""

from __future__ import annotations

from tests.e2e.conftest import assert_no_exception, serve_app, wait_for_app


def test_first_request_deep_link_goes_through_the_router(browser) -> None:
    with serve_app() as base_url:  # a cold server: nobody has opened "/" yet
        context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 900})
        try:
            tab = context.new_page()
            tab.goto("/lessons?lesson=causal")
            wait_for_app(tab)
            tab.get_by_role("heading", name="Causal masks").first.wait_for()
            body = tab.inner_text("body")
            assert "Page not found" not in body
            assert "Projector mode" in body, "the shared sidebar from app.py is missing"
            assert "Attention Lab" in body, "the page menu from st.navigation is missing"
            assert_no_exception(tab)
        finally:
            context.close()
