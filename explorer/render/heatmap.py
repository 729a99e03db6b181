"""One description of a heatmap and one colour mapping, shared by every renderer.

A :class:`HeatmapSpec` holds what a heatmap shows — values, row and column labels, colour scale and range, title,
the text printed in each cell, whether the map is nearly uniform — and no drawing. The on-screen charts (Plotly and
Vega-Lite) and the PNG/SVG exports all draw from it, and all colour through :func:`colours`: each scale is a list of
evenly spaced stops joined by straight lines in RGB, which is also how Plotly and Vega (``interpolate: "rgb"``)
blend a list of colours, so an export has exactly the colours of the chart on screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from explorer.i18n import N_, _, num, separators

AXIS_LABEL_CHARS = 32  # the longest label a chart's axis writes whole ("12. " and a line's first 28 characters)

# Evenly spaced stops of each scale (Plotly's own definitions). Sequential, colour-blind-safe scales first.
SCALES: dict[str, tuple[str, ...]] = {
    "Viridis": ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
                "#b5de2b", "#fde725"),
    "Cividis": ("#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8678", "#a59c74", "#c3b369",
                "#e1cc55", "#fee838"),
    "Plasma": ("#0d0887", "#46039f", "#7201a8", "#9c179e", "#bd3786", "#d8576b", "#ed7953", "#fb9f3a",
               "#fdca26", "#f0f921"),
    "Blues": ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"),
    "Greys": ("#ffffff", "#f0f0f0", "#d9d9d9", "#bdbdbd", "#969696", "#737373", "#525252", "#252525", "#000000"),
    # blue = negative, red = positive; readable with the common colour deficiencies
    "RdBu_r": ("#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d",
               "#b2182b", "#67001f"),
}
DIVERGING = "RdBu_r"  # the scale of signed values (scores, embeddings)
NAN_RGB = (220, 220, 220)  # NaN (masked) cells are light grey in every renderer
NAN_HEX = "#dcdcdc"
INK_LUMA = 140  # a cell whose luma (0.299 R + 0.587 G + 0.114 B) is above this gets black text, else white
NEAR_UNIFORM = 0.05  # a map is "nearly uniform" when in every row the weights lie closer together than this


def stops(scale: str) -> tuple[str, ...]:
    """The hex colour stops of ``scale``; a friendly ``ValueError`` names the scales there are."""
    if scale not in SCALES:
        raise ValueError(f"Unknown colour scale {scale!r}; choose one of {', '.join(SCALES)}.")
    return SCALES[scale]


def _stop_rgb(scale: str) -> np.ndarray:
    return np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in stops(scale)], dtype=float)  # (n, 3)


def colours(values: np.ndarray, scale: str, zmin: float, zmax: float) -> np.ndarray:
    """The RGB colour ``(..., 3)`` uint8 of every value: its place in ``zmin..zmax`` (clipped), blended linearly
    between the two nearest stops of ``scale``. NaN becomes :data:`NAN_RGB`."""
    z = np.asarray(values, dtype=float)
    rgb = _stop_rgb(scale)
    t = np.clip((np.nan_to_num(z, nan=zmin, posinf=zmax, neginf=zmin) - zmin) / (zmax - zmin or 1.0), 0.0, 1.0)
    pos = t * (len(rgb) - 1)
    low = np.minimum(np.floor(pos).astype(int), len(rgb) - 2)
    frac = (pos - low)[..., None]
    out = np.rint(rgb[low] * (1 - frac) + rgb[low + 1] * frac).astype(np.uint8)
    out[np.isnan(z)] = NAN_RGB
    return out


def _luma(red, green, blue):
    """ITU-R 601 luma of a colour (numbers) or of many (arrays), 0..255."""
    return 0.299 * red + 0.587 * green + 0.114 * blue


def ink(rgb: Sequence[int]) -> tuple[int, int, int]:
    """Black or white text, whichever reads better on a cell of colour ``rgb``."""
    return (0, 0, 0) if _luma(*rgb[:3]) > INK_LUMA else (255, 255, 255)


def dark_ink(rgb: np.ndarray) -> np.ndarray:
    """For colours ``rgb`` (..., 3), whether :func:`ink` writes black on each (for many colours at once)."""
    rgb = np.asarray(rgb, dtype=float)
    return _luma(rgb[..., 0], rgb[..., 1], rgb[..., 2]) > INK_LUMA


def percent_text(value: float) -> str:
    """A weight in 0..1 as a rounded percentage: "31%", "<1%" for a tiny non-zero weight, "0%" for none."""
    if not math.isfinite(value):
        return ""
    if 0 < value < 0.005:
        return "<1%"
    return f"{100 * value:.0f}%"


def number_text(value: float, decimals: int) -> str:
    """A value with ``decimals`` decimals; "-∞" for minus infinity, "" for NaN; never "-0.00" (it means nothing)."""
    if value != value:  # NaN
        return ""
    if value == -math.inf:
        return "-∞"
    text = f"{value:.{decimals}f}"
    return text[1:] if text[0] == "-" and float(text) == 0 else text


def cell_texts(z: np.ndarray, *, decimals: int = 2, percent: bool = False) -> np.ndarray:
    """The text of every cell: rounded percentages for weights, else numbers with ``decimals`` decimals, in the
    active language's decimal sign."""
    z = np.asarray(z, dtype=float)
    # Python floats (tolist) format several times faster than NumPy scalars: a page draws thousands of cells.
    values = z.ravel().tolist()
    text = [percent_text(v) for v in values] if percent else [number_text(v, decimals) for v in values]
    point = separators()[0]
    if point != "." and not percent:  # "-0,98" beside a colour bar that reads "3,26" (grouping never applies)
        text = [t.replace(".", point) for t in text]
    return np.array(text, dtype=object).reshape(z.shape)


def row_spread(weights: np.ndarray) -> float:
    """The largest ``max − min`` of one row of attention weights ``(..., S)``, over the keys the row may see.

    Masked keys (weight exactly 0) are left out, and so are rows that see a single key (a causal mask's first
    row has nothing to spread). Only when no row sees two keys (one-hot attention) do the zeros count.
    """
    w = np.asarray(weights, dtype=float)
    w = w.reshape(-1, w.shape[-1]) if w.ndim else w.reshape(1, 1)
    seen = w > 0
    several = seen.sum(axis=1) >= 2
    if not several.any():
        return float((w.max(axis=1) - w.min(axis=1)).max()) if w.size else 0.0
    spans = np.where(seen, w, -np.inf).max(axis=1) - np.where(seen, w, np.inf).min(axis=1)
    return float(spans[several].max())


def uniform_note() -> str:
    """What a nearly uniform map's title says, in the active language."""
    return _("nearly uniform: max − min < {limit} in every row").format(limit=num(NEAR_UNIFORM))


def nearly_uniform(weights: np.ndarray) -> bool:
    """Whether every row of ``weights`` spreads its attention almost evenly (see :data:`NEAR_UNIFORM`)."""
    return row_spread(weights) < NEAR_UNIFORM


def attention_range(weights: np.ndarray, *, stretch: bool) -> tuple[float, float]:
    """The colour range of attention ``weights``: 0 to 1, or their own min to max when ``stretch``."""
    w = np.asarray(weights, dtype=float)
    if not stretch or not np.isfinite(w).any():
        return 0.0, 1.0
    low, high = float(np.nanmin(w)), float(np.nanmax(w))
    return low, max(high, low + 1e-9)


def value_range(z: np.ndarray, *, diverging: bool, zmin: float | None = None,
                zmax: float | None = None) -> tuple[float, float]:
    """The colour range of ``z``: the bounds given, ±(largest magnitude) when diverging, else the data's min and max.
    NaN and infinite values are ignored; the range never has zero width."""
    finite = np.asarray(z, dtype=float)[np.isfinite(z)]
    if diverging and zmin is None and zmax is None:
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        return -(bound or 1.0), bound or 1.0
    lo = zmin if zmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = zmax if zmax is not None else (float(finite.max()) if finite.size else 1.0)
    return lo, (hi if hi > lo else lo + 1.0)


@dataclass(frozen=True, eq=False)
class HeatmapSpec:
    """What one heatmap shows, for any renderer. Build it with :func:`attention_spec` or :func:`matrix_spec`."""

    values: np.ndarray  # (rows, columns) floats; NaN = a masked or missing cell, drawn grey
    rows: tuple[str, ...]  # one label per row (top to bottom)
    cols: tuple[str, ...]  # one label per column (left to right)
    scale: str  # a key of SCALES
    zmin: float  # the value coloured as the scale's first stop...
    zmax: float  # ...and as its last; values outside are clipped
    given_text: np.ndarray | None  # (rows, columns) the text of each cell ("-∞" for a masked score); None: the
    # values as numbers (see decimals, percent), written only when read, because a large map never prints them
    title: str = ""  # the heading; a nearly uniform map says so in it
    hover_name: str = N_("value")  # what a cell's number is called on hover ("weight", "score")
    uniform: bool = False  # attention whose every row is nearly uniform (see NEAR_UNIFORM)
    decimals: int = 2  # the numbers' decimals, when the text is not given...
    percent: bool = False  # ...or rounded percentages instead (weights)

    def __post_init__(self) -> None:
        shape = np.shape(self.values)
        if len(shape) != 2:
            raise ValueError(f"A heatmap needs a 2-D matrix, got shape {shape}.")
        text_shape = shape if self.given_text is None else np.shape(self.given_text)
        if (len(self.rows), len(self.cols)) != shape or text_shape != shape:
            raise ValueError(f"A {shape[0]} × {shape[1]} heatmap needs {shape[0]} row labels, {shape[1]} column "
                             f"labels and a text per cell; got {len(self.rows)}, {len(self.cols)} and "
                             f"{text_shape}.")
        stops(self.scale)
        if not self.zmax > self.zmin:
            raise ValueError(f"The colour range must grow: got {self.zmin} to {self.zmax}.")

    @cached_property
    def text(self) -> np.ndarray:
        """``(rows, columns)`` the text of each cell ("31%", "-0.42", "-∞"), shown in cells and on hover."""
        if self.given_text is not None:
            return np.asarray(self.given_text, dtype=object)
        return cell_texts(self.values, decimals=self.decimals, percent=self.percent)

    def colours(self) -> np.ndarray:
        """The RGB colour ``(rows, columns, 3)`` of every cell."""
        return colours(self.values, self.scale, self.zmin, self.zmax)


def axis_label(label: str, most: int = AXIS_LABEL_CHARS) -> str:
    """``label`` as an axis writes it: at most ``most`` characters, a longer one cut with "…" (its map would
    otherwise shrink to a strip beside a 60-letter compound; tables and files keep the whole label)."""
    return label if len(label) <= most else label[: most - 1] + "…"


def labels(given: Sequence[str] | None, n: int) -> tuple[str, ...]:
    """``given`` as strings when there is one per index, else the indices "0", "1", …"""
    return tuple(str(s) for s in given) if given is not None and len(given) == n else tuple(str(i) for i in range(n))


def attention_spec(weights: np.ndarray, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None, *,
                   scale: str = "Viridis", stretch: bool = False, title: str = "") -> HeatmapSpec:
    """Attention weights in 0..1: fixed 0–1 colours (or stretched), rounded percentages in the cells, and the
    title flags a nearly uniform map."""
    w = _matrix(weights)
    uniform = nearly_uniform(w)
    note = uniform_note() if uniform else ""
    zmin, zmax = attention_range(w, stretch=stretch)
    return HeatmapSpec(w, labels(rows, w.shape[0]), labels(cols, w.shape[1]), scale, zmin, zmax, None,
                       f"{title} — {note}" if title and note else title or note, _("weight"), uniform, percent=True)


def matrix_spec(z: np.ndarray, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None, *,
                scale: str = "Viridis", diverging: bool = False, zmin: float | None = None, zmax: float | None = None,
                decimals: int = 2, title: str = "", hover_name: str | None = None,
                text: np.ndarray | None = None, percent: bool = False) -> HeatmapSpec:
    """Any matrix: diverging colours centred on 0 for signed values, else ``scale``; numbers in the cells, or
    rounded percentages with ``percent`` (``text`` replaces them, e.g. "-∞" for masked scores). NaN cells are grey."""
    z = _matrix(z)
    low, high = value_range(z, diverging=diverging, zmin=zmin, zmax=zmax)
    return HeatmapSpec(z, labels(rows, z.shape[0]), labels(cols, z.shape[1]), DIVERGING if diverging else scale,
                       low, high, text, title, _("value") if hover_name is None else hover_name, decimals=decimals,
                       percent=percent)


def _matrix(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"A heatmap needs a 2-D matrix, got shape {z.shape}.")
    return z
