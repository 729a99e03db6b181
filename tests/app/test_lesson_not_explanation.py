"""The lesson "Attention is not explanation", walked step by step: each step waits for a guess, reveals on its
button, and shows the model's own numbers (answer, attention, attribution, patching); then the lesson's reveal."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.i18n import using_language
from explorer.lessons import not_explanation as ne
from tests.app.conftest import app_at, assert_no_exception
from tests.app.test_attention_lab import _z
from ui.lessons import not_explanation as view
from ui.lessons.frame import LESSON

PAGE = "pages/lessons.py"
KEY = "not_explanation"


def _key(name: str) -> str:
    return f"lessons.{KEY}.{name}"


@pytest.fixture(scope="module", name="at")
def at_fixture() -> AppTest:
    at = app_at(PAGE)
    at.segmented_control(key=LESSON).set_value(KEY).run()
    assert_no_exception(at)
    return at


def _figure(at: AppTest, name: str) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.proto.id and _key(name) in c.proto.id)
    return json.loads(chart.proto.spec)


def _reveal(at: AppTest, step: int, guess: int) -> AppTest:
    button = at.button(key=_key(f"show{step}"))
    assert button.disabled  # no reveal before a guess
    at.radio(key=_key(f"guess{step}")).set_value(guess).run()
    at.button(key=_key(f"show{step}")).click().run()
    assert_no_exception(at)
    return at


def test_four_steps_wait_for_a_guess(at):
    assert [s.value for s in at.subheader if s.value.startswith("Step")] == [f"Step {i}" for i in range(1, 5)]
    assert sum("Make your guess first" in c.value for c in at.caption) == 4
    assert not at.get("plotly_chart") and not at.metric


def test_every_step_reveals_the_models_numbers(at):
    model = ne.agreement_model()
    _reveal(at, 1, 0)  # "is"
    assert at.metric[0].label == "“is”" and at.metric[0].value == f"{ne.next_word(model)['is']:.1%}"
    assert any("You guessed right" in s.value for s in at.success)

    _reveal(at, 2, 4)  # "cabinets": wrong, it looks at the first "the"
    weights = _z(_figure(at, "attention")["data"][0])
    np.testing.assert_allclose(weights, ne.attention_map(model), atol=1e-6)
    assert any("Not what you guessed" in i.value and "the (1)" in i.value for i in at.info)

    _reveal(at, 3, 1)  # "key"
    bars = {t["name"]: np.array(t["customdata"]) for t in _figure(at, "attribution")["data"]}
    np.testing.assert_allclose(bars["gradient × input"], ne.attributions(model, "grad_x_input").values, rtol=1e-5)
    np.testing.assert_allclose(bars["attention"], ne.attention_map(model)[-1], rtol=1e-5)
    assert int(np.argmax(bars["integrated gradients"])) == 1 != int(np.argmax(bars["attention"]))
    assert any("Both methods put most of the credit on “key”" in s.value for s in at.success)

    _reveal(at, 4, 0)  # "the → a": wrong
    table = at.dataframe[-1].value
    assert list(table["next word"]) == ["is", "is", "are", "is"]  # the original sentence first
    restored = _z(_figure(at, "patching")["data"][0])
    np.testing.assert_allclose(restored, [[0, 1, 0, 0, 0]], atol=1e-5)
    assert any("Only changing “key” flips the answer" in i.value for i in at.info)


def test_the_lessons_reveal_after_the_steps(at):
    at.radio(key=_key("answer")).set_value(1).run()
    at.button(key=_key("reveal")).click().run()
    assert_no_exception(at)
    assert any(s.value.startswith("Right") for s in at.success)
    assert any("attention sink" in m.value for m in at.markdown)


def test_labels_tell_the_two_thes_apart():
    assert view.LABELS == ["the (1)", "key", "to", "the (4)", "cabinets"]
    assert view.CHANGE_LABELS[0] == "the (1) → a"


def test_projector_mode_keeps_the_pictures_and_drops_the_long_captions():
    at = app_at(PAGE, query={"lesson": KEY, "present": "true"})
    assert_no_exception(at)
    _reveal(at, 3, 1)
    _reveal(at, 4, 1)
    assert _figure(at, "attribution")["layout"]["height"] == 300
    assert _figure(at, "patching")["data"][0]
    assert not any("Integrated gradients' values add up" in c.value for c in at.caption)
    assert any("Only changing “key” flips the answer" in s.value for s in at.success)


def test_the_lessons_numbers_are_written_as_the_language_writes_them():
    at = app_at(PAGE, query={"lang": "de"})
    with using_language("de"):  # AppTest formats picked values outside the session's run
        at.segmented_control(key=LESSON).set_value(KEY).run()
        _reveal(at, 3, 1)
        _reveal(at, 4, 0)
    scores = list(at.dataframe[-1].value.iloc[:, -1])
    assert all(re.fullmatch(r"-?\d+,\d\d", s) for s in scores), scores  # "8,20" as the caption writes it
    captions = [c.value for c in at.caption]
    assert not [c for c in captions if re.search(r"\d\.\d|\de-\d", c)], captions  # no "2.4e-05", no "8.2"
