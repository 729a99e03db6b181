"""Charts and sections of the ViT page: the patch matrix, the tokens, the patch counts, the CLS token's attention.

The matrices are Plotly heatmaps so every number can be read on hover; the pictures come from
:mod:`ui.vit.pictures`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import N_, _, num, percent
from explorer.lab.vit_walkthrough import ViTWalkthrough, attention_scores, num_patches
from ui.common.chart_style import style_layout
from ui.common.charts import (
    attention_range,
    heatmap_dict,
    nearly_uniform,
    show,
    stretch_attention,
)
from ui.common.figure_dict import axes_of, each_axis, figure, panel_titles, shows_legend, subplot_row
from ui.common.theme import phone
from ui.vit import pictures

HEADS_PER_ROW = 8  # per-head pictures per row


def weight_range(weights: np.ndarray) -> str:
    """"from 1.2% to 3.4%, nearly uniform": the range of a CLS attention map, flagged when nearly uniform."""
    flat = nearly_uniform(np.ravel(weights)[None, :])  # one query (CLS) over every patch
    low, high = percent(float(np.min(weights)), 1), percent(float(np.max(weights)), 1)
    if flat:
        return _("from {low} to {high}, nearly uniform").format(low=low, high=high)
    return _("from {low} to {high}").format(low=low, high=high)


CHANNEL_COLOURS = {"R": "#E0301E", "G": "#1E9E3A", "B": "#1E5BE0", "grey": "#FFFFFF"}
CHANNEL_NAMES = {"R": N_("R"), "G": N_("G"), "B": N_("B"), "grey": N_("grey")}  # as shown in the hover and legend


def patch_matrix_figure(patches: np.ndarray, *, channels: int, patch: int) -> go.Figure:
    """The patch matrix: one row per patch, one column per number (channel by channel, row by row)."""
    values = np.rint(np.asarray(patches) * 255).astype(np.int16)  # (N, C*p*p) pixel values 0..255
    n, area = values.shape[0], patch * patch
    names = ["R", "G", "B"] if channels == 3 else ["grey"] * channels
    data = []
    for ch, name in enumerate(names):
        # One label per column (not per cell) keeps the figure small: the hover reads it from the axis.
        shown = _(CHANNEL_NAMES[name])
        columns = [_("{channel} pixel (row {row}, column {column})").format(channel=shown, row=k // patch,
                                                                           column=k % patch) for k in range(area)]
        trace = heatmap_dict(values[:, ch * area:(ch + 1) * area], columns, [str(i) for i in range(1, n + 1)],
                             zmin=0, zmax=255, decimals=0, showscale=False,
                             scale=[[0, "black"], [1, CHANNEL_COLOURS[name]]])
        data.append(trace | dict(name=shown, hovertemplate=_("patch %{y}<br>%{x}<br>value %{z}") + "<extra></extra>"))
    if channels == 3:
        title = _("{channels}·{patch}·{patch} = {numbers} numbers per patch (red, then green, then blue)")
    else:
        title = _("{channels}·{patch}·{patch} = {numbers} numbers per patch")
    layout = style_layout(height=max(260, min(560, 120 + 6 * n)), legend=shows_legend(data)) | dict(
        yaxis=dict(autorange="reversed", title=dict(text=_("patch (N = {n} rows)").format(n=num(n)))),
        xaxis=dict(title=dict(text=title.format(channels=channels, patch=patch, numbers=num(channels * area))),
                   showticklabels=False, type="category"),
    )
    return figure(data, layout)


def token_figure(with_cls: np.ndarray, positions: np.ndarray, tokens: np.ndarray) -> go.Figure:
    """Three ``(N+1, C)`` matrices side by side: projected patches with CLS, positions, and their sum.

    Each panel has its own symmetric colour range (printed in its title), because freshly initialised position
    embeddings are about a hundred times smaller than the projected patches.
    """
    mats = [np.asarray(m, dtype=float) for m in (with_cls, positions, tokens)]
    bounds = [float(np.abs(m).max()) or 1.0 for m in mats]
    names = (_("[CLS; patches] × projection"), _("+ position embeddings"), _("= input of block 1"))
    titles = [name + "<br><sup>" + _("colours span ±{bound}").format(bound=_two_digits(b)) + "</sup>"
              for name, b in zip(names, bounds, strict=True)]
    stacked = phone()  # side by side on a phone, the three titles and axis titles were written over one another
    layout = subplot_row(titles, spacing=0.12 if stacked else 0.05, stacked=stacked)
    data = []
    for k, (m, bound) in enumerate(zip(mats, bounds, strict=True)):
        trace = heatmap_dict(m, None, None, zmin=-bound, zmax=bound, diverging=True, showscale=k == 2)
        data.append(trace | axes_of(k) | dict(
            colorbar=dict(tickvals=[-bound, 0, bound], ticktext=["−max", "0", "+max"]),
            hovertemplate=_("token %{y}<br>feature %{x}<br>value %{z:.3f}") + "<extra></extra>",
        ))
    for axis in each_axis(layout, "y"):
        axis["autorange"] = "reversed"
    for axis in each_axis(layout, "y")[: 3 if stacked else 1]:
        axis["title"] = dict(text=_("token (0 = CLS)"))
    for axis in each_axis(layout, "x")[-1 if stacked else 0:]:
        axis["title"] = dict(text=_("feature (d_model)"))
    height = max(300, min(540, 160 + 4 * mats[0].shape[0]))
    layout |= style_layout(height=3 * height - 200 if stacked else height, legend=shows_legend(data))
    panel_titles(layout, titled=False, row_titles=False)
    layout["margin"]["t"] = 80
    return figure(data, layout)


def _two_digits(value: float) -> str:
    """``value`` to two significant digits ("1.9", "0.076"), in the language's decimal sign."""
    text = f"{value:.2g}"
    if "e" in text:
        return text
    return num(float(text), len(text.partition(".")[2]))


def patch_count_figure(image_size: int, patch_sizes: list[int], current: int) -> go.Figure:
    """N and the attention cost (N+1)² for every valid patch size, the current one marked."""
    ns = [num_patches(image_size, p) for p in patch_sizes]
    data = [dict(type="scatter", x=patch_sizes, y=ns, mode="lines+markers", name=_("patches N")),
            dict(type="scatter", x=patch_sizes, y=[attention_scores(n) for n in ns], mode="lines+markers",
                 name=_("attention scores (N+1)² per head"))]
    mark = dict(type="line", x0=current, x1=current, xref="x", y0=0, y1=1, yref="y domain",
                line=dict(color="#D55E00", dash="dot"))
    layout = style_layout(height=300, legend=shows_legend(data)) | dict(
        shapes=[mark],
        xaxis=dict(title=dict(text=_("patch size P (pixels)")), type="log", tickvals=patch_sizes),
        yaxis=dict(title=dict(text=_("count (log scale)")), type="log"),
    )
    return figure(data, layout)


MAX_NUMBERS = 32  # the CLS attention of up to this many patches a side is drawn page-wide, a number per patch


def cls_weights_figure(weights: np.ndarray, title: str) -> go.Figure:
    """The CLS token's attention to each patch as numbers (percent, one decimal) on the patch grid, page-wide."""
    grid = weights.shape[0]
    zmin, zmax = attention_range(weights)
    names = [str(i + 1) for i in range(grid)]
    trace = heatmap_dict(weights, names, names, zmin=zmin, zmax=zmax, numbers=True) | dict(
        customdata=np.arange(1, grid * grid + 1).reshape(grid, grid),
        hovertemplate=_("patch %{customdata} (row %{y}, column %{x})<br>weight %{z:.4f}") + "<extra></extra>",
        # many patches share the attention (1/196 = 0.5% each): one decimal tells them apart
        text=np.vectorize(lambda w: num(100 * w, 1, group=False))(weights).astype(object))
    # Square cells 36 pixels high fill a 1024-pixel page's column; taller ones left an empty band above the map.
    layout = style_layout(title=title, height=min(1100, 140 + 36 * grid)) | dict(
        yaxis=dict(autorange="reversed", scaleanchor="x", type="category", showticklabels=False,
                   title=dict(text=_("patch row"))),
        xaxis=dict(type="category", showticklabels=False, title=dict(text=_("patch column"))),
    )
    return figure([trace], layout)


def attention_section(pixels: np.ndarray, walk: ViTWalkthrough, layer: int, head: int, *,
                      key: str = "vit.cls_numbers") -> None:
    """The chosen head and the rollout over the picture, the head's numbers page-wide below them, then every head
    of the layer.

    ``key`` names the numbers chart (a page showing two sections gives each its own).
    """
    own = walk.cls_self_attention(layer, head)
    big = st.columns(2, gap="medium")
    chosen, rollout = walk.cls_attention(layer, head).numpy(), walk.cls_rollout().numpy()
    pictures.show(big[0], "attention", pixels, weights=chosen,
                  caption=_("Layer {layer}, head {head}: CLS → each patch, {range} ({share} stays on CLS "
                            "itself)").format(layer=layer + 1, head=head + 1, range=weight_range(chosen),
                                              share=percent(own)))
    pictures.show(big[1], "attention", pixels, weights=rollout,
                  caption=_("Attention rollout through all {layers} layers (heads averaged), {range}").format(
                      layers=walk.num_layers, range=weight_range(rollout)))
    if walk.grid_size <= MAX_NUMBERS:
        title = _("CLS attention of layer {layer}, head {head}, per patch (%)").format(layer=layer + 1, head=head + 1)
        show(cls_weights_figure(chosen, title), key=key)
    patches = walk.grid_size ** 2
    if stretch_attention():
        text = _("Colours follow the sidebar's heatmap scale, stretched from the least to the most attended patch of "
                 "each map. Uniform attention would give every patch 1/{patches} = {share}; random weights stay "
                 "close to that, a trained ViT concentrates on what decides the class.")
    else:
        text = _("Colours follow the sidebar's heatmap scale, from 0 (dark) to 1 (bright), the same for every map. "
                 "Uniform attention would give every patch 1/{patches} = {share}; random weights stay close to "
                 "that, a trained ViT concentrates on what decides the class.")
    st.caption(text.format(patches=patches, share=percent(1 / patches, 1)))
    st.markdown("**" + _("All {heads} heads of layer {layer}").format(heads=walk.num_heads, layer=layer + 1) + "**")
    per_row = min(walk.num_heads, HEADS_PER_ROW)
    for start in range(0, walk.num_heads, per_row):
        cols = st.columns(per_row)
        for h in range(start, min(start + per_row, walk.num_heads)):
            weights = walk.cls_attention(layer, h).numpy()
            pictures.show(cols[h - start], "attention", pixels, weights=weights, target=pictures.SMALL_PX,
                          caption=_("head {head}: {range}").format(head=h + 1, range=weight_range(weights)))


def attention_array(walk: ViTWalkthrough, layer: int) -> np.ndarray:
    """One layer's attention ``(H, N+1, N+1)`` for download."""
    return walk.attention[layer].numpy()
