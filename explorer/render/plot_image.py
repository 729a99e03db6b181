"""Scatter and line charts as PNG pictures (Pillow), without a browser: the exports of charts that are not heatmaps.

Both draw a title, a framed plot with its axes' two ends and names, and labels (a scatter's point labels, a line
chart's legend), each in a font that can write it (:mod:`explorer.render.fonts`: Chinese too). The colours are a
fixed qualitative palette, readable on white.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw

from explorer.render.fonts import font as _font

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")  # one colour per series
SIZE = (760, 520)  # the picture, in pixels
MARGIN = (70, 56, 24, 56)  # left, top, right, bottom: room for the title and the axes' numbers


def _frame(title: str, x_title: str, y_title: str) -> tuple[Image.Image, ImageDraw.ImageDraw, tuple[int, ...]]:
    image = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = MARGIN
    box = (left, top, SIZE[0] - right, SIZE[1] - bottom)
    draw.rectangle(box, outline="#888888")
    draw.text((left, 14), title, fill="black", font=_font(16, title))
    draw.text(((box[0] + box[2]) // 2, SIZE[1] - 20), x_title, fill="#333333", font=_font(12, x_title), anchor="mm")
    draw.text((8, top - 18), y_title, fill="#333333", font=_font(12, y_title))
    return image, draw, box


def _scale(values: np.ndarray, lo: float, hi: float, a: int, b: int) -> np.ndarray:
    span = hi - lo if hi > lo else 1.0
    return a + (values - lo) / span * (b - a)


def _ticks(draw: ImageDraw.ImageDraw, box: tuple[int, ...], xs: tuple[float, float], ys: tuple[float, float]) -> None:
    font = _font(11)
    draw.text((box[0], box[3] + 6), f"{xs[0]:.3g}", fill="#555555", font=font, anchor="lt")
    draw.text((box[2], box[3] + 6), f"{xs[1]:.3g}", fill="#555555", font=font, anchor="rt")
    draw.text((box[0] - 6, box[3]), f"{ys[0]:.3g}", fill="#555555", font=font, anchor="rb")
    draw.text((box[0] - 6, box[1]), f"{ys[1]:.3g}", fill="#555555", font=font, anchor="rt")


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def scatter_png(points: np.ndarray, labels: Sequence[str], *, title: str = "", x_title: str = "",
                y_title: str = "") -> bytes:
    """Points ``(N, 2)``, each with its label beside it, as PNG bytes."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(labels) != len(pts):
        raise ValueError(f"A scatter needs (N, 2) points and N labels, got {pts.shape} and {len(labels)}.")
    image, draw, box = _frame(title, x_title, y_title)
    pad = 0.08 * (np.ptp(pts, axis=0) + 1e-12)  # room around the outermost points
    lo, hi = pts.min(axis=0) - pad, pts.max(axis=0) + pad
    xs = _scale(pts[:, 0], lo[0], hi[0], box[0], box[2])
    ys = _scale(pts[:, 1], lo[1], hi[1], box[3], box[1])  # up is larger
    font = _font(12, "".join(map(str, labels)))  # one font that writes every label (Chinese ones too)
    for x, y, label in zip(xs, ys, labels, strict=True):
        draw.ellipse((x - 4, y - 4, x + 4, y + 4), fill=PALETTE[0])
        draw.text((x + 6, y - 7), str(label), fill="black", font=font)
    _ticks(draw, box, (lo[0], hi[0]), (lo[1], hi[1]))
    return _png(image)


def lines_png(x: Sequence[float], series: Mapping[str, Sequence[float]], *, title: str = "", x_title: str = "",
              y_title: str = "", y_range: tuple[float, float] | None = None) -> bytes:
    """One line per series over ``x``, with a legend, as PNG bytes."""
    xv = np.asarray(x, dtype=float)
    if not series or any(len(v) != len(xv) for v in series.values()):
        raise ValueError("Each line needs one value per x.")
    image, draw, box = _frame(title, x_title, y_title)
    values = np.asarray(list(series.values()), dtype=float)  # (S, X)
    lo, hi = y_range or (float(np.nanmin(values)), float(np.nanmax(values)))
    px = _scale(xv, xv.min(), xv.max(), box[0], box[2])
    font = _font(12, "".join(series))  # one font that writes every series' name
    for i, (name, ys) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        py = _scale(np.asarray(ys, dtype=float), lo, hi, box[3], box[1])
        draw.line(list(zip(px.tolist(), py.tolist(), strict=True)), fill=colour, width=3)
        for a, b in zip(px, py, strict=True):
            draw.ellipse((a - 3, b - 3, a + 3, b + 3), fill=colour)
        draw.text((box[0] + 10, box[3] - 8 - 18 * (len(series) - i)), f"— {name}", fill=colour, font=font)
    _ticks(draw, box, (float(xv.min()), float(xv.max())), (lo, hi))
    if len(xv) <= 25:  # a number under every point (layers)
        for value, a in zip(xv[1:-1], px[1:-1], strict=True):
            draw.text((a, box[3] + 6), f"{value:.3g}", fill="#555555", font=_font(11), anchor="mt")
    return _png(image)
