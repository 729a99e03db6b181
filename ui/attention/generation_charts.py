"""The figures of *Watch it write*, built without drawing them: the growing attention heatmap and one step's top
candidates."""

from __future__ import annotations

import plotly.graph_objects as go

from explorer.i18n import _
from explorer.lab.generation import Writing, WrittenToken
from explorer.lab.generation_exports import growing, growing_spec
from explorer.render import heatmap as hm
from ui.common import charts
from ui.common.chart_style import label_colour, strong_colour

OTHER_BAR = "#9aa5b1"  # the candidates that were not chosen
ROW_PX = 22  # height of one step's row in the heatmap while it grows


def heatmap_spec(writing: Writing, layer: int, head: int) -> hm.HeatmapSpec:
    """The growing heatmap's spec in the sidebar's colours (fixed 0–1 or stretched)."""
    return growing_spec(writing, layer, head, scale=charts.colorscale(), stretch=charts.stretch_attention())


def heatmap_figure(writing: Writing, layer: int, head: int) -> go.Figure:
    """Rows = steps, columns = tokens read; a dashed line between the prompt and the written tokens.

    While the model writes, the axes already span every row and column it may reach, so the heatmap grows into
    its place instead of the chart jumping at each token.
    """
    grown = growing(writing, layer, head)
    spec = heatmap_spec(writing, layer, head)
    rows = writing.max_new_tokens if not writing.finished else len(grown.rows)
    fig = charts.spec_figure(spec, x_title=_("token read (✎ = written by the model)"),
                             y_title=_("step: token read → token written"),
                             height=min(900, max(300, 170 + ROW_PX * rows)), numbers=False)
    fig.update_traces(hovertemplate=_("step %{y}<br>key %{x}<br>weight %{z:.3f}") + "<extra></extra>")
    if not writing.finished:
        fig.update_yaxes(range=[rows - 0.5, -0.5], autorange=False)
        fig.update_xaxes(range=[-0.5, grown.prompt_len + rows - 1.5])
    if grown.weights.shape[1] > grown.prompt_len:
        fig.add_vline(x=grown.prompt_len - 0.5, line=dict(color=strong_colour(), width=2, dash="dash"))
        fig.add_annotation(x=grown.prompt_len - 0.5, y=1.0, yref="paper", yanchor="bottom", xanchor="left",
                           text=" " + _("written →"), showarrow=False, font=dict(color=strong_colour()))
    return fig


def candidates_figure(token: WrittenToken) -> go.Figure:
    """One step's likeliest tokens as horizontal bars, most likely on top; the written one in the strong colour
    and marked ✓."""
    cands = list(token.candidates)
    labels = [f"{'✓ ' if c.chosen else ''}{c.token}{chr(0x200B) * i}" for i, c in enumerate(cands)]
    fig = go.Figure(go.Bar(
        x=[c.probability for c in cands], y=labels, orientation="h",
        marker_color=[strong_colour() if c.chosen else OTHER_BAR for c in cands],
        text=[hm.percent_text(c.probability) for c in cands], textposition="outside", cliponaxis=False,
        hovertemplate=_("%{y}<br>probability %{x:.4f}") + "<extra></extra>"))
    fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(color=label_colour()))
    top = max(c.probability for c in cands)
    fig.update_xaxes(range=[0, min(1.15, 1.3 * top + 0.02)], tickformat=".0%", title=_("probability"))
    return charts.style(fig, title=_("Step {step}: the likeliest next tokens").format(step=token.step),
                        height=max(240, 90 + 34 * len(cands)))
