"""One page registry: every script in pages/ is listed once, starts with the shared preamble, and shows on Home."""

from __future__ import annotations

import ast

from tests.app.conftest import ROOT, assert_no_exception
from transformer_core import positional
from ui.pages import PAGES, page_info


def preamble_call(path: str) -> ast.Call | None:
    """The page script's ``open_page(...)`` call, if it has one."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "open_page":
            return node
    return None


def test_every_page_script_is_registered_once():
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
    assert sorted(p.path for p in PAGES) == scripts
    for field in ("name", "url_path", "title"):
        values = [getattr(p, field) for p in PAGES]
        assert len(set(values)) == len(values), field


def test_every_page_starts_with_the_shared_preamble_under_its_own_name():
    for info in PAGES:
        call = preamble_call(info.path)
        assert call is not None, f"{info.path} does not call open_page"
        name = call.args[0]
        assert isinstance(name, ast.Constant) and name.value == info.name, info.path


def test_page_scripts_leave_routing_and_url_binding_to_the_preamble():
    for info in PAGES:
        source = (ROOT / info.path).read_text(encoding="utf-8")
        for call in ("ensure_router(", "bind_url(", "share_link(", "push_url("):
            assert call not in source, f"{info.path} calls {call}) itself"


def test_unknown_page_names_are_refused_with_the_known_ones():
    try:
        page_info("nowhere")
    except KeyError as err:
        assert "attention" in str(err) and "nowhere" in str(err)
    else:
        raise AssertionError("page_info accepted an unknown page")


def test_home_lists_every_other_page_from_the_registry(app_at):
    at = app_at()
    assert_no_exception(at)
    assert at.title[0].value == page_info("home").heading
    shown = " ".join(m.value for m in at.markdown)
    for info in PAGES:
        if info.name != "home":
            assert info.blurb and info.blurb in shown, info.name


def test_home_and_the_positional_blurb_name_every_registered_encoding(app_at):
    at = app_at()
    shown = " ".join(m.value for m in at.markdown)
    blurb = page_info("positional").blurb
    for kind in positional.kinds():
        title = positional.get(kind).title
        assert title in blurb, title
        if positional.get(kind).acts != "nothing":
            assert f"{title} /" in shown or f"/ {title} positions" in shown, title  # the engine's summary
    assert "ALiBi" in blurb and "ALiBi" in shown


def test_the_navigation_follows_the_registry(app_at):
    at = app_at(page_info("positional").path)
    assert_no_exception(at)
    assert at.title[0].value == page_info("positional").heading


def test_home_names_every_lesson_of_the_registry(app_at):
    from ui.lessons.texts import LESSONS

    at = app_at()
    shown = " ".join(m.value for m in at.markdown)
    for lesson in LESSONS:
        assert lesson.title in shown, lesson.title
    assert f"{len(LESSONS)} short guided scenarios" in shown
