"""On a phone (its browser says "Mobi"), Live Training and a class link show the compact first screen: one head's
heatmap, large, rather than a grid of every layer and head three times wider than the screen."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.app.conftest import assert_no_exception
from tests.app.test_live_training import live_at
from ui.common import theme

PIXEL = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 "
         "Mobile Safari/537.36")
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
          "Version/18.0 Mobile/15E148 Safari/604.1")
IPAD = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari"
LAPTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"


@pytest.mark.parametrize(("agent", "expected"), [(PIXEL, True), (IPHONE, True), (IPAD, False), (LAPTOP, False),
                                                 (None, False)])
def test_a_phone_is_known_by_its_browsers_word(monkeypatch, agent, expected):
    headers = {} if agent is None else {"User-Agent": agent}
    monkeypatch.setattr(theme.st, "context", SimpleNamespace(headers=headers))
    assert theme.phone() is expected


def test_live_training_on_a_phone_shows_the_first_screen(monkeypatch):
    wide = live_at()
    assert any(r.label == "Attention shown" for r in wide.radio)  # a laptop: every layer × head, a radio above
    monkeypatch.setattr(theme, "phone", lambda: True)
    at = live_at()
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert not any(r.label == "Attention shown" for r in at.radio)  # the first screen's drop-down instead
    assert any("Every layer × head" in e.label for e in at.expander)  # the grid folded below


@pytest.mark.parametrize(("lang", "hidden"), [("en", "class code box"), ("de", "every box")])
def test_streamlits_english_box_hints_are_left_out_of_other_languages_and_the_class_code_box(lang, hidden):
    from tests.app.conftest import app_at

    at = app_at("pages/training.py", query={"lang": lang})
    assert_no_exception(at)
    sheets = " ".join(h.proto.body for h in at.get("html"))
    assert '.st-key-class-code [data-testid="InputInstructions"] { display: none; }' in sheets or lang != "en"
    everywhere = '\n[data-testid="InputInstructions"] { display: none; }' in sheets
    assert everywhere == (hidden == "every box")  # "Press Enter to apply" stays on an English page's boxes
    assert at.text_input(key="live.watch.code") is not None  # the box the rule names is on the page
