"""Positional Encodings page: renders every section, follows its controls and links, uses trained tables."""

from __future__ import annotations

import base64
import dataclasses
import json

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception, link_notices, opened_from_link, vega_heatmaps
from transformer_core import CausalLM, TransformerConfig
from transformer_core.positional import kinds
from ui.common import state

PAGE = "pages/positional.py"


def _traces(at, index: int = 0) -> list[dict]:
    return json.loads(at.get("plotly_chart")[index].proto.spec)["data"]


def _z(trace: dict) -> np.ndarray:
    z = trace["z"]
    if isinstance(z, dict):
        shape = tuple(int(n) for n in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(float)
    return np.array(z, dtype=float)


def _table(at) -> np.ndarray:
    """The sinusoidal table's values, from its Vega-Lite heatmap."""
    (table,) = [m["z"] for m in vega_heatmaps(at) if "Sinusoidal table" in json.dumps(m["spec"])]
    return table


@pytest.fixture
def page():
    return app_at(PAGE)


def test_table_follows_max_len_d_model_and_dims(page) -> None:
    assert_no_exception(page)
    assert _table(page).shape == (64, 32)
    assert len(_traces(page, 0)) == 4  # the default curves: dims 0, 1, 10, 20
    assert _z(_traces(page, 1)[0]).shape == (64, 64)  # the similarity matrix
    page.slider(key="pe.max_len").set_value(20)
    page.select_slider(key="pe.d_model").set_value(16).run()
    assert_no_exception(page)
    table = _table(page)
    assert table.shape == (20, 16)
    assert table[3, 0] == pytest.approx(np.sin(3), abs=1e-6) and table[3, 1] == pytest.approx(np.cos(3), abs=1e-6)
    assert page.multiselect(key="pe.dims_pick").value == [0, 1, 10]
    page.multiselect(key="pe.dims_pick").set_value([2, 3]).run()
    assert [t["name"] for t in _traces(page, 0)] == ["dim 2 (sin)", "dim 3 (cos)"]
    assert page.query_params["pe.dims"] in ("2,3", ["2,3"])
    for widget in (page.slider(key="pe.max_len"), page.select_slider(key="pe.d_model"),
                   page.select_slider(key="pe.base"), page.multiselect(key="pe.dims_pick")):
        assert widget.help


def test_the_tables_axes_number_the_middles_of_their_cells(page) -> None:
    page.select_slider(key="pe.d_model").set_value(8).run()
    (chart,) = [m["spec"] for m in vega_heatmaps(page) if "Sinusoidal table" in json.dumps(m["spec"])]
    x, y = (chart["layer"][0]["encoding"][axis]["axis"] for axis in ("x", "y"))
    assert x["values"] == [k + 0.5 for k in range(8)] and x["labelExpr"] == "datum.value - 0.5"  # 0 … 7, no 8
    assert y["values"] == [k + 0.5 for k in range(0, 64, 10)]  # every tenth of 64 positions


def test_every_section_renders(page) -> None:
    for section in ("relative", "beyond", "compare", "shuffle"):
        page.radio(key="pe.section").set_value(section).run()
        assert_no_exception(page)
        assert page.get("plotly_chart"), section


def _figure(text: str) -> float:
    """A figure as the page writes it ("5.98·10⁻⁸", "0.5") as a number."""
    mantissa, _times, power = text.partition("·10")
    return float(mantissa) * 10 ** int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")) or 0)


def test_rotation_and_shuffle_numbers(page) -> None:
    page.radio(key="pe.section").set_value("relative").run()
    assert _figure(page.metric[0].value) < 1e-6
    page.slider(key="pe.k").set_value(5).run()
    assert "PE(8) from the table" in page.dataframe[0].value.columns
    page.radio(key="pe.section").set_value("shuffle").run()
    blind, seeing = (_figure(m.value) for m in page.metric)
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
    assert _table(at).shape == (16, 32)
    assert at.multiselect(key="pe.dims_pick").value == [1]


def _tiny_lm(max_len: int) -> state.TrainedModel:
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=8, max_len=max_len, d_model=8, n_heads=2, n_layers=1, d_ff=16,
                               positional="learned")
    return state.TrainedModel("causal_lm", "char_lm", "Tiny text", CausalLM(config), config, step=7)


def _learned_notice(at) -> str:
    return next(i.value for i in at.info if "Learned** panels show" in i.value)


def test_compare_says_whose_learned_table_it_shows() -> None:
    at = app_at(None)
    at.session_state[state.TRAINED] = {"causal_lm": _tiny_lm(12)}
    at.switch_page(PAGE).run()
    at.radio(key="pe.section").set_value("compare").run()
    assert_no_exception(at)
    learned = _learned_notice(at)
    assert "Tiny text model (step 7)" in learned
    assert "12 positions × 8 dimensions" in learned and "do not change it" in learned
    vectors = _traces(at)
    assert [_z(t).shape for t in vectors] == [(64, 32), (12, 8)] + [(64, 32)] * (len(kinds()) - 2)
    assert "Learned (trained, 12 positions)" in json.dumps([json.loads(c.proto.spec) for c in at.get("plotly_chart")])

    at.radio(key="pe.learned_source").set_value("random").run()  # the random start instead, sized by the controls
    assert "random start" in _learned_notice(at)
    assert [_z(t).shape for t in _traces(at)] == [(64, 32)] * len(kinds())


def test_compare_offers_each_trained_table() -> None:
    at = app_at(None)
    vit = _tiny_lm(17)
    at.session_state[state.TRAINED] = {"causal_lm": _tiny_lm(12), "vision": dataclasses.replace(
        vit, family="vision", task_title="Shapes")}
    at.switch_page(PAGE).run()
    at.radio(key="pe.section").set_value("compare").run()
    assert at.radio(key="pe.learned_source").options == ["Random start", "Trained: Tiny text model (step 7)",
                                                         "Trained: Shapes model (step 7)"]
    at.radio(key="pe.learned_source").set_value("causal_lm").run()
    assert "Tiny text" in _learned_notice(at) and _z(_traces(at)[1]).shape == (12, 8)
    at.radio(key="pe.learned_source").set_value("vision").run()
    assert "Shapes" in _learned_notice(at) and _z(_traces(at)[1]).shape == (17, 8)


def test_compare_without_a_trained_table_follows_the_controls(page) -> None:
    page.radio(key="pe.section").set_value("compare").run()
    assert_no_exception(page)
    learned = _learned_notice(page)
    assert "random start" in learned and "do not change it" not in learned
    assert not [r for r in page.radio if r.key == "pe.learned_source"]  # nothing to choose from
    assert [_z(t).shape for t in _traces(page)] == [(64, 32)] * len(kinds())


def test_projector_mode_hides_the_base_control() -> None:
    at = app_at(None)
    at.session_state[state.PRESENTATION] = True
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert "pe.base" not in {w.key for w in at.select_slider}


def test_more_than_eight_link_dimensions_are_cut_with_a_notice() -> None:
    at = opened_from_link(PAGE, {"pe.dims": "0,1,2,3,4,5,6,7,8,9"})
    assert link_notices(at) == ["The link's setting pe.dims='0,1,2,3,4,5,6,7,8,9' was changed to 0,1,2,3,4,5,6,7: "
                                 "the chart draws at most 8 curves."]
    assert at.multiselect(key="pe.dims_pick").value == list(range(8))
    assert at.query_params["pe.dims"] in ("0,1,2,3,4,5,6,7", ["0,1,2,3,4,5,6,7"])
    fitting = opened_from_link(PAGE, {"pe.dims": "0,1,2,3,4,5,6,7"})
    assert not fitting.info
    fitting.multiselect(key="pe.dims_pick").set_value([3]).run()
    assert not fitting.info


def test_relative_and_shuffle_settings_come_from_the_link() -> None:
    at = opened_from_link(PAGE, {"pe.section": "relative", "pe.pos": "5", "pe.k": "4", "pe.pair": "2"})
    assert not at.info
    assert [at.slider(key=k).value for k in ("pe.pos", "pe.k", "pe.pair")] == [5, 4, 2]
    assert "PE(9) from the table" in at.dataframe[0].value.columns
    too_far = opened_from_link(PAGE, {"pe.section": "relative", "pe.max_len": "16", "pe.pos": "20", "pe.pair": "40"})
    assert link_notices(too_far) == [
        "The link's setting pe.pos='20' was changed to 13: with max_len 16, pos goes from 0 to 13.",
        "The link's setting pe.pair='40' was changed to 15: d_model 32 has pairs 0 to 15.",
    ]
    too_far.slider(key="pe.max_len").set_value(8).run()  # pos 13 no longer fits: moved without a notice
    assert_no_exception(too_far)
    assert too_far.slider(key="pe.pos").value == 5 and len(link_notices(too_far)) == 2
    shuffle = opened_from_link(PAGE, {"pe.section": "shuffle", "pe.shuffle_seed": "7", "pe.shuffle_text": "a b c d e"})
    assert shuffle.number_input(key="pe.shuffle_seed").value == 7
    assert shuffle.text_input(key="pe.shuffle_text").value == "a b c d e"
    assert "Original: `a b c d e`" in "\n".join(m.value for m in shuffle.markdown)


def test_share_link_reproduces_the_shuffle_test_and_colours() -> None:
    at = app_at(None)
    at.context["url"] = "https://school.example/positional"
    at.switch_page(PAGE).run()
    at.radio(key="pe.section").set_value("shuffle").run()
    at.text_input(key="pe.shuffle_text").set_value("one two three").run()
    at.number_input(key="pe.shuffle_seed").set_value(42).run()
    at.selectbox(key=state.COLORSCALE).set_value("Cividis").run()
    assert_no_exception(at)
    query = "pe.section=shuffle&pe.shuffle_text=one+two+three&pe.shuffle_seed=42&colors=Cividis"
    assert [c.value for c in at.code][:2] == [f"https://school.example/positional?{query}&lang=en",
                                              f"https://school.example/positional?{query}&present=true&lang=en"]


def test_alibi_shows_its_score_bias_in_compare_and_runs_past_max_len(page) -> None:
    page.radio(key="pe.section").set_value("compare").run()
    assert_no_exception(page)
    titles = [json.loads(c.proto.spec)["layout"]["annotations"][0]["text"] for c in page.get("plotly_chart")[2:3]]
    assert titles == ["ALiBi: head 1 of 8"]
    bias = _z(_traces(page, 2)[0])  # (64, 64): -m_1 · distance behind the query, m_1 = 1/2
    assert bias.shape == (64, 64) and bias[10, 10] == 0 and bias[10, 4] == pytest.approx(-3.0)
    page.radio(key="pe.section").set_value("beyond").run()
    assert_no_exception(page)
    rows = next(df.value for df in page.dataframe if "what happens" in df.value.columns)
    runs = {name: ok for name, ok in zip(rows["encoding"], rows[f"runs on {64 + 32} tokens"], strict=True)}
    assert runs == {"sinusoidal": "no", "learned": "no", "rotary (RoPE)": "no", "none": "yes",
                    "ALiBi": "yes"}


def test_the_table_draws_with_the_page_not_after_plotly_loads(page) -> None:
    """A Vega-Lite chart draws with the page; a Plotly chart first shows a blank grey box while its library loads."""
    assert not [c for c in page.get("plotly_chart") if c.proto.id and "pe.table" in c.proto.id]
    (chart,) = [c for c in page.get("vega_lite_chart") if "Sinusoidal table" in c.proto.spec]
    axes = json.loads(chart.proto.spec)["layer"][0]["encoding"]
    assert axes["x"]["axis"]["title"] == "dimension" and axes["y"]["axis"]["title"] == "position"
    page.slider(key="pe.max_len").set_value(256)
    page.select_slider(key="pe.d_model").set_value(256).run()  # 65,536 cells: Plotly's single image is faster
    assert_no_exception(page)
    assert [c for c in page.get("plotly_chart") if c.proto.id and "pe.table" in c.proto.id]
