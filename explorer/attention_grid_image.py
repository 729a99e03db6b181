"""Every layer x head of one kind of attention as one PNG picture: the Live Training page's heatmaps while it trains.

A browser redraws a picture far more cheaply than a chart of thousands of marks (a character model's 48 x 48 maps
in every layer and head), so the live view shows this picture while training runs and the interactive chart once
it pauses. The picture keeps what the chart says: "head j" above each column and "layer i" beside each row, the
tokens along the outer axes (up to :data:`MAX_TICK_LABELS`), and a colour bar with the range's ends and the
word "weight". Colours come from the one mapping of :mod:`explorer.heatmap`, as in the chart and the exports.

Everything but the cells (headers, token labels, colour bar) depends only on the layout, so it is drawn once
and reused (:func:`_frame`); a redraw colours the cells and encodes the PNG, a few milliseconds. The background is
transparent, and the text takes the colour it is given, so the picture reads on the light and the dark theme.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from explorer.heatmap import colours
from explorer.heatmap_image import load_font

MAX_TICK_LABELS = 24  # token labels on the axes up to this many tokens (the chart's own limit)
GAP = 8  # pixels between two panels
BAR_W = 14  # width of the colour bar
HEADER_GROWTH = 3  # "head j" and "layer i" are this many pixels larger than the token labels
PNG_LEVEL = 1  # zlib level: flat colour blocks shrink well even at the fastest setting, which saves time per frame


@dataclass(frozen=True)
class GridLayout:
    """The picture's geometry and text style; equal layouts share one drawn frame."""

    layers: int
    heads: int
    panel_w: int  # pixels of one heatmap across...
    panel_h: int  # ...and down
    rows: tuple[str, ...]  # query tokens (top to bottom); empty: too many to label
    cols: tuple[str, ...]  # key tokens (left to right); empty: too many to label
    font: int  # token label size in pixels (headers are HEADER_GROWTH larger)
    ink: str  # text colour, e.g. "#1F2933" on the light theme
    scale: str  # a colour scale of :mod:`explorer.heatmap`
    zmin: float  # the value coloured as the scale's first stop...
    zmax: float  # ...and as its last

    @property
    def left(self) -> int:
        """Room for the "layer i" headers and the query tokens."""
        widest = max((len(r) for r in self.rows), default=0)
        return self.font + HEADER_GROWTH + 10 + (int(widest * 0.62 * self.font) + 8 if widest else 0)

    @property
    def top(self) -> int:
        return self.font + HEADER_GROWTH + 10

    @property
    def upright(self) -> bool:
        """Whether the key tokens fit across their cells; otherwise they are turned on their side."""
        widest = max((len(c) for c in self.cols), default=0)
        return not self.cols or self.panel_w / len(self.cols) >= 0.62 * self.font * widest

    @property
    def bottom(self) -> int:
        if not self.cols:
            return 6
        widest = max(len(c) for c in self.cols)
        return self.font + 8 if self.upright else int(widest * 0.62 * self.font) + 10

    @property
    def grid_w(self) -> int:
        return self.heads * self.panel_w + (self.heads - 1) * GAP

    @property
    def grid_h(self) -> int:
        return self.layers * self.panel_h + (self.layers - 1) * GAP

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the picture: the grid, its labels and the colour bar with its numbers."""
        bar = BAR_W + 16 + int(self.font * 0.62 * 6)
        return self.left + self.grid_w + bar, self.top + max(self.grid_h, 120) + self.bottom

    def origin(self, layer: int, head: int) -> tuple[int, int]:
        """Top-left corner of one panel."""
        return self.left + head * (self.panel_w + GAP), self.top + layer * (self.panel_h + GAP)


def tick_labels(labels: tuple[str, ...] | list[str] | None, n: int) -> tuple[str, ...]:
    """The tokens to write along an axis of ``n`` cells: none when there are too many, indices when unknown."""
    if n > MAX_TICK_LABELS:
        return ()
    return tuple(str(s) for s in labels) if labels is not None and len(labels) == n else tuple(map(str, range(n)))


def grid_png(maps: np.ndarray, lay: GridLayout) -> bytes:
    """The attention ``maps`` ``(L, H, T, S)`` as PNG bytes, laid out by ``lay``."""
    layers, heads, t, s = maps.shape
    if (layers, heads) != (lay.layers, lay.heads):
        raise ValueError(f"The layout is for {lay.layers} layers × {lay.heads} heads; the maps have {layers} × "
                         f"{heads}.")
    img = _frame(lay).copy()
    rgb = colours(maps, lay.scale, lay.zmin, lay.zmax)  # (L, H, T, S, 3)
    for i in range(layers):
        for j in range(heads):
            panel = Image.fromarray(rgb[i, j], "RGB").resize((lay.panel_w, lay.panel_h), Image.Resampling.NEAREST)
            img.paste(panel, lay.origin(i, j))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=PNG_LEVEL)
    return buf.getvalue()


@lru_cache(maxsize=16)
def _frame(lay: GridLayout) -> Image.Image:
    """Everything but the cells, on a transparent background."""
    img = Image.new("RGBA", lay.size, (0, 0, 0, 0))
    draw, small, large = ImageDraw.Draw(img), load_font(lay.font), _header_face(lay)
    for j in range(lay.heads):
        x, _ = lay.origin(0, j)
        draw.text((x + lay.panel_w / 2, lay.top - 4), f"head {j + 1}", fill=lay.ink, font=large, anchor="mb")
    for i in range(lay.layers):
        _, y = lay.origin(i, 0)
        _side_text(img, f"layer {i + 1}", (2, y + lay.panel_h // 2), lay, large)
        for q, token in enumerate(lay.rows):
            draw.text((lay.left - 6, y + (q + 0.5) * lay.panel_h / len(lay.rows)), token, fill=lay.ink, font=small,
                      anchor="rm")
    for j in range(lay.heads):
        x, _ = lay.origin(0, j)
        for k, token in enumerate(lay.cols):
            cx, y = x + (k + 0.5) * lay.panel_w / len(lay.cols), lay.top + lay.grid_h + 4
            if lay.upright:
                draw.text((cx, y), token, fill=lay.ink, font=small, anchor="mt")
            else:
                _side_text(img, token, (int(cx - lay.font / 2), y), lay, small, centred=False)
    _colour_bar(img, draw, lay, small)
    return img


def _header_face(lay: GridLayout):
    """The bold face of "head j" and "layer i": as large as the layout allows, smaller where a panel is narrower."""
    longest = (f"head {lay.heads}", f"layer {lay.layers}")
    for size in range(lay.font + HEADER_GROWTH, 8, -1):
        face = load_font(size, bold=True)
        if face.getlength(longest[0]) <= lay.panel_w - 6 and face.getlength(longest[1]) <= lay.panel_h - 6:
            return face
    return face


def _side_text(img: Image.Image, text: str, at: tuple[int, int], lay: GridLayout, face, *,
               centred: bool = True) -> None:
    """``text`` turned a quarter to the left (read bottom to top): centred on ``at``'s height, or hanging from it."""
    tile = Image.new("RGBA", (int(face.getlength(text)) + 4, face.size + 6), (0, 0, 0, 0))
    ImageDraw.Draw(tile).text((2, 1), text, fill=lay.ink, font=face)
    tile = tile.rotate(90, expand=True)
    y = at[1] - tile.height // 2 if centred else at[1]
    img.alpha_composite(tile, (at[0], max(0, y)))


def _colour_bar(img: Image.Image, draw: ImageDraw.ImageDraw, lay: GridLayout, face) -> None:
    """A vertical colour bar beside the grid: the range's top at the top, "weight" above it."""
    x0, y0 = lay.left + lay.grid_w + 12, lay.top + face.size + 6
    height = max(60, min(lay.grid_h, 200) - face.size - 6)
    values = np.linspace(lay.zmax, lay.zmin, height)
    bar = colours(values, lay.scale, lay.zmin, lay.zmax)  # (height, 3), highest first
    strip = Image.fromarray(np.repeat(bar[:, None, :], BAR_W, axis=1), "RGB")
    img.paste(strip, (x0, y0))
    draw.text((x0, y0 - face.size // 2 - 4), "weight", fill=lay.ink, font=face, anchor="lb")
    for value, y in ((lay.zmax, y0), ((lay.zmin + lay.zmax) / 2, y0 + height / 2), (lay.zmin, y0 + height - 1)):
        draw.line([(x0 + BAR_W, y), (x0 + BAR_W + 4, y)], fill=lay.ink)
        draw.text((x0 + BAR_W + 7, y), f"{value:.3g}", fill=lay.ink, font=face, anchor="lm")
