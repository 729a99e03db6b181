"""Figures built as one dict (ui.common.figure_dict) are the figures Plotly's own methods build, and the tests still
check them with Plotly's validators."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import streamlit as st
from plotly.subplots import make_subplots

from ui.common import charts, figure_dict, state
from ui.common.chart_style import style, style_layout
from ui.vit import views as vit_views


def _json(fig: go.Figure) -> dict:
    """The JSON a browser receives, without the template (the same default template on both sides)."""
    out = json.loads(pio.to_json(fig.to_dict(), validate=False))
    out["layout"].pop("template", None)
    if out["layout"].get("title") == {}:  # Plotly's methods leave an empty title where the dict has none
        del out["layout"]["title"]
    return out


@pytest.fixture
def projector_mode():
    st.session_state[state.PRESENTATION] = True
    yield
    del st.session_state[state.PRESENTATION]


def test_the_tests_check_every_dict_figure(monkeypatch):
    misspelt = dict(type="heatmap", z=[[1.0]], colourscale="Viridis")
    with pytest.raises(ValueError, match="colourscale"):
        figure_dict.figure([misspelt], {})
    monkeypatch.delenv(figure_dict.CHECK_ENV)
    assert figure_dict.figure([misspelt], {"title": None}).to_dict()["data"][0]["colourscale"] == "Viridis"


@pytest.mark.parametrize(("cols", "spacing"), [(1, 0.05), (2, 0.04), (3, 0.05), (4, 0.03)])
def test_subplot_row_is_plotlys_own_geometry(cols, spacing):
    titles = [f"panel {k}" for k in range(cols)]
    reference = make_subplots(rows=1, cols=cols, subplot_titles=titles, horizontal_spacing=spacing).to_dict()
    reference["layout"].pop("template")
    assert figure_dict.subplot_row(titles, spacing=spacing) == reference["layout"]


def test_a_subplot_row_is_a_fresh_copy_each_time():
    first = figure_dict.subplot_row(["a", "b"], spacing=0.05)
    first["xaxis"]["title"] = {"text": "changed"}
    assert "title" not in figure_dict.subplot_row(["a", "b"], spacing=0.05)["xaxis"]


def test_axes_are_listed_panel_by_panel():
    layout = figure_dict.subplot_row([str(k) for k in range(11)], spacing=0.01)
    domains = [axis["domain"][0] for axis in figure_dict.each_axis(layout, "x")]
    assert domains == sorted(domains) and len(domains) == 11  # xaxis10 after xaxis9, not after xaxis1
    assert figure_dict.axes_of(0) == {"xaxis": "x", "yaxis": "y"}
    assert figure_dict.axes_of(10) == {"xaxis": "x11", "yaxis": "y11"}


@pytest.mark.parametrize("traces", [
    [dict(type="heatmap", z=[[1.0]])],
    [dict(type="scatter", y=[1]), dict(type="scatter", y=[2])],
    [dict(type="image", z=[[[0, 0, 0]]]), dict(type="scatter", y=[1])],
    [dict(type="scatter", y=[1], showlegend=False), dict(type="bar", y=[2])],
    [dict(type="bar", y=[1]), dict(type="bar", y=[2]), dict(type="heatmap", z=[[1.0]])],
])
def test_the_legend_room_is_styles_own_decision(traces):
    fig = style(go.Figure([go.Figure({"data": [t]}).data[0] for t in traces]))
    decided = figure_dict.figure(traces, style_layout(legend=figure_dict.shows_legend(traces)))
    assert decided.layout.margin.t == fig.layout.margin.t


@pytest.mark.parametrize("projected", [False, True])
def test_panel_titles_match_the_figure_helper(projected, request):
    if projected:
        request.getfixturevalue("projector_mode")
    fig = make_subplots(rows=1, cols=2, subplot_titles=["a", "b"])
    charts.panel_titles(fig, titled=True, row_titles=True)
    layout = figure_dict.panel_titles(figure_dict.subplot_row(["a", "b"], spacing=0.2), titled=True, row_titles=True)
    assert [n["font"] for n in layout["annotations"]] == [n.font.to_plotly_json() for n in fig.layout.annotations]
    assert (layout["margin"]["t"], layout["margin"]["r"]) == (fig.layout.margin.t, fig.layout.margin.r)


def _token_figure_by_methods(with_cls, positions, tokens):
    """The ViT page's token figure as Plotly's own methods build it (the reference)."""
    mats = [np.asarray(m, dtype=float) for m in (with_cls, positions, tokens)]
    bounds = [float(np.abs(m).max()) or 1.0 for m in mats]
    layout = vit_views.token_figure(*mats).layout  # only the panel titles' text is taken from it
    fig = make_subplots(rows=1, cols=3, subplot_titles=[a.text for a in layout.annotations], horizontal_spacing=0.05)
    for k, (m, bound) in enumerate(zip(mats, bounds, strict=True)):
        trace = charts.heatmap_trace(m, None, None, zmin=-bound, zmax=bound, diverging=True, showscale=k == 2)
        fig.add_trace(trace.update(
            colorbar=dict(tickvals=[-bound, 0, bound], ticktext=["−max", "0", "+max"]),
            hovertemplate="token %{y}<br>feature %{x}<br>value %{z:.3f}<extra></extra>",
        ), row=1, col=k + 1)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title="token (0 = CLS)", col=1)
    fig.update_xaxes(title="feature (d_model)")
    fig = style(fig, height=max(300, min(540, 160 + 4 * mats[0].shape[0])))
    charts.panel_titles(fig, titled=False, row_titles=False)
    return fig.update_layout(margin=dict(t=80))


@pytest.mark.parametrize("shape", [(5, 8), (17, 64)])
def test_the_vit_token_figure_is_the_one_plotly_builds(shape):
    rng = np.random.default_rng(0)
    mats = [rng.normal(size=shape) for _ in range(3)]
    assert _json(vit_views.token_figure(*mats)) == _json(_token_figure_by_methods(*mats))


@pytest.mark.parametrize("shape", [(3, 4), (20, 30)])
def test_a_heatmap_and_a_line_chart_are_the_ones_plotly_builds(shape):
    z = np.random.default_rng(1).normal(size=shape)
    spec = charts.attention_spec(np.abs(z) / np.abs(z).sum(axis=1, keepdims=True), title="weights")
    reference = go.Figure(charts.spec_trace(spec))
    reference.update_yaxes(autorange="reversed", title="query", type="category", tickfont=dict(color="#1F2933"))
    reference.update_xaxes(title="key", type="category", side="bottom", tickfont=dict(color="#1F2933"))
    reference = style(reference, title=spec.title, height=400)
    assert _json(charts.spec_figure(spec, x_title="key", y_title="query", height=400)) == _json(reference)

    series = {"a": ([1, 2, 3], [0.5, 0.25, 0.125]), "b": ([1, 2, 3], [1.0, 2.0, 4.0])}
    lines = go.Figure([go.Scatter(x=xs, y=ys, mode="lines", name=name) for name, (xs, ys) in series.items()])
    lines.update_xaxes(title="step")
    lines.update_yaxes(title="loss", type="log", tickmode="array", tickvals=[0.2, 0.5, 1, 2], tickformat="~g")
    reference = style(lines, title="curves", height=320)
    assert _json(charts.line_chart(series, title="curves", x_title="step", y_title="loss", log_y=True)) == _json(
        reference)


def test_on_a_phone_the_vit_token_figure_stacks_its_three_panels(monkeypatch):
    mats = [np.random.default_rng(2).normal(size=(17, 64)) for _ in range(3)]
    monkeypatch.setattr(vit_views, "phone", lambda: True)
    fig = vit_views.token_figure(*mats)
    y = [fig.layout[f"yaxis{'' if k == 0 else k + 1}"].domain for k in range(3)]
    assert all(a[0] > b[1] for a, b in zip(y, y[1:], strict=False))  # one under the other, apart
    assert {fig.layout[f"xaxis{'' if k == 0 else k + 1}"].domain for k in range(3)} == {(0.0, 1.0)}  # each page-wide
    titled = [fig.layout[f"xaxis{'' if k == 0 else k + 1}"].title.text for k in range(3)]
    assert titled == [None, None, "feature (d_model)"]  # the x title once, under the last, not over the next title
    assert fig.layout.height > 600  # three panels' height
