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

from explorer.i18n import N_, _, num, percent
from explorer.render import heatmap as hm
from explorer.render.heatmap_image import spec_png

PARTS = (N_("source"), N_("target"))  # an encoder–decoder's two rows (English; shown through _())


def sig(value: float, digits: int = 3, *, sign: bool = False) -> str:
    """``value`` to ``digits`` significant digits (like ``{:.3g}``), written as the active language writes it."""
    text = f"{float(value):.{digits}g}"
    if "e" in text or not np.isfinite(value):
        shown = text
    else:
        decimals = len(text.split(".")[1]) if "." in text else 0
        shown = num(float(text), decimals)
    return ("+" + shown) if sign and float(value) >= 0 else shown


def _named(tokens: Sequence[str], i: int) -> str:
    return _("“{token}” (position {position})").format(token=tokens[i], position=i)


def disagreement(values: np.ndarray, attention: np.ndarray, tokens: Sequence[str], *,
                 looker: str | None = None) -> str:
    """One sentence: the token the attention row weighs most vs the token whose attribution is largest in size.

    "They agree" when both are the same token; ``looker`` names the attention (e.g. "the rollout"), already in
    the reader's language (default: "attention", translated).
    """
    looker = _("attention") if looker is None else looker
    values, attention = np.asarray(values, dtype=float), np.asarray(attention, dtype=float)
    if values.size == 0 or not np.isfinite(values).all() or not np.abs(values).max() > 0:
        return _("No token moved this output: every attribution is 0, so there is nothing to compare with "
                 "{looker}.").format(looker=looker)
    moved, looked = int(np.abs(values).argmax()), int(np.nanargmax(attention))
    raised = values[moved] > 0
    fill = dict(looker=looker, looked=_named(tokens, looked), share=percent(attention[looked]),
                by=sig(abs(values[moved])))
    if moved == looked:
        said = (_("They agree: {looker} looks most at {looked} ({share}), and that token also moved the answer most "
                  "(raised it by {by}).") if raised else
                _("They agree: {looker} looks most at {looked} ({share}), and that token also moved the answer most "
                  "(lowered it by {by})."))
        return said.format(**fill)
    fill.update(moved=_named(tokens, moved), moved_share=percent(attention[moved]),
                looked_by=sig(values[looked], sign=True))
    said = (_("They disagree: {looker} looks most at {looked} ({share}), but {moved} moved the answer most (raised "
              "it by {by}; {looker} gives it {moved_share}, and {looked} moved it by {looked_by}).") if raised else
            _("They disagree: {looker} looks most at {looked} ({share}), but {moved} moved the answer most (lowered "
              "it by {by}; {looker} gives it {moved_share}, and {looked} moved it by {looked_by})."))
    return said.format(**fill)


def as_rows(values: np.ndarray, tokens: Sequence[str], n_source: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``values`` (N,) as heatmap rows ``(R, W)`` (NaN padding), the token of each cell, and the rows' names.

    One row for a text model; the encoder–decoder's source and target tokens on two rows.
    """
    values = np.asarray(values, dtype=float)
    if not n_source:
        return values[None], np.array([list(tokens)], dtype=object), [_("tokens")]
    parts = [(values[:n_source], tokens[:n_source]), (values[n_source:], tokens[n_source:])]
    width = max(len(v) for v, _t in parts)
    z, text = np.full((2, width), np.nan), np.full((2, width), "", dtype=object)
    for r, (v, t) in enumerate(parts):
        z[r, :len(v)], text[r, :len(t)] = v, list(t)
    return z, text, [_(p) for p in PARTS]


def why_csv(tokens: Sequence[str], values: np.ndarray, attention: np.ndarray, n_source: int = 0) -> str:
    """One line per token: its position (in its part), the part, the token, its attribution and its attention."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([_("position"), _("part"), _("token"), _("attribution"), _("attention")])
    for i, (token, v, a) in enumerate(zip(tokens, np.asarray(values), np.asarray(attention), strict=True)):
        part = "" if not n_source else _(PARTS[int(i >= n_source)])
        writer.writerow([i - n_source if n_source and i >= n_source else i, part, token, repr(float(v)),
                         repr(float(a))])
    return buf.getvalue()


def why_png(tokens: Sequence[str], values: np.ndarray, attention: np.ndarray, n_source: int = 0, *,
            titles: tuple[str, str] | None = None, attention_scale: str = "Viridis",
            attention_range: tuple[float, float] = (0.0, 1.0)) -> bytes:
    """The attribution rows (diverging colours around 0) above the attention rows (coloured over
    ``attention_range``), each cell labelled with its token, as one PNG (``titles``: the two pictures' titles)."""
    titles = (_("Attribution"), _("Attention")) if titles is None else titles
    z, text, names = as_rows(values, tokens, n_source)
    w, _t, _n = as_rows(attention, tokens, n_source)
    cols = [str(i) for i in range(z.shape[1])]
    low, high = hm.value_range(z, diverging=True)
    top = hm.HeatmapSpec(z, tuple(names), tuple(cols), hm.DIVERGING, low, high, text, titles[0], _("attribution"))
    bottom = hm.HeatmapSpec(w, tuple(names), tuple(cols), attention_scale, *attention_range, text, titles[1],
                            _("weight"))

    images = [Image.open(io.BytesIO(spec_png(s))) for s in (top, bottom)]
    out = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images)), "white")
    y = 0
    for image in images:
        out.paste(image, (0, y))
        y += image.height
    buf = io.BytesIO()
    out.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
