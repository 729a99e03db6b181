"""The ViT page's pictures, drawn with Pillow (crisp pixels): the grid over the picture, the patches pulled apart,
the token sequence, attention over the picture; and each picture once encoded as PNG for the page.

A rerun of the page (any widget, or a class's refresh) draws the same pictures again from the same picture and
settings. :func:`png` keeps the encoded bytes of the last :data:`PICTURES_KEPT` pictures the server drew, keyed by
everything a picture is drawn from (the pixels, the patch size, the weights, the colour scale and range), so a rerun
sends them without drawing or encoding them again (about half of the page's rerun before, the 2-core machine). A
picture is found only by the very inputs it was drawn from: another session gets it only by asking for the same
picture of the same pixels. PNG keeps the enlarged pixels and the grid's numbers sharp, where Streamlit's default
for a picture without transparency is JPEG.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import streamlit as st
from PIL import Image, ImageDraw, ImageFont

from explorer.render import heatmap as hm
from ui.common.charts import colorscale, stretch_attention
from ui.common.exports import colormap

DISPLAY_PX = 384  # pictures are enlarged by a whole factor to about this many pixels per side
SMALL_PX = 160  # side of the per-head attention pictures
MAX_NUMBERED = 64  # patches are numbered on the grid when there are at most this many
GRID_COLOUR = (255, 255, 255)
OUTLINE = (20, 20, 20)
EDGE = (185, 185, 185)  # the grey edge of grid lines and tiles, seen on white pictures too


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
    """White grid lines edged in grey: white alone vanished on a white sky or a padded border."""
    draw = ImageDraw.Draw(img)
    width = max(1, cell // 24)
    for edge, fill in ((width + 2, EDGE), (width, colour)):
        for k in range(0, img.width + 1, cell):
            x = min(k, img.width - 1)
            draw.line([(x, 0), (x, img.height)], fill=fill, width=edge)
            draw.line([(0, x), (img.width, x)], fill=fill, width=edge)


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
    draw = ImageDraw.Draw(out)
    for r in range(grid):
        for c in range(grid):
            tile = img.crop((c * cell, r * cell, (c + 1) * cell, (r + 1) * cell))
            x, y = gap + c * (cell + gap), gap + r * (cell + gap)
            out.paste(tile, (x, y))
            draw.rectangle([x - 1, y - 1, x + cell, y + cell], outline=EDGE)  # a white tile on the white page
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
                      stretch: bool | None = None, alpha: float = 0.6, target: int = DISPLAY_PX) -> Image.Image:
    """Blend a ``(grid, grid)`` attention map over the picture, coloured on the attention range: 0 to 1, or the map's
    own lowest to highest weight when ``stretch`` (``None``: the sidebar's choices of scale and range)."""
    size, grid = pixels.shape[0], weights.shape[0]
    patch = size // grid
    low, high = hm.attention_range(weights, stretch=stretch_attention() if stretch is None else stretch)
    w = np.clip((np.asarray(weights, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    heat = np.kron(w, np.ones((patch, patch)))  # (H, W), one flat value per patch
    coloured = colormap(scale_name or colorscale())[np.clip(np.rint(heat * 255), 0, 255).astype(int)]
    grey = pixels.astype(np.float64).mean(axis=2, keepdims=True)  # a grey picture keeps the colours readable
    blend = (1 - alpha) * grey + alpha * coloured
    scale = display_scale(size, target)
    img = enlarge(np.clip(np.rint(blend), 0, 255).astype(np.uint8), scale)
    _draw_grid(img, patch * scale, colour=(235, 235, 235))
    return img


PICTURES_KEPT = 64  # encoded pictures the server keeps: 4-240 kB each (a 224-pixel picture at patch 4), 15 MB at most
DRAWINGS = {"grid": grid_overlay, "mosaic": patch_mosaic, "strip": sequence_strip, "attention": attention_overlay}


@st.cache_data(max_entries=PICTURES_KEPT, show_spinner=False)
def _encoded(drawing: str, pixels: np.ndarray, options: tuple[tuple[str, Any], ...]) -> bytes:
    buf = io.BytesIO()
    DRAWINGS[drawing](pixels, **dict(options)).save(buf, format="PNG")
    return buf.getvalue()


def png(drawing: str, pixels: np.ndarray, **options: Any) -> bytes:
    """The PNG bytes of picture ``drawing`` (a key of :data:`DRAWINGS`) of ``pixels`` with ``options`` (its other
    arguments), drawn once for the server (see the module docstring). An attention picture is drawn on the sidebar's
    colour scale and range, which become part of what it is kept by."""
    if drawing == "attention":
        options = {"scale_name": colorscale(), "stretch": stretch_attention()} | options
    return _encoded(drawing, pixels, tuple(sorted(options.items())))


def show(where: Any, drawing: str, pixels: np.ndarray, *, caption: str, **options: Any) -> None:
    """Draw picture ``drawing`` (see :func:`png`) in the container ``where`` (``st`` or a column), as PNG."""
    where.image(png(drawing, pixels, **options), caption=caption, output_format="PNG")
