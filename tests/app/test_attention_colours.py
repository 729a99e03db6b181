"""Attention colours: a fixed 0..1 scale by default, stretched on request, and nearly uniform maps flagged on
every page that draws attention (Attention Lab, ViT Patching, Live Training)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app.conftest import app_at, assert_no_exception
from tests.app.test_attention_lab import _z
from ui.common import charts, state
from ui.training import heatmaps as th

LAB = "pages/attention.py"
VIT = "pages/vit.py"


def _spread_by_loops(w: np.ndarray) -> float:
    """The reference: for each row that sees two keys or more, max − min over its non-zero weights, by loops."""
    best = 0.0
    for row in w.reshape(-1, w.shape[-1]):
        seen = [v for v in row if v > 0]
        if len(seen) >= 2:
            best = max(best, max(seen) - min(seen))
    return best


def test_row_spread_matches_loops_and_ignores_masked_keys():
    rng = np.random.default_rng(0)
    causal = np.tril(rng.random((5, 5)))
    causal /= causal.sum(axis=1, keepdims=True)
    for w in (causal, rng.dirichlet(np.ones(7), size=(2, 3, 7)), np.full((4, 4), 0.25)):
        assert charts.row_spread(w) == pytest.approx(_spread_by_loops(w))
    one_key = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.33, 0.33, 0.34]])  # causal rows, all even
    assert charts.nearly_uniform(one_key)
    assert not charts.nearly_uniform(np.array([[0.9, 0.1], [0.5, 0.5]]))
    assert charts.row_spread(np.eye(3)) == 1.0  # one-hot attention is as far from uniform as it gets


def _one_head(at) -> dict:
    chart = next(c for c in at.get("plotly_chart") if "attn.one_head" in c.proto.id)
    return json.loads(chart.proto.spec)


def test_lab_colours_are_fixed_by_default_and_stretch_on_request():
    at = app_at(LAB)
    at.radio(key="attn.view").set_value("head").run()
    assert_no_exception(at)
    trace = _one_head(at)["data"][0]
    assert (trace["zmin"], trace["zmax"]) == (0, 1)
    at.session_state[state.ATTENTION_SCALE] = "stretch"
    at.run()
    trace = _one_head(at)["data"][0]
    w = _z(trace)  # layer 1, head 1: the map's own range now
    assert trace["zmin"] == pytest.approx(float(w.min())) and trace["zmax"] == pytest.approx(float(w.max()))
    assert 0 < trace["zmin"] < trace["zmax"] < 1


def test_sidebar_offers_the_choice_with_help():
    at = app_at(LAB)
    choice = at.sidebar.radio(key=state.ATTENTION_SCALE)
    assert choice.value == "fixed" and choice.help
    assert choice.options == list(charts.ATTENTION_SCALES.values())


def test_grid_marks_nearly_uniform_maps_only():
    uniform, sharp = np.full((4, 4), 0.25), np.eye(4)
    fig = charts.attention_grid([[uniform, sharp], [sharp, uniform]], col_titles=["Head 1", "Head 2"])
    marked = sorted((a.xref, a.yref) for a in fig.layout.annotations if a.text == charts.UNIFORM_MARK)
    assert marked == [("x domain", "y domain"), ("x4 domain", "y4 domain")]
    wide = charts.attention_grid([[uniform] * 16], col_titles=[f"H{n}" for n in range(1, 17)])
    assert [a.text for a in wide.layout.annotations if "≈" in a.text] == ["≈"] * 16  # "≈ uniform" would overlap
    titled = charts.spec_figure(charts.attention_spec(uniform, title="Layer 1 · head 1"))
    assert "nearly uniform: max − min < 0.05 in every row" in titled.layout.title.text
    plain = charts.spec_figure(charts.attention_spec(sharp, title="Layer 1"))
    assert "nearly uniform" not in (plain.layout.title.text or "")


def test_live_training_names_the_nearly_uniform_maps():
    maps = np.stack([np.stack([np.full((3, 3), 1 / 3), np.eye(3)])])  # (L=1, H=2, T, S)
    assert th.uniform_maps(maps).endswith(": layer 1 · head 1")
    assert th.uniform_maps(maps[:, 1:]) == ""
    assert "all maps" in th.uniform_maps(maps[:, :1])
    many = np.stack([np.stack([np.full((3, 3), 1 / 3)] * 15 + [np.eye(3)])] * 2)  # 30 of 32 maps uniform
    said = th.uniform_maps(many)
    assert said.count(" · head ") == th.MAX_NAMED_MAPS and said.endswith("and 24 more")


def test_vit_random_attention_is_flagged_and_coloured_from_zero():
    at = app_at(VIT)
    assert_no_exception(at)
    captions = [i.proto.imgs[0].caption for i in at.image]
    assert any("nearly uniform" in c for c in captions), captions  # random weights: every patch about 1/N
    assert any("from 0 (dark) to 1 (bright)" in c.value for c in at.caption)
    numbers = next(c for c in at.get("plotly_chart") if "vit.cls_numbers" in c.proto.id)
    trace = json.loads(numbers.proto.spec)["data"][0]
    assert (trace["zmin"], trace["zmax"]) == (0, 1)
