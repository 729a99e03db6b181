"""Positional Encodings page: renders every section, follows its controls and links, uses trained tables."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception
from transformer_core import CausalLM, TransformerConfig
from ui import state

PAGE = "pages/positional.py"


def _traces(at, index: int = 0) -> list[dict]:
    return json.loads(at.get("plotly_chart")[index].proto.spec)["data"]


def _z(trace: dict) -> np.ndarray:
    z = trace["z"]
    if isinstance(z, dict):
        shape = tuple(int(n) for n in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(float)
    return np.array(z, dtype=float)


@pytest.fixture
def page():
    return app_at(PAGE)


def test_table_follows_max_len_d_model_and_dims(page) -> None:
    assert_no_exception(page)
    assert _z(_traces(page)[0]).shape == (64, 32)
    assert len(_traces(page, 1)) == 4  # the default curves: dims 0, 1, 10, 20
    assert _z(_traces(page, 2)[0]).shape == (64, 64)  # the similarity matrix
    page.slider(key="pe.max_len").set_value(20)
    page.select_slider(key="pe.d_model").set_value(16).run()
    assert_no_exception(page)
    table = _z(_traces(page)[0])
    assert table.shape == (20, 16)
    assert table[3, 0] == pytest.approx(np.sin(3), abs=1e-6) and table[3, 1] == pytest.approx(np.cos(3), abs=1e-6)
    assert page.multiselect(key="pe.dims_pick").value == [0, 1, 10]
    page.multiselect(key="pe.dims_pick").set_value([2, 3]).run()
    assert [t["name"] for t in _traces(page, 1)] == ["dim 2 (sin)", "dim 3 (cos)"]
    assert page.query_params["pe.dims"] in ("2,3", ["2,3"])
    for widget in (page.slider(key="pe.max_len"), page.select_slider(key="pe.d_model"),
                   page.select_slider(key="pe.base"), page.multiselect(key="pe.dims_pick")):
        assert widget.help


def test_every_section_renders(page) -> None:
    for section in ("relative", "beyond", "compare", "shuffle"):
        page.radio(key="pe.section").set_value(section).run()
        assert_no_exception(page)
        assert page.get("plotly_chart"), section


def test_rotation_and_shuffle_numbers(page) -> None:
    page.radio(key="pe.section").set_value("relative").run()
    assert float(page.metric[0].value) < 1e-6
    page.slider(key="pe.k").set_value(5).run()
    assert "PE(8) from the table" in page.dataframe[0].value.columns
    page.radio(key="pe.section").set_value("shuffle").run()
    blind, seeing = (float(m.value) for m in page.metric)
    assert blind < 1e-5 < 1e-2 < seeing
    page.text_input(key="pe.shuffle_text").set_value("solo").run()
    assert any("at least two words" in i.value for i in page.info)


def test_beyond_max_len_shows_the_learned_error(page) -> None:
    page.radio(key="pe.section").set_value("beyond").run()
    assert any("max_len=64" in c.value for c in page.code)
    assert _z(_traces(page)[0]).shape == (64 + 32, 32)


def test_link_values_are_applied_or_explained() -> None:
    at = app_at(None)
    at.query_params.update({"pe.d_model": "7", "pe.max_len": "16", "pe.dims": "1,99,x", "pe.section": "table"})
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    notices = " ".join(i.value for i in at.info)
    assert "pe.d_model" in notices and "99" in notices
    assert _z(_traces(at)[0]).shape == (16, 32)
    assert at.multiselect(key="pe.dims_pick").value == [1]


def test_compare_uses_a_trained_learned_table() -> None:
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=8, max_len=12, d_model=8, n_heads=2, n_layers=1, d_ff=16,
                               positional="learned")
    model = CausalLM(config)
    at = app_at(None)
    at.session_state[state.TRAINED] = {"causal_lm": state.TrainedModel("causal_lm", "char_lm", "Tiny text", model,
                                                                       config, step=7)}
    at.switch_page(PAGE).run()
    at.radio(key="pe.section").set_value("compare").run()
    assert_no_exception(at)
    assert any("Tiny text model, trained 7 steps" in c.value for c in at.caption)
    vectors = _traces(at)
    assert [_z(t).shape for t in vectors] == [(64, 32), (12, 8), (64, 32), (64, 32)]


def test_projector_mode_hides_the_base_control() -> None:
    at = app_at(None)
    at.session_state[state.PRESENTATION] = True
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert "pe.base" not in {w.key for w in at.select_slider}
