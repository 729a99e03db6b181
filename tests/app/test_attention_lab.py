"""Attention Lab page: renders, follows its controls, handles bad text, links and trained models."""

from __future__ import annotations

import base64
import dataclasses
import json
import re

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception, plotly_download_formats, vega_heatmaps
from transformer_core import TransformerConfig, divisors
from transformer_core.tasks import get_task
from ui.attention import lab_run
from ui.common import charts, state

PAGE = "pages/attention.py"


def _heatmaps(at) -> list[dict]:
    """Every heatmap trace of every plotly chart on the page, then every map of its Vega-Lite heatmaps."""
    traces = []
    for chart in at.get("plotly_chart"):
        traces += [t for t in json.loads(chart.proto.spec)["data"] if t["type"] == "heatmap"]
    return traces + vega_heatmaps(at)


def _z(trace: dict) -> np.ndarray:
    """A heatmap's values; plotly writes numpy arrays as base64 with dtype and shape."""
    z = trace["z"]
    if isinstance(z, np.ndarray):
        return z
    if isinstance(z, dict):
        shape = tuple(int(n) for n in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(float)
    return np.array(z, dtype=float)


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.fixture(scope="module")
def lab():
    """One page load shared by the tests that only read the default view."""
    return app_at(PAGE)


def test_default_view_shows_every_step(lab) -> None:
    assert_no_exception(lab)
    assert "0·the" in _markdown(lab) and "5·mat" in _markdown(lab)
    # X, Q|K|V, QKᵀ, scaled, masked, softmax, ×V, concat, W_O; then h', norm, up, activation, down, output
    assert len(lab.get("vega_lite_chart")) == 9 + 6
    assert lab.radio(key="attn.layer").options == ["1", "2"]
    assert lab.radio(key="attn.head").options == ["1", "2"]
    assert len(lab.latex) >= 9
    for widget in (*lab.selectbox, *lab.radio, lab.slider(key="attn.layers"), lab.text_input(key="attn.text")):
        assert widget.help, f"{widget.label} has no help text"


def test_grid_follows_heads_and_layers() -> None:
    at = app_at(PAGE)
    at.radio(key="attn.view").set_value("grid").run()
    assert len(_heatmaps(at)) == 2 * 2
    at.selectbox(key="attn.heads").set_value(4).run()
    assert_no_exception(at)
    assert len(_heatmaps(at)) == 2 * 4
    assert at.radio(key="attn.head").options == ["1", "2", "3", "4"]
    at.slider(key="attn.layers").set_value(3).run()
    assert len(_heatmaps(at)) == 3 * 4
    at.selectbox(key="attn.d_model").set_value(8).run()
    assert at.selectbox(key="attn.heads").options == [str(d) for d in divisors(8)]
    assert {b.label for b in at.get("download_button")} == {"CSV (all)", "NPY (all)"}


def test_lines_view_draws_one_query_when_focused() -> None:
    at = app_at(PAGE)
    at.radio(key="attn.view").set_value("lines").run()
    assert_no_exception(at)
    segments = [t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if t.get("mode") == "lines"]
    all_lines = sum(len(t["x"]) for t in segments)
    at.selectbox(key="attn.lines_focus").set_value(0).run()
    segments = [t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if t.get("mode") == "lines"]
    focused = sum(len(t["x"]) for t in segments)
    assert 0 < focused < all_lines


def test_padding_mask_gives_pads_zero_attention() -> None:
    at = app_at(PAGE)
    at.radio(key="attn.view").set_value("head")
    at.radio(key="attn.mask").set_value("padding").run()
    assert_no_exception(at)
    assert "6·<pad>" in _markdown(at) and "7·<pad>" in _markdown(at)
    weights = _z(_heatmaps(at)[0])
    assert weights.shape == (8, 8)
    assert np.allclose(weights[:, 6:], 0) and np.allclose(weights.sum(-1), 1)
    assert "0.000" in at.success[0].value
    assert {b.label for b in at.get("download_button")} == {"PNG", "SVG", "CSV", "NPY"}


def test_causal_mask_hides_the_future() -> None:
    at = app_at(PAGE)
    at.radio(key="attn.mask").set_value("causal").run()
    maps = _heatmaps(at)  # X, Q, K, V, S, S/√d, masked, A, ...
    masked, softmax = maps[6], _z(maps[7])
    assert np.isnan(np.triu(_z(masked), 1)[np.triu_indices(6, 1)]).all()
    assert masked["text"][0][1] == "-∞"
    assert np.allclose(np.triu(softmax, 1), 0) and np.allclose(softmax.sum(-1), 1)



def test_softmax_example_matches_the_drawn_weight(lab) -> None:
    """Step 6 writes one weight out in full; its value is the one in the softmax heatmap."""
    caption = next(c.value for c in lab.caption if c.value.startswith("Each row sums to 1"))
    assert "A[mat, the] = exp(" in caption
    written = float(caption.rsplit("=", 1)[1])
    softmax = _z(_heatmaps(lab)[7])
    assert written == pytest.approx(softmax[-1, 0], abs=5e-4)

BAD_TEXT = [
    ("sentence", "   ", "Type a few words"),
    ("sentence", " ".join(["pasted paragraph"] * 60), "only the first 48"),  # 1,019 characters
    ("digits", "31a4b", "'a' 'b'"),
    ("protein", "MKT*AY", "'*'"),
]


def test_bad_text_gets_a_friendly_message() -> None:
    at = app_at(PAGE)
    for kind, text, expected in BAD_TEXT:
        at.selectbox(key="attn.kind").set_value(kind)
        assert at.text_input(key="attn.text").proto.max_chars >= len(text)  # the browser drops a longer paste
        at.text_input(key="attn.text").set_value(text).run()
        assert_no_exception(at)
        assert any(expected in i.value for i in at.info), (kind, text)
    at.selectbox(key="attn.kind").set_value("sentence")
    at.text_input(key="attn.text").set_value("naïve café 👍🏽 日本").run()
    assert_no_exception(at)
    assert "2·👍🏽" in _markdown(at) and "3·日本" in _markdown(at)
    words = ["القطة", "جلست", "على", "السجادة"]
    at.text_input(key="attn.text").set_value(" ".join(words)).run()
    chips = re.findall(r"`([^`]*)`", _markdown(at))  # each chip isolated: right-to-left words keep their numbers
    assert chips == [f"\u2066{i}·{word}\u2069" for i, word in enumerate(words)]


def test_settings_round_trip_through_the_url() -> None:
    at = app_at(PAGE)
    at.selectbox(key="attn.heads").set_value(4)
    at.radio(key="attn.mask").set_value("causal").run()
    assert at.query_params["attn.heads"] in ("4", ["4"]) and at.query_params["attn.mask"] in ("causal", ["causal"])

    linked = app_at(None)
    linked.query_params.update({"attn.heads": "5", "attn.layers": "3", "attn.text": "one two three"})
    linked.switch_page(PAGE).run()
    assert_no_exception(linked)
    assert linked.slider(key="attn.layers").value == 3
    assert linked.selectbox(key="attn.heads").value == 2
    assert any("attn.heads" in i.value for i in linked.info)
    assert "2·three" in _markdown(linked)


def _link_notices(at) -> list[str]:
    return [i.value for i in at.info if i.value.startswith("The link's setting")]


def test_link_values_that_do_not_fit_are_changed_with_a_notice() -> None:
    at = app_at(None)
    at.query_params.update({"attn.heads": "16", "attn.head": "12", "attn.layer": "3"})
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert _link_notices(at) == ["The link's setting attn.layer='3' was changed to 2: the model has 2 layers."]
    assert at.selectbox(key="attn.heads").value == 16 and at.radio(key="attn.layer").value == 2
    assert at.selectbox(key="attn.head").value == 12  # 16 heads: a drop-down instead of radio buttons
    linked = app_at(None)
    linked.query_params["attn.head"] = "12"
    linked.switch_page(PAGE).run()
    assert _link_notices(linked) == ["The link's setting attn.head='12' was changed to 2: the model has 2 heads."]
    too_many = app_at(None)
    too_many.query_params.update({"attn.heads": "32", "attn.d_model": "128"})
    too_many.switch_page(PAGE).run()
    assert_no_exception(too_many)
    assert _link_notices(too_many) == ["The link's setting attn.heads='32' was ignored: it must be one of 1, 2, 4, "
                                       "8, 16. Using the default, 2."]
    assert too_many.selectbox(key="attn.heads").value == 2


def test_heads_are_capped_and_drawn_in_colour_blind_safe_styles() -> None:
    at = app_at(PAGE)
    at.selectbox(key="attn.d_model").set_value(128).run()
    assert at.selectbox(key="attn.heads").options == ["1", "2", "4", "8", "16"]  # not 32, 64 or 128
    at.selectbox(key="attn.d_model").set_value(8).run()
    assert at.selectbox(key="attn.heads").options == ["1", "2", "4", "8"]
    at.selectbox(key="attn.d_model").set_value(32).run()
    at.selectbox(key="attn.heads").set_value(16)
    at.radio(key="attn.view").set_value("grid").run()
    assert_no_exception(at)
    assert len(_heatmaps(at)) == 2 * 16
    at.radio(key="attn.view").set_value("lines").run()
    at.radio(key="attn.lines_scope").set_value("all heads of this layer").run()
    assert_no_exception(at)
    legend = [t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if t.get("showlegend", True)
              and str(t.get("name", "")).startswith("head ")]
    styles = [(t["line"]["color"], t["line"].get("dash", "solid")) for t in legend]
    assert [t["name"] for t in legend] == [f"head {h}" for h in range(1, 17)]
    assert len(set(styles)) == 16  # every head can be told apart
    assert [c for c, _ in styles[:8]] == list(charts.CATEGORICAL) == [c for c, _ in styles[8:]]
    assert {d for _, d in styles[:8]} == {"solid"} and {d for _, d in styles[8:]} == {"dash"}
    assert not {"#d62728", "#2ca02c"} & {c.lower() for c, _ in styles}  # no red-green pair
    assert any("Heads 9 to 16 reuse the colours of heads 1 to 8 with dashed lines" in c.value for c in at.caption)


def test_fitting_links_and_widget_changes_give_no_notice() -> None:
    at = app_at(None)
    at.query_params.update({"attn.heads": "4", "attn.head": "4", "attn.layer": "2"})
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert at.radio(key="attn.head").value == 4 and not _link_notices(at)
    at.selectbox(key="attn.heads").set_value(2).run()  # head 4 no longer exists: moved without a notice
    at.slider(key="attn.layers").set_value(1).run()
    assert_no_exception(at)
    assert at.radio(key="attn.head").value == 2 and at.radio(key="attn.layer").value == 1
    at.selectbox(key="attn.heads").set_value(16).run()
    at.selectbox(key="attn.d_model").set_value(8).run()  # 16 heads do not divide 8: moved without a notice
    assert_no_exception(at)
    assert at.selectbox(key="attn.heads").value == 8 and not _link_notices(at)


def test_projector_mode_shows_fewer_controls() -> None:
    at = app_at(None)
    at.session_state[state.PRESENTATION] = True
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    keys = {w.key for w in (*at.selectbox, *at.slider, *at.number_input)}
    assert "attn.heads" in keys and "attn.d_model" not in keys and "attn.seed" not in keys


def _reverse_entry(step: int = 42, **config) -> state.TrainedModel:
    task = get_task("reverse", seq_len=6)
    torch.manual_seed(0)
    model_config = dataclasses.replace(task.default_model_config(), **config)
    model = task.build_model(model_config).eval()
    return state.TrainedModel("seq2seq", "reverse", "Reverse", model, model.config, step=step, task=task)


def test_trained_model_is_taken_apart() -> None:
    entry = _reverse_entry()
    config = entry.config
    at = app_at(None)
    at.session_state[state.TRAINED] = {"seq2seq": entry}
    at.switch_page(PAGE).run()
    at.selectbox(key="attn.heads").set_value(8).run()  # a random-model setting, kept while trained weights show
    at.radio(key="attn.source").set_value("seq2seq")
    at.text_input(key="attn.text").set_value("3141x59").run()
    assert_no_exception(at)
    assert any("Reverse, trained 42 steps" in c.value for c in at.caption)
    assert "5·9" in _markdown(at) and any("'x'" in i.value for i in at.info)
    assert at.radio(key="attn.layer").options == [str(n) for n in range(1, config.n_layers + 1)]
    assert at.radio(key="attn.head").options == [str(h) for h in range(1, config.n_heads + 1)]
    shown = {"heads": at.selectbox(key="attn.fixed.heads"), "d_model": at.selectbox(key="attn.fixed.d_model"),
             "layers": at.slider(key="attn.fixed.layers"), "mask": at.radio(key="attn.fixed.mask"),
             "steps": at.number_input(key="attn.fixed.steps"), "kind": at.selectbox(key="attn.fixed.kind")}
    assert all(w.disabled and w.help for w in shown.values())
    assert (shown["heads"].value, shown["d_model"].value, shown["layers"].value, shown["steps"].value) == (
        config.n_heads, config.d_model, config.n_layers, 42)
    assert shown["mask"].value.startswith("None (the encoder")
    assert "Reverse" in shown["kind"].help and "one character at a time" in shown["kind"].help
    random_keys = {"attn.heads", "attn.d_model", "attn.layers", "attn.seed", "attn.kind", "attn.mask"}
    assert not random_keys & {w.key for w in (*at.selectbox, *at.slider, *at.number_input, *at.radio)}
    at.text_input(key="attn.text").set_value("hello").run()
    assert any("reads only these characters: 0123456789" in i.value for i in at.info)
    at.radio(key="attn.source").set_value("random").run()
    assert at.selectbox(key="attn.heads").value == 8 and not at.selectbox(key="attn.heads").disabled


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_trained_model_norm_placement_comes_from_its_config(norm: str) -> None:
    at = app_at(None)
    at.session_state[state.TRAINED] = {"seq2seq": _reverse_entry(norm_position=norm)}
    at.session_state["attn.source"] = "seq2seq"
    at.session_state["attn.text"] = "31415"
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    first = at.latex[0].value  # step 1: the input X of layer 1
    assert ("\\mathrm{LN}" in first) == (norm == "pre"), first
    assert any("LN = LayerNorm" in c.value for c in at.caption) == (norm == "pre")


def test_random_model_norm_flags_come_from_its_config() -> None:
    run = lab_run.run_random("a b c", "sentence", 16, 2, 1, "none", 0)
    config = TransformerConfig(vocab_size=2, d_model=16, n_heads=2)  # the lab's model uses the defaults
    assert run.norm_first == (config.norm_position == "pre") and run.rotary == (config.positional == "rope")
    assert lab_run.run_random("", "sentence", 16, 2, 1, "none", 0).norm_first == run.norm_first


def test_chart_downloads_follow_the_sidebar_format() -> None:
    at = app_at(PAGE)
    assert [b.label for b in at.get("download_button") if "Picture" in b.label] == ["Picture (PNG)"]  # steps
    at.radio(key="attn.view").set_value("head").run()  # the step charts are Vega-Lite, without a camera button
    assert plotly_download_formats(at) == {"png"}
    at.sidebar.radio(key=state.IMAGE_FORMAT).set_value("SVG").run()
    assert_no_exception(at)
    assert plotly_download_formats(at) == {"svg"}
    at.radio(key="attn.view").set_value("steps").run()
    assert [b.label for b in at.get("download_button") if "Picture" in b.label] == ["Picture (SVG)"]


def test_numbers_panel_shows_every_step_and_softmax_checks_out():
    at = app_at(PAGE)
    panel = at.selectbox(key="attn.numbers")
    assert panel.options[0] == "1. X" and "6. A" in panel.options and "9. W^O" in panel.options
    assert panel.options[-1] == "15. h_out"  # the MLP half follows, up to the layer's output
    assert len(at.dataframe) == 1  # one table for all steps, not one per matrix
    panel.set_value("4. S/√d_k").run()
    scaled = at.dataframe[0].value.to_numpy(dtype=float)
    at.selectbox(key="attn.numbers").set_value("6. A").run()
    weights = at.dataframe[0].value.to_numpy(dtype=float)
    expected = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)  # softmax by hand, row by row (no mask by default)
    np.testing.assert_allclose(weights, expected, atol=2e-3)  # the tables are rounded to 3 decimals
    assert_no_exception(at)
