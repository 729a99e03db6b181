"""A :class:`~explorer.render.heatmap.HeatmapSpec` as a PNG picture (Pillow) or an SVG drawing, without a browser.

Both draw the same layout: the title, row labels on the left, column labels on top (upright when they do not fit
across), one square per cell in the colour of :func:`explorer.render.heatmap.colours` with the spec's cell text when the
matrix is small, grey NaN cells, and a colour bar with the range's two ends. The SVG gives every cell a tooltip
with its exact value.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from html import escape

import numpy as np
from PIL import Image, ImageDraw

from explorer.render.fonts import font as text_font
from explorer.render.heatmap import HeatmapSpec, colours, ink

TEXT_CELLS = 16  # print the cell text when both sides are at most this long
BAR_STEPS = 256  # colours drawn in the colour bar


@dataclass(frozen=True)
class Layout:
    """Where things go in the picture, in pixels."""

    cell: int  # side of one cell
    left: int  # width of the row-label margin
    top: int  # height of the title and column-label margin
    font: int  # label font size
    rotate: bool  # whether column labels are written upright
    text: bool  # whether the cell text is printed
    width: int
    height: int


def layout(spec: HeatmapSpec, cell_px: int | None = None) -> Layout:
    """The picture's layout: cells of ``cell_px`` pixels, or as large as fits in about 560 pixels."""
    shape = spec.values.shape
    n = max(shape)
    cell = cell_px or int(np.clip(560 / max(n, 1), 6, 56))
    font = int(np.clip(cell * 0.32, 9, 14))
    char = 0.62 * font
    left = int(max((len(r) for r in spec.rows), default=1) * char) + 12
    widest = max((len(c) for c in spec.cols), default=1) * char
    rotate = widest > cell
    top = (int(widest) + 10 if rotate else font + 10) + (font + 16 if spec.title else 6)
    width = left + shape[1] * cell + 90  # room for the colour bar
    return Layout(cell, left, top, font, rotate, n <= TEXT_CELLS and cell >= 26, width,
                  max(top + shape[0] * cell + 12, top + 140))


def bar_colours(spec: HeatmapSpec) -> np.ndarray:
    """``(BAR_STEPS, 3)`` colours of the colour bar, lowest value first."""
    return colours(np.linspace(spec.zmin, spec.zmax, BAR_STEPS), spec.scale, spec.zmin, spec.zmax)


def _words(spec: HeatmapSpec) -> str:
    """Every text the picture writes, so that one font that can write all of it is chosen (Chinese too)."""
    return spec.title + "".join(spec.rows) + "".join(spec.cols)


def spec_png(spec: HeatmapSpec, *, cell_px: int | None = None) -> bytes:
    """The heatmap of ``spec`` as PNG bytes."""
    lay, rgb = layout(spec, cell_px), spec.colours()
    img = Image.new("RGB", (lay.width, lay.height), "white")
    words = _words(spec)
    draw, font = ImageDraw.Draw(img), text_font(lay.font, words)
    if spec.title:
        draw.text((6, 6), spec.title, fill="black", font=text_font(lay.font + 2, words))
    for (i, j) in itertools.product(*map(range, spec.values.shape)):
        x0, y0 = lay.left + j * lay.cell, lay.top + i * lay.cell
        draw.rectangle([x0, y0, x0 + lay.cell - 1, y0 + lay.cell - 1], fill=tuple(int(c) for c in rgb[i, j]))
        if lay.text:
            draw.text((x0 + lay.cell / 2, y0 + lay.cell / 2), str(spec.text[i, j]), fill=ink(rgb[i, j]), font=font,
                      anchor="mm")
    for i, label in enumerate(spec.rows):
        draw.text((lay.left - 6, lay.top + (i + 0.5) * lay.cell), label, fill="black", font=font, anchor="rm")
    for j, label in enumerate(spec.cols):
        _column_label(img, draw, font, label, lay, j)
    _png_colourbar(draw, font, spec, lay)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _column_label(img: Image.Image, draw: ImageDraw.ImageDraw, font, label: str, lay: Layout, j: int) -> None:
    x = lay.left + (j + 0.5) * lay.cell
    if not lay.rotate:
        draw.text((x, lay.top - 4), label, fill="black", font=font, anchor="mb")
        return
    tile = Image.new("RGB", (int(font.getlength(label)) + 4, lay.font + 6), "white")
    ImageDraw.Draw(tile).text((2, 2), label, fill="black", font=font)
    tile = tile.rotate(90, expand=True)
    img.paste(tile, (int(x - tile.width / 2), lay.top - 4 - tile.height))


def _bar_box(spec: HeatmapSpec, lay: Layout) -> tuple[int, int, int]:
    """The colour bar's left edge, top and height."""
    return lay.left + spec.values.shape[1] * lay.cell + 14, lay.top, max(lay.height - lay.top - 14, 40)


def _png_colourbar(draw: ImageDraw.ImageDraw, font, spec: HeatmapSpec, lay: Layout) -> None:
    x0, y0, h = _bar_box(spec, lay)
    bar = bar_colours(spec)
    for y in range(h):
        draw.line([x0, y0 + y, x0 + 14, y0 + y], fill=tuple(int(c) for c in bar[int((1 - y / (h - 1)) * 255)]))
    draw.text((x0 + 18, y0), f"{spec.zmax:.3g}", fill="black", font=font, anchor="lt")
    draw.text((x0 + 18, y0 + h), f"{spec.zmin:.3g}", fill="black", font=font, anchor="lb")


def spec_svg(spec: HeatmapSpec, *, cell_px: int | None = None) -> str:
    """The heatmap of ``spec`` as SVG text; every cell has a tooltip with its exact value."""
    lay, rgb, z = layout(spec, cell_px), spec.colours(), spec.values
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
           f'font-family="DejaVu Sans, Arial, Noto Sans CJK SC, sans-serif" font-size="{lay.font}">',
           f'<rect width="{lay.width}" height="{lay.height}" fill="white"/>']
    if spec.title:
        out.append(f'<text x="6" y="{lay.font + 8}" font-size="{lay.font + 2}">{escape(spec.title)}</text>')
    for (i, j) in itertools.product(*map(range, z.shape)):
        x0, y0, (r, g, b) = lay.left + j * lay.cell, lay.top + i * lay.cell, rgb[i, j]
        out.append(f'<rect x="{x0}" y="{y0}" width="{lay.cell}" height="{lay.cell}" fill="rgb({r},{g},{b})">'
                   f'<title>{escape(spec.rows[i])} → {escape(spec.cols[j])}: {z[i, j]:.6g}</title></rect>')
        if lay.text:
            colour = "rgb({},{},{})".format(*ink(rgb[i, j]))
            out.append(f'<text x="{x0 + lay.cell / 2}" y="{y0 + lay.cell / 2}" fill="{colour}" text-anchor="middle" '
                       f'dominant-baseline="central">{escape(str(spec.text[i, j]))}</text>')
    for i, label in enumerate(spec.rows):
        out.append(f'<text x="{lay.left - 6}" y="{lay.top + (i + 0.5) * lay.cell}" text-anchor="end" '
                   f'dominant-baseline="central">{escape(label)}</text>')
    for j, label in enumerate(spec.cols):
        x, y = lay.left + (j + 0.5) * lay.cell, lay.top - 6
        turn = f' transform="rotate(-90 {x} {y})" text-anchor="start"' if lay.rotate else ' text-anchor="middle"'
        out.append(f'<text x="{x}" y="{y}"{turn} dominant-baseline="central">{escape(label)}</text>')
    out.append(_svg_colourbar(spec, lay))
    out.append("</svg>")
    return "\n".join(out)


def _svg_colourbar(spec: HeatmapSpec, lay: Layout) -> str:
    x0, y0, h = _bar_box(spec, lay)
    bar = bar_colours(spec)
    stops = "".join(f'<stop offset="{k / 10:.1f}" stop-color="rgb({r},{g},{b})"/>'
                    for k, (r, g, b) in enumerate(bar[np.linspace(BAR_STEPS - 1, 0, 11).astype(int)]))
    return (f'<defs><linearGradient id="bar" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>'
            f'<rect x="{x0}" y="{y0}" width="14" height="{h}" fill="url(#bar)"/>'
            f'<text x="{x0 + 18}" y="{y0 + lay.font}">{spec.zmax:.3g}</text>'
            f'<text x="{x0 + 18}" y="{y0 + h}">{spec.zmin:.3g}</text>')
