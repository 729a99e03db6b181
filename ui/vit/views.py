"""Pictures and charts of the ViT page: grid overlay, patch mosaic, token sequence, attention overlays, matrices.

The pictures are drawn with Pillow (fast, crisp pixels) and shown with ``st.image``; the matrices are plotly
heatmaps so every number can be read on hover.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from PIL import Image, ImageDraw, ImageFont

from explorer.i18n import N_, _, num, percent
from explorer.lab.vit_walkthrough import ViTWalkthrough, attention_scores, num_patches
from ui.common.chart_style import style_layout
from ui.common.charts import (
    attention_range,
    colorscale,
    font_size,
    heatmap_dict,
    nearly_uniform,
    show,
    stretch_attention,
)
from ui.common.exports import colormap
from ui.common.figure_dict import axes_of, each_axis, figure, panel_titles, shows_legend, subplot_row

DISPLAY_PX = 384  # pictures are enlarged by a whole factor to about this many pixels per side
SMALL_PX = 160  # side of the per-head attention pictures
HEADS_PER_ROW = 8  # per-head pictures per row
MAX_NUMBERED = 64  # patches are numbered on the grid when there are at most this many
GRID_COLOUR = (255, 255, 255)
OUTLINE = (20, 20, 20)


def display_scale(size: int, target: int = DISPLAY_PX) -> int:
    """Whole enlargement factor that brings a ``size``-pixel picture close to ``target`` pixels."""
    return max(1, round(target / size))


def enlarge(pixels: np.ndarray, scale: int) -> Image.Image:
    """Nearest-neighbour enlargement, so each model pixel stays a visible square."""
    img = Image.fromarray(pixels)
    return img.resize((img.width * scale, img.height * scale), Image.Resampling.NEAREST)


def _font(px: float) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, int(px)))


def _draw_grid(img: Image.Image, cell: int, colour: tuple[int, int, int] = GRID_COLOUR) -> None:
    draw = ImageDraw.Draw(img)
    width = max(1, cell // 24)
    for k in range(0, img.width + 1, cell):
        x = min(k, img.width - 1)
        draw.line([(x, 0), (x, img.height)], fill=colour, width=width)
        draw.line([(0, x), (img.width, x)], fill=colour, width=width)


def grid_overlay(pixels: np.ndarray, patch: int, *, numbers: bool = True) -> Image.Image:
    """The picture with the patch grid; when there are few, patches carry their token number (1..N, CLS is 0)."""
    size = pixels.shape[0]
    scale = display_scale(size)
    img = enlarge(pixels, scale)
    cell, grid = patch * scale, size // patch
    _draw_grid(img, cell)
    if numbers and grid * grid <= MAX_NUMBERED:
        draw, font = ImageDraw.Draw(img), _font(cell * 0.38)
        for i in range(grid * grid):
            r, c = divmod(i, grid)
            draw.text(((c + 0.5) * cell, (r + 0.5) * cell), str(i + 1), fill="white", font=font, anchor="mm",
                      stroke_width=max(1, cell // 20), stroke_fill=OUTLINE)
    return img


def patch_mosaic(pixels: np.ndarray, patch: int) -> Image.Image:
    """The patches pulled apart with white gaps: the picture is now a set of separate tiles."""
    size = pixels.shape[0]
    scale = display_scale(size)
    cell, grid = patch * scale, size // patch
    gap = max(3, cell // 8)
    img = enlarge(pixels, scale)
    out = Image.new("RGB", (grid * cell + (grid + 1) * gap,) * 2, "white")
    for r in range(grid):
        for c in range(grid):
            tile = img.crop((c * cell, r * cell, (c + 1) * cell, (r + 1) * cell))
            out.paste(tile, (gap + c * (cell + gap), gap + r * (cell + gap)))
    return out


def sequence_strip(pixels: np.ndarray, patch: int, *, max_items: int = 16, tile: int = 40) -> Image.Image:
    """The token sequence the transformer reads: ``[CLS]``, then the patches in reading order (long ones elided)."""
    grid = pixels.shape[0] // patch
    n = grid * grid
    shown = list(range(n)) if n <= max_items else [*range(max_items - 1), -1, n - 1]
    gap, label_h = 6, 18
    out = Image.new("RGB", ((len(shown) + 1) * (tile + gap) + gap, tile + label_h + 2 * gap), "white")
    draw, font = ImageDraw.Draw(out), _font(13)
    draw.rectangle([gap, gap, gap + tile, gap + tile], fill=(213, 94, 0))
    draw.text((gap + tile / 2, gap + tile / 2), "CLS", fill="white", font=_font(12), anchor="mm")
    draw.text((gap + tile / 2, gap + tile + label_h / 2 + 2), "0", fill="black", font=font, anchor="mm")
    for k, i in enumerate(shown, start=1):
        x = gap + k * (tile + gap)
        if i < 0:
            draw.text((x + tile / 2, gap + tile / 2), "…", fill="black", font=_font(22), anchor="mm")
            continue
        r, c = divmod(i, grid)
        piece = Image.fromarray(pixels[r * patch:(r + 1) * patch, c * patch:(c + 1) * patch])
        out.paste(piece.resize((tile, tile), Image.Resampling.NEAREST), (x, gap))
        draw.rectangle([x, gap, x + tile - 1, gap + tile - 1], outline=(160, 160, 160))
        draw.text((x + tile / 2, gap + tile + label_h / 2 + 2), str(i + 1), fill="black", font=font, anchor="mm")
    return out


def attention_overlay(pixels: np.ndarray, weights: np.ndarray, *, scale_name: str | None = None,
                      alpha: float = 0.6, target: int = DISPLAY_PX) -> Image.Image:
    """Blend a ``(grid, grid)`` attention map over the picture, coloured on the attention range
    (:func:`~ui.common.charts.attention_range`: 0 to 1, or the map's own lowest to highest weight)."""
    size, grid = pixels.shape[0], weights.shape[0]
    patch = size // grid
    low, high = attention_range(weights)
    w = np.clip((np.asarray(weights, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    heat = np.kron(w, np.ones((patch, patch)))  # (H, W), one flat value per patch
    coloured = colormap(scale_name or colorscale())[np.clip(np.rint(heat * 255), 0, 255).astype(int)]
    grey = pixels.astype(np.float64).mean(axis=2, keepdims=True)  # a grey picture keeps the colours readable
    blend = (1 - alpha) * grey + alpha * coloured
    scale = display_scale(size, target)
    img = enlarge(np.clip(np.rint(blend), 0, 255).astype(np.uint8), scale)
    _draw_grid(img, patch * scale, colour=(235, 235, 235))
    return img


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
    layout = subplot_row(titles, spacing=0.05)
    data = []
    for k, (m, bound) in enumerate(zip(mats, bounds, strict=True)):
        trace = heatmap_dict(m, None, None, zmin=-bound, zmax=bound, diverging=True, showscale=k == 2)
        data.append(trace | axes_of(k) | dict(
            colorbar=dict(tickvals=[-bound, 0, bound], ticktext=["−max", "0", "+max"]),
            hovertemplate=_("token %{y}<br>feature %{x}<br>value %{z:.3f}") + "<extra></extra>",
        ))
    for axis in each_axis(layout, "y"):
        axis["autorange"] = "reversed"
    each_axis(layout, "y")[0]["title"] = dict(text=_("token (0 = CLS)"))
    for axis in each_axis(layout, "x"):
        axis["title"] = dict(text=_("feature (d_model)"))
    layout |= style_layout(height=max(300, min(540, 160 + 4 * mats[0].shape[0])), legend=shows_legend(data))
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
        text=np.vectorize(lambda w: num(100 * w, 1, group=False))(weights).astype(object),
        textfont=dict(size=max(9, min(font_size(), 600 // grid))))
    layout = style_layout(title=title, height=min(1100, 140 + 48 * grid)) | dict(
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
    big[0].image(attention_overlay(pixels, chosen),
                 caption=_("Layer {layer}, head {head}: CLS → each patch, {range} ({share} stays on CLS "
                           "itself)").format(layer=layer + 1, head=head + 1, range=weight_range(chosen),
                                             share=percent(own)))
    big[1].image(attention_overlay(pixels, rollout),
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
            cols[h - start].image(attention_overlay(pixels, weights, target=SMALL_PX),
                                  caption=_("head {head}: {range}").format(head=h + 1, range=weight_range(weights)))


def attention_array(walk: ViTWalkthrough, layer: int) -> np.ndarray:
    """One layer's attention ``(H, N+1, N+1)`` for download."""
    return walk.attention[layer].numpy()
