"""Reading an attribution beside an attention row: one sentence on where they disagree, the numbers as CSV, and
both rows as one PNG drawn with the app's heatmap renderer (:mod:`explorer.render.heatmap_image`).

Values come one per token; an encoder–decoder's come as two parts (source tokens, then target tokens), drawn as two
rows of a heatmap, the shorter padded with empty (grey) cells.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import numpy as np
from PIL import Image

from explorer.render import heatmap as hm
from explorer.render.heatmap_image import spec_png

PARTS = ("source", "target")  # an encoder–decoder's two rows


def _named(tokens: Sequence[str], i: int) -> str:
    return f"“{tokens[i]}” (position {i})"


def disagreement(values: np.ndarray, attention: np.ndarray, tokens: Sequence[str], *,
                 looker: str = "attention") -> str:
    """One sentence: the token the attention row weighs most vs the token whose attribution is largest in size.

    "They agree" when both are the same token; ``looker`` names the attention (e.g. "the rollout").
    """
    values, attention = np.asarray(values, dtype=float), np.asarray(attention, dtype=float)
    if values.size == 0 or not np.isfinite(values).all() or not np.abs(values).max() > 0:
        return f"No token moved this output: every attribution is 0, so there is nothing to compare with {looker}."
    moved, looked = int(np.abs(values).argmax()), int(np.nanargmax(attention))
    way = "raised" if values[moved] > 0 else "lowered"
    if moved == looked:
        return (f"They agree: {looker} looks most at {_named(tokens, looked)} ({attention[looked]:.0%}), and that "
                f"token also moved the answer most ({way} it by {abs(values[moved]):.3g}).")
    return (f"They disagree: {looker} looks most at {_named(tokens, looked)} ({attention[looked]:.0%}), but "
            f"{_named(tokens, moved)} moved the answer most ({way} it by {abs(values[moved]):.3g}; {looker} gives "
            f"it {attention[moved]:.0%}, and {_named(tokens, looked)} moved it by {values[looked]:+.3g}).")


def as_rows(values: np.ndarray, tokens: Sequence[str], n_source: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``values`` (N,) as heatmap rows ``(R, W)`` (NaN padding), the token of each cell, and the rows' names.

    One row for a text model; the encoder–decoder's source and target tokens on two rows.
    """
    values = np.asarray(values, dtype=float)
    if not n_source:
        return values[None], np.array([list(tokens)], dtype=object), ["tokens"]
    parts = [(values[:n_source], tokens[:n_source]), (values[n_source:], tokens[n_source:])]
    width = max(len(v) for v, _ in parts)
    z, text = np.full((2, width), np.nan), np.full((2, width), "", dtype=object)
    for r, (v, t) in enumerate(parts):
        z[r, :len(v)], text[r, :len(t)] = v, list(t)
    return z, text, list(PARTS)


def why_csv(tokens: Sequence[str], values: np.ndarray, attention: np.ndarray, n_source: int = 0) -> str:
    """One line per token: its position (in its part), the part, the token, its attribution and its attention."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["position", "part", "token", "attribution", "attention"])
    for i, (token, v, a) in enumerate(zip(tokens, np.asarray(values), np.asarray(attention), strict=True)):
        part = "" if not n_source else PARTS[int(i >= n_source)]
        writer.writerow([i - n_source if n_source and i >= n_source else i, part, token, repr(float(v)),
                         repr(float(a))])
    return buf.getvalue()


def why_png(tokens: Sequence[str], values: np.ndarray, attention: np.ndarray, n_source: int = 0, *,
            titles: tuple[str, str] = ("Attribution", "Attention"), attention_scale: str = "Viridis",
            attention_range: tuple[float, float] = (0.0, 1.0)) -> bytes:
    """The attribution rows (diverging colours around 0) above the attention rows (coloured over
    ``attention_range``), each cell labelled with its token, as one PNG."""
    z, text, names = as_rows(values, tokens, n_source)
    w, _, _ = as_rows(attention, tokens, n_source)
    cols = [str(i) for i in range(z.shape[1])]
    low, high = hm.value_range(z, diverging=True)
    top = hm.HeatmapSpec(z, tuple(names), tuple(cols), hm.DIVERGING, low, high, text, titles[0], "attribution")
    bottom = hm.HeatmapSpec(w, tuple(names), tuple(cols), attention_scale, *attention_range, text, titles[1],
                            "weight")
    images = [Image.open(io.BytesIO(spec_png(s))) for s in (top, bottom)]
    out = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images)), "white")
    y = 0
    for image in images:
        out.paste(image, (0, y))
        y += image.height
    buf = io.BytesIO()
    out.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
