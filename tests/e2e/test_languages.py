"""A class in its own language, in the browser: a browser set to German, Spanish or Chinese opens the app in that
language; the teacher's class link carries it, and a student whose browser is English follows the link into the
teacher's language; the student may still pick another in the sidebar, and a reload keeps that choice; a choice
made before the language changes stays chosen, shown in the new language, and a later click keeps it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from explorer.i18n import _, get, using_language
from tests.e2e.conftest import APP_RUN_TIMEOUT_MS, assert_no_exception, wait_for_app
from ui.common.charts import ATTENTION_SCALES

pytestmark = pytest.mark.browser

BROWSER_LOCALES = {"de": "de-DE", "es": "es-ES", "zh-CN": "zh-CN"}  # what each browser says it speaks
RUN = "/training?task=reverse&steps=2000&seed=5"  # a run that trains long enough for a student to join it


def tr(code: str, message: str) -> str:
    """``message`` as the app shows it in language ``code``."""
    with using_language(code):
        return _(message)


def _tab(browser, base_url: str, locale: str):
    context = browser.new_context(base_url=base_url, locale=locale, viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(APP_RUN_TIMEOUT_MS)
    return context, tab


@pytest.mark.parametrize("code", list(BROWSER_LOCALES))
def test_the_browsers_language_opens_the_app_and_a_class_link_keeps_it(browser, warm_app, code):
    contexts = []
    try:
        context, teacher = _tab(browser, warm_app, BROWSER_LOCALES[code])
        contexts.append(context)
        teacher.goto("/")
        wait_for_app(teacher)
        nav = teacher.get_by_test_id("stSidebarNav")
        for title in ("Attention Lab", "Live Training", "Lessons"):
            expect(nav.get_by_text(tr(code, title), exact=True)).to_be_visible()
        picker = teacher.get_by_test_id("stSidebar").get_by_role("combobox", name="🌐 " + tr(code, "Language"))
        expect(picker).to_have_value(get(code).name)
        expect(teacher.locator("html")).to_have_attribute("lang", code)  # screen readers and CJK glyphs follow it
        assert_no_exception(teacher)

        teacher.goto(RUN)
        wait_for_app(teacher)
        expect(teacher.locator("[data-testid=stMain] h1").first).to_contain_text(tr(code, "Live Training"))
        teacher.get_by_text("📡 " + tr(code, "Share live with a class")).click()
        wait_for_app(teacher)
        link = teacher.get_by_test_id("stCode").filter(has_text="class=").first.inner_text().strip()
        assert re.search(rf"[?&]lang={re.escape(code)}(&|$)", link), link

        context, student = _tab(browser, warm_app, "en-US")
        contexts.append(context)
        student.goto(link[link.index("/training"):])
        heading = student.locator("[data-testid=stMain] h1").first
        expect(heading).to_contain_text(tr(code, "Live Training"))
        expect(student.locator("html")).to_have_attribute("lang", code)
        assert_no_exception(student)

        if code == "de":  # the student picks English: the page follows, and a reload keeps it
            student.get_by_test_id("stSidebar").get_by_role("combobox", name="🌐 " + tr(code, "Language")).click()
            student.get_by_role("option", name="English").click()
            expect(heading).to_contain_text("Live Training")
            expect(student).to_have_url(re.compile(r"[?&]lang=en(&|$)"))
            expect(student.locator("html")).to_have_attribute("lang", "en")
            student.reload()
            expect(student.locator("[data-testid=stMain] h1").first).to_contain_text("Live Training")
    finally:
        for context in contexts:
            context.close()


def test_a_choice_stays_chosen_when_the_language_changes(page):
    page.goto("/attention")
    wait_for_app(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text(ATTENTION_SCALES["stretch"], exact=True).click()
    wait_for_app(page)
    sidebar.get_by_role("combobox", name="🌐 Language").click()
    page.get_by_role("option", name=get("de").name).click()
    wait_for_app(page)
    # The browser keeps a radio's choice as its label: the English one is among none of the German labels.
    stretch = sidebar.get_by_role("radio", name=tr("de", ATTENTION_SCALES["stretch"]))
    expect(stretch).to_be_checked()
    sidebar.get_by_text("SVG", exact=True).click()  # any click sends every choice back to the server
    wait_for_app(page)
    expect(sidebar.get_by_role("radio", name="SVG")).to_be_checked()
    expect(stretch).to_be_checked()
    assert_no_exception(page)
