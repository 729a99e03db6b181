"""Every widget on the four explorer pages explains itself: each one has a non-empty help text (the ⓘ tooltip).

Each page is walked through its sections, views and model sources, so widgets that only appear in one of them
are checked too. Buttons and download buttons carry help like any other widget.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Widget

from tests.app.conftest import app_at, assert_no_exception
from transformer_core.tasks import get_task
from ui.common import state

Step = Callable[[AppTest], object]


def _missing_help(at: AppTest) -> set[str]:
    """Widgets of the page (not the shared sidebar) without help text, as 'type label (key)'."""
    return {f"{node.type} {getattr(node, 'label', '')!r} ({node.key})" for node in at.main
            if isinstance(node, Widget) and not (getattr(node, "help", "") or "").strip()}


def _walk(page: str, steps: list[Step], *, trained: dict | None = None) -> tuple[set[str], int]:
    """Open ``page``, run each step, and collect the widgets without help text seen on the way."""
    at = app_at(None)
    if trained:
        at.session_state[state.TRAINED] = trained
    at.switch_page(page).run()
    missing, seen = _missing_help(at), sum(isinstance(n, Widget) for n in at.main)
    for step in steps:
        step(at)
        at.run()
        assert_no_exception(at)
        missing |= _missing_help(at)
        seen += sum(isinstance(n, Widget) for n in at.main)
    return missing, seen


def _set(kind: str, key: str, value) -> Step:
    return lambda at: getattr(at, kind)(key=key).set_value(value)


def _trained_text_models() -> dict:
    task = get_task("reverse", seq_len=6)
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config()).eval()
    return {"seq2seq": state.TrainedModel("seq2seq", "reverse", "Reverse", model, model.config, step=5, task=task)}


def _trained_vit() -> dict:
    task = get_task("vit_shapes")
    config = task.default_model_config()
    model = task.build_model(config).eval()
    return {"vision": state.TrainedModel("vision", task.name, task.title, model, config, step=5, task=task)}


WALKS = {
    "attention": ("pages/attention.py", [
        _set("toggle", "attn.show_w", True), _set("toggle", "attn.show_wo", True),
        _set("radio", "attn.view", "head"), _set("radio", "attn.view", "grid"), _set("radio", "attn.view", "lines"),
        _set("selectbox", "attn.heads", 16), _set("radio", "attn.view", "steps"),
    ], None),
    "attention, trained": ("pages/attention.py", [
        _set("radio", "attn.source", "seq2seq"), _set("text_input", "attn.text", "31415"),
    ], _trained_text_models),
    "positional": ("pages/positional.py", [
        _set("radio", "pe.section", section) for section in ("relative", "beyond", "compare", "shuffle")
    ], None),
    "vit": ("pages/vit.py", [_set("radio", "vit.source", "upload")], None),
    "vit, trained": ("pages/vit.py", [
        _set("radio", "vit.source", "task"), _set("radio", "vit.weights", "random"),
    ], _trained_vit),
    "builder": ("pages/builder.py", [
        _set("radio", "mb.kind", kind) for kind in ("encoder", "seq2seq", "vit", "decoder")
    ], None),
}


@pytest.mark.parametrize("name", list(WALKS))
def test_every_widget_has_help_text(name: str) -> None:
    page, steps, trained = WALKS[name]
    missing, seen = _walk(page, steps, trained=trained() if trained else None)
    assert seen > 5 * (len(steps) + 1), f"{name}: too few widgets were found ({seen}); is the walk still right?"
    assert not missing, f"{name}: widgets without help text: {sorted(missing)}"
