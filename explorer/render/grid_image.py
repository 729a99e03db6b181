"""Every layer x head of one kind of attention as pictures in an HTML grid: Live Training's heatmaps while training.

A browser redraws a few pictures far more cheaply than a chart of thousands of marks (a character model's 48 x 48
maps in every layer and head), so the live view shows this grid while training runs and the interactive chart once
it pauses. Each heatmap is a PNG with one pixel per cell, in the colours of the one mapping of
:mod:`explorer.render.heatmap` (as in the chart and the exports), which the browser enlarges without blurring
(``image-rendering: pixelated``); encoding eight of them takes about a millisecond, where one picture of the whole
grid with its text took ten. The text stays page text, in the theme's own colour: "head j" above each column,
"layer i" beside each row, the tokens along the outer axes (up to :data:`MAX_TICK_LABELS`), and a colour bar with
the range's ends and the word "weight". A column narrower than the grid's layout shrinks it as a whole
(:func:`_fitted`).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from html import escape

import numpy as np
from PIL import Image

from explorer.i18n import _
from explorer.i18n.numbers import separators
from explorer.render.heatmap import colours

MAX_TICK_LABELS = 24  # token labels on the axes up to this many tokens (the chart's own limit)
GAP = 8  # pixels between two panels
BAR_W = 14  # width of the colour bar
BAR_STEPS = 256  # colours in the colour bar
HEADER_GROWTH = 3  # "head j" and "layer i" are this many pixels larger than the token labels
MIN_HEADER_FONT = 9  # the smallest "head j" header; panels too small for it are numbered under one title
FIT_STEP = 0.9  # a grid wider than its column shrinks in steps of this factor ...
MIN_FIT = 0.3  # ... down to this share of its size
CHAR_W = 0.62  # width of a character, in font sizes (DejaVu Sans and Source Sans are narrower on average)


@dataclass(frozen=True)
class GridLayout:
    """The grid's geometry and text size."""

    layers: int
    heads: int
    panel_w: int  # pixels of one heatmap across...
    panel_h: int  # ...and down
    rows: tuple[str, ...]  # query tokens (top to bottom); empty: too many to label
    cols: tuple[str, ...]  # key tokens (left to right); empty: too many to label
    font: int  # token label size in pixels (headers are HEADER_GROWTH larger, or smaller where a panel is narrow)
    scale: str  # a colour scale of :mod:`explorer.render.heatmap`
    zmin: float  # the value coloured as the scale's first stop...
    zmax: float  # ...and as its last
    first_layer: int = 0  # the 0-based layer of the first row (a grid of one chosen head starts there)...
    first_head: int = 0  # ...and the 0-based head of the first column

    @property
    def _header_fits(self) -> float:
        """The largest font at which the longest "head j" / "layer i" fits a panel (it may reach into the gaps)."""
        longest = max(len(_head(self.first_head + self.heads)), len(_layer(self.first_layer + self.layers)))
        return (min(self.panel_w, self.panel_h) + GAP) / (CHAR_W * longest)

    @property
    def numbered(self) -> bool:
        """Whether the panels are too small for "head j" / "layer i" even at the smallest header size: then a
        title ("head", "layer") stands once over the rows' and columns' numbers alone."""
        return self._header_fits < MIN_HEADER_FONT

    @property
    def header_font(self) -> int:
        """The bold "head j" / "layer i" size: as large as allowed, smaller where it would not fit a panel."""
        if self.numbered:
            return self.font
        return int(min(self.font + HEADER_GROWTH, self._header_fits))

    @property
    def shown_rows(self) -> tuple[str, ...]:
        """The query tokens written beside the rows: none where a row of cells is lower than a line of text."""
        return self.rows if self.rows and self.panel_h / len(self.rows) >= self.font else ()

    @property
    def shown_cols(self) -> tuple[str, ...]:
        """The key tokens written under the columns: none where a column of cells is narrower than a line."""
        return self.cols if self.cols and self.panel_w / len(self.cols) >= self.font else ()

    @property
    def left(self) -> int:
        """Room for the "layer i" headers and the query tokens (the first grid column and its gap)."""
        widest = max((len(r) for r in self.shown_rows), default=0)
        return self.font + HEADER_GROWTH + 10 + (int(widest * CHAR_W * self.font) + 8 if widest else 0)

    @property
    def upright(self) -> bool:
        """Whether the key tokens fit across their cells; otherwise they are turned on their side."""
        cols = self.shown_cols
        widest = max((len(c) for c in cols), default=0)
        return not cols or self.panel_w / len(cols) >= CHAR_W * self.font * widest

    @property
    def bar(self) -> int:
        """Room for the colour bar and its numbers (with the gap before it)."""
        return GAP + BAR_W + 8 + int(self.font * CHAR_W * 6)

    @property
    def grid_w(self) -> int:
        return self.heads * self.panel_w + (self.heads - 1) * GAP

    @property
    def grid_h(self) -> int:
        return self.layers * self.panel_h + (self.layers - 1) * GAP

    @property
    def width(self) -> int:
        """Pixels across: labels, heatmaps and colour bar."""
        return self.left + self.grid_w + self.bar


def _head(n: int) -> str:
    """The header of the column of head ``n`` (1-based), in the active language."""
    return _("head {n}").format(n=n)


def _layer(n: int) -> str:
    """The header of the row of layer ``n`` (1-based), in the active language."""
    return _("layer {n}").format(n=n)


def tick_labels(labels: tuple[str, ...] | list[str] | None, n: int) -> tuple[str, ...]:
    """The tokens to write along an axis of ``n`` cells: none when there are too many, indices when unknown."""
    if n > MAX_TICK_LABELS:
        return ()
    return tuple(str(s) for s in labels) if labels is not None and len(labels) == n else tuple(map(str, range(n)))


def png_url(rgb: np.ndarray) -> str:
    """An ``(H, W, 3)`` uint8 picture as a ``data:`` URL of a PNG."""
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def grid_html(maps: np.ndarray, lay: GridLayout, *, label: str = "") -> str:
    """The attention ``maps`` ``(L, H, T, S)`` as an HTML grid laid out by ``lay``; ``label`` names it for screen
    readers."""
    layers, heads, t, s = maps.shape
    if (layers, heads) != (lay.layers, lay.heads):
        raise ValueError(f"The layout is for {lay.layers} layers × {lay.heads} heads; the maps have {layers} × "
                         f"{heads}.")
    rgb = colours(maps, lay.scale, lay.zmin, lay.zmax)  # (L, H, T, S, 3)
    bold = f"font-weight:700;font-size:{lay.header_font}px"
    head = str if lay.numbered else _head
    cells = []
    if lay.numbered:  # one title over the numbered columns, one over the numbered rows
        cells += [f'<div style="{bold}">{escape(_("layer"))}</div>',
                  f'<div style="grid-column:span {heads};text-align:center;{bold}">{escape(_("head"))}</div>',
                  "<div></div>"]
    cells += ["<div></div>", *(f'<div style="text-align:center;{bold}">{escape(head(lay.first_head + j + 1))}</div>'
                               for j in range(heads)), _colour_bar(lay)]
    for i in range(layers):
        cells.append(_row_labels(lay, i, bold))
        alts = [escape(_alt(lay.first_layer + i + 1, lay.first_head + j + 1)) for j in range(heads)]
        cells += [f'<img src="{png_url(rgb[i, j])}" alt="{alts[j]}" '
                  f'width="{lay.panel_w}" height="{lay.panel_h}" '
                  'style="display:block;image-rendering:pixelated">' for j in range(heads)]
    if lay.shown_cols:
        cells += ["<div></div>", *(_column_labels(lay) for _i in range(heads))]
    columns = f"{lay.left - GAP}px repeat({heads}, {lay.panel_w}px) {lay.bar - GAP}px"
    return _fitted(f'<div role="img" aria-label="{escape(label)}" style="display:grid;grid-template-columns:{columns};'
                   f'gap:{GAP}px;align-items:end;font-size:{lay.font}px;line-height:1.15;width:{lay.width}px">'
                   + "".join(cells) + "</div>", lay.width)


def _fitted(grid: str, width: int) -> str:
    """``grid`` (``width`` pixels across) shrunk as a whole, text and pictures alike, where its column is narrower:
    a page 1024 pixels wide with the sidebar open leaves about 680 of the 940 the grid is laid out for.

    The server cannot know the column's width, so the browser picks the size: the wrapper is a CSS container, and
    one container query per :data:`FIT_STEP` zooms the grid to the next size that fits (down to :data:`MIN_FIT`).
    """
    name = f"te-fit-{width}"
    rules, zoom = [], 1.0
    while zoom > MIN_FIT:
        narrower = width * zoom  # a column narrower than the grid at this zoom gets the next one
        zoom *= FIT_STEP
        rules.append(f"@container (max-width:{narrower - 0.5:.1f}px){{.{name}{{zoom:{zoom:.4f}}}}}")
    return (f'<div style="container-type:inline-size"><style>{"".join(rules)}</style>'
            f'<div class="{name}">{grid}</div></div>')


def _alt(layer: int, head: int) -> str:
    """A heatmap picture's text for screen readers: its layer and head (1-based)."""
    return _("layer {layer}, head {head}").format(layer=layer, head=head)


def _row_labels(lay: GridLayout, i: int, bold: str) -> str:
    """"layer i" on its side, and the query tokens, one per row of cells."""
    n = lay.first_layer + i + 1
    turn = "" if lay.numbered else "writing-mode:vertical-rl;transform:rotate(180deg);"
    name = str(n) if lay.numbered else _layer(n)
    side = f'<div style="{turn}text-align:center;align-self:center;{bold}">{escape(name)}</div>'
    step = lay.panel_h / max(len(lay.shown_rows), 1)
    tokens = "".join(f'<div style="height:{step:.2f}px;line-height:{step:.2f}px;white-space:nowrap">{escape(r)}</div>'
                     for r in lay.shown_rows)
    return (f'<div style="display:flex;justify-content:space-between;height:{lay.panel_h}px">{side}'
            f'<div style="text-align:right">{tokens}</div></div>')


def _column_labels(lay: GridLayout) -> str:
    """The key tokens under one column of heatmaps, across or (when they do not fit) on their side."""
    turn = "" if lay.upright else "writing-mode:vertical-rl;transform:rotate(180deg);margin:0 auto;"
    return ('<div style="display:flex;align-self:start">'
            + "".join(f'<div style="width:{lay.panel_w / len(lay.shown_cols):.2f}px;text-align:center;{turn}'
                      f'white-space:nowrap">{escape(c)}</div>' for c in lay.shown_cols) + "</div>")


def _colour_bar(lay: GridLayout) -> str:
    """A vertical colour bar beside the grid, spanning its rows: "weight", then the range's top to its bottom."""
    height = max(60, min(lay.grid_h, 200) - lay.font - 8)
    bar = colours(np.linspace(lay.zmax, lay.zmin, BAR_STEPS), lay.scale, lay.zmin, lay.zmax)  # highest first
    decimal = separators()[0]  # three significant digits never need a thousands separator
    ticks = "".join(f'<div style="position:absolute;left:{BAR_W + 6}px;top:{100 * k / 2:.0f}%;'
                    f'transform:translateY(-50%)">{f"{value:.3g}".replace(".", decimal)}</div>'
                    for k, value in enumerate((lay.zmax, (lay.zmin + lay.zmax) / 2, lay.zmin)))
    weight, scale = escape(_("weight")), escape(_("colour scale"))
    return (f'<div style="grid-row:span {lay.layers + 1};align-self:start">{weight}'
            f'<div style="position:relative;height:{height}px;margin-top:{lay.font // 2 + 2}px">'
            f'<img src="{png_url(bar[:, None, :])}" alt="{scale}" width="{BAR_W}" height="{height}" '
            f'style="display:block">{ticks}</div></div>')
