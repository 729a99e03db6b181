"""Every combination of the *Switch heads off* controls, on every kind of model the Attention Lab shows.

Mode (zero, mean) × logit lens (off, on where the model offers it) × heads off (none after *Switch every head back
on*, one, several), for random weights, trained models of the Lab's families and small GPT-2 and BERT folders. Each
combination must draw the section without an exception (mean mode with no head off used to raise).
"""

from __future__ import annotations

import itertools
import json

import pytest

from tests.app.conftest import app_at, assert_no_exception, lab_with_trained
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, mark_special_tokens
from ui.attention import keys as av

PAGE = "pages/attention.py"
HEADS_OFF = {"none": {}, "one": {0: [1]}, "several": {0: [0, 1], 1: [0]}}  # layer -> heads (0-based)


def _trained(family: str, task_name: str, text: str):
    return lab_with_trained(family, task_name, {av.TEXT: text})[0]


def _pretrained(name: str, text: str):
    at = app_at(PAGE)
    at.radio(key=av.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=av.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    at.text_input(key=av.TEXT).set_value(text).run()
    return at


@pytest.fixture(name="folders")
def folders_fixture(tmp_path, monkeypatch):
    root = tmp_path / "models"
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=2)
    bert_folder(root / "tiny-bert", layers=2, heads=2)
    mark_special_tokens(root / "tiny-bert")
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    return root


def _chart_spec(at, key: str) -> dict:
    """The Plotly figure (as JSON) of the chart whose key contains ``key``."""
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id)


def _section_drawn(at) -> bool:
    return any(s.value == "Switch heads off" for s in at.subheader)


def _set_heads(at, name: str) -> None:
    if name == "none":
        next(b for b in at.button if b.label == "Switch every head back on").click().run()
        return
    for layer, heads in HEADS_OFF[name].items():
        at.button_group(key=f"{av.OFF_PICK}{layer}").set_value(heads).run()


def _every_combination(at, where: str) -> None:
    """Loop mode × lens × heads off on the page in ``at``; fail on the first exception, naming the combination.

    Each setting changes once per combination: for every mode and lens the heads go several → one → none, so "none"
    always goes through the reset button with heads off before it, and every combination is drawn and checked.
    """
    assert_no_exception(at)
    has_lens = any(t.key == av.LENS for t in at.toggle)
    order = ("several", "one", "none")
    assert set(order) == set(HEADS_OFF)
    for mode, lens in itertools.product(av.OFF_MODES, (False, True) if has_lens else (False,)):
        at.radio(key=av.OFF_MODE).set_value(mode).run()
        if has_lens:
            at.toggle(key=av.LENS).set_value(lens).run()
        for heads in order:
            _set_heads(at, heads)
            messages = [e.message for e in at.exception]
            assert not messages, f"{where}, mode {mode}, lens {lens}, heads off {heads}: {messages}"
            assert _section_drawn(at), f"{where}, mode {mode}, lens {lens}, heads off {heads}: no section"
            if has_lens and lens:
                assert any(c.proto.id and "attn.lens_chart" in c.proto.id for c in at.get("plotly_chart"))


def test_random_weights_take_every_combination() -> None:
    _every_combination(app_at(PAGE), "random weights")


@pytest.mark.parametrize(("family", "task", "text"), [("causal_lm", "induction", "ABCAB"),
                                                      ("seq2seq", "reverse", "31415")])
@pytest.mark.slow
def test_trained_models_take_every_combination(family: str, task: str, text: str) -> None:
    _every_combination(_trained(family, task, text), f"trained {family}")


@pytest.mark.parametrize(("name", "text"), [("tiny-gpt2", "the cat sat on the"),
                                            ("tiny-bert", "the cat sat on the [MASK]")])
@pytest.mark.slow
def test_pretrained_models_take_every_combination(folders, name: str, text: str) -> None:
    _every_combination(_pretrained(name, text), name)
