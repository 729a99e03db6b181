"""Live Training page: a task's tuned settings apply however the task is chosen (link, menu, other pages)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer.host import limits
from tests.app.conftest import APP, DEFAULT_TIMEOUT, assert_no_exception, opened_from_link
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config
from ui.training import controls as tc

PAGE = "pages/training.py"


def _opened(**params: str) -> AppTest:
    return opened_from_link(PAGE, params)


def _tuned(name: str) -> dict:
    """The task's own recommendation, read from the task (not from the page's code)."""
    task = get_task(name)
    model, train = task.default_model_config(), default_train_config(task)
    return {tc.LAYERS: model.n_layers, tc.HEADS: model.n_heads, tc.D_MODEL: model.d_model, tc.LR: train.lr,
            tc.BATCH: train.batch_size, tc.STEPS: min(train.steps, limits().default_steps)}


def _settings(at: AppTest) -> dict:
    return {key: at.session_state[key] for key in _tuned("reverse")}


@pytest.mark.parametrize("name", ["vit_shapes", "char_lm"])
def test_a_link_to_a_task_gives_the_same_settings_as_the_menu(name):
    linked = _opened(task=name)
    menu = _opened()
    menu.selectbox(key=tc.TASK).set_value(name).run()
    assert_no_exception(menu)
    assert _settings(linked) == _settings(menu)
    tuned, got = _tuned(name), _settings(linked)
    assert {k: v for k, v in got.items() if k != tc.LR} == {k: v for k, v in tuned.items() if k != tc.LR}
    assert tuned[tc.LR] / 2 <= got[tc.LR] <= 2 * tuned[tc.LR]  # the offered rate nearest the task's
    assert linked.session_state[tc.TASK] == name
    assert "layers" not in linked.query_params and "lr" not in linked.query_params  # nothing to override


def test_a_links_own_settings_win_over_the_tasks():
    at = _opened(task="vit_shapes", layers="1", lr="0.01")
    assert at.session_state[tc.LAYERS] == 1 and at.session_state[tc.LR] == 0.01
    assert at.session_state[tc.BATCH] == _tuned("vit_shapes")[tc.BATCH]  # the rest is the task's


def test_a_share_link_reopens_the_same_settings():
    first = _opened(task="vit_shapes")
    first.select_slider(key=tc.LAYERS).set_value(2).run()  # the generic default, not the ViT's
    link = dict(first.query_params)
    assert link["layers"] == "2"
    again = _opened(**link)
    assert _settings(again) == _settings(first)


def test_the_vit_page_link_opens_the_shape_task():
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.run()
    at.switch_page("pages/vit.py")
    at.run()
    links = [p for p in at.get("page_link") if "Train a ViT" in p.proto.label]
    assert links and links[0].proto.query_string == "task=vit_shapes"
