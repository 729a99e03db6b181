"""What a :class:`~explorer.lab.generation.Writing` is drawn and saved as: the growing attention heatmap (one row
per new token), its steps as a CSV table, and an animated GIF of the heatmap growing.

Row k of the heatmap is step k: the attention of the token the model had just read (the prompt's last token at
step 1, then each token it wrote) over every token before it, as it chose token k. Columns are the tokens read,
the prompt's first; the written ones carry :data:`WRITTEN_MARK`. A cell right of a row's last token is NaN (drawn
grey): that token did not exist yet.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from explorer.i18n import _, ngettext, pgettext
from explorer.lab.generation import TOP_CANDIDATES, Writing
from explorer.render.heatmap import HeatmapSpec, attention_spec
from explorer.render.heatmap_image import spec_png
from explorer.render.timelapse import gif_bytes

WRITTEN_MARK = "✎"  # marks a column label that is a written token (not the prompt's)
GIF_MAX_SIDE_PX = 900  # frames are scaled down so that neither side exceeds this
GIF_MAX_FRAMES = 64  # at most this many frames: longer writings keep evenly spaced steps (the last always)
GIF_FRAME_MS = 350  # how long each frame shows; the last shows four times as long


@dataclass(frozen=True)
class Growing:
    """The heatmap of one head: ``(steps, tokens read)`` weights and labels."""

    weights: np.ndarray  # (n, P + n - 1) float, NaN where the row's token did not exist yet
    rows: tuple[str, ...]  # "read → written" per step
    cols: tuple[str, ...]  # the tokens read: the prompt's, then the written ones with WRITTEN_MARK
    prompt_len: int  # how many columns belong to the prompt


def growing(writing: Writing, layer: int, head: int) -> Growing:
    """The heatmap of ``layer`` and ``head`` (0-based) over every token written so far.

    Raises:
        ValueError: for a layer or head the model does not have, or before the first token.
    """
    done = writing.written
    if not done:
        raise ValueError("Nothing is written yet.")
    n_layers, n_heads, _positions = done[0].attention.shape
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise ValueError(f"The model has {n_layers} layers of {n_heads} heads; there is no layer {layer + 1}, "
                         f"head {head + 1}.")
    p = len(writing.prompt_ids)
    z = np.full((len(done), p + len(done) - 1), np.nan)
    for i, token in enumerate(done):
        row = token.attention[layer, head]  # (position,)
        z[i, :row.size] = row
    read = (*writing.prompt_tokens, *(t.token for t in done[:-1]))
    cols = (*writing.prompt_tokens, *(WRITTEN_MARK + t.token for t in done[:-1]))
    rows = tuple(f"{read[t.position - 1]} → {t.token}" for t in done)
    return Growing(z, rows, cols, p)


def growing_spec(writing: Writing, layer: int, head: int, *, scale: str = "Viridis",
                 stretch: bool = False) -> HeatmapSpec:
    """:func:`growing` as a heatmap spec (attention colours, percentages in the cells), titled with the head."""
    grown = growing(writing, layer, head)
    title = ngettext("Layer {layer} · head {head}, {n} step", "Layer {layer} · head {head}, {n} steps",
                     len(grown.rows)).format(layer=layer + 1, head=head + 1, n=len(grown.rows))
    return attention_spec(grown.weights, grown.rows, grown.cols, scale=scale, stretch=stretch, title=title)


def steps_csv(writing: Writing) -> str:
    """One row per written token: step, position, id, token, its probability and the top candidates."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    ranks = range(1, TOP_CANDIDATES + 1)
    out.writerow([
        pgettext("CSV header", "step"), pgettext("CSV header", "position"), pgettext("CSV header", "token_id"),
        pgettext("CSV header", "token"), pgettext("CSV header", "probability"),
        pgettext("CSV header", "end_of_text"),
        *(header.format(rank=r) for r in ranks
          for header in (pgettext("CSV header", "candidate_{rank}"),
                         pgettext("CSV header", "candidate_probability_{rank}")))])
    for t in writing.written:
        top = t.candidates[:TOP_CANDIDATES]
        pairs = [v for c in top for v in (c.token, repr(c.probability))]
        pairs += [""] * (2 * TOP_CANDIDATES - len(pairs))
        out.writerow([t.step, t.position, t.token_id, t.token, repr(t.probability), int(t.end), *pairs])
    return buf.getvalue()


def frame_steps(n: int, most: int = GIF_MAX_FRAMES) -> list[int]:
    """Which step counts become frames: every one up to ``most``, else ``most`` evenly spaced ones, ``n`` last."""
    if n <= most:
        return list(range(1, n + 1))
    return sorted({max(1, round(n * (k + 1) / most)) for k in range(most)} | {n})


def _frame(grown: Growing, k: int) -> Growing:
    """``grown`` as it stood after ``k`` steps, in the final shape: later rows grey and their labels blank (blanks
    as long as the labels, so every frame has the same layout)."""
    z = grown.weights.copy()
    z[k:] = np.nan
    shown = grown.prompt_len + k - 1
    rows = tuple(r if i < k else " " * len(r) for i, r in enumerate(grown.rows))
    cols = tuple(c if j < shown else " " * len(c) for j, c in enumerate(grown.cols))
    return Growing(z, rows, cols, grown.prompt_len)


def growing_gif(writing: Writing, layer: int, head: int, *, scale: str = "Viridis", stretch: bool = False) -> bytes:
    """An animated GIF of the heatmap growing one row per step (size-capped: see :data:`GIF_MAX_SIDE_PX` and
    :data:`GIF_MAX_FRAMES`); every frame is drawn like the PNG export, in the final frame's layout.

    Raises:
        ValueError: before the first token, or for a layer or head the model does not have.
    """
    grown = growing(writing, layer, head)
    whole = attention_spec(grown.weights, scale=scale, stretch=stretch)
    frames = []
    for k in frame_steps(len(grown.rows)):
        shown = _frame(grown, k)
        spec = attention_spec(shown.weights, shown.rows, shown.cols, scale=scale, stretch=stretch,
                              title=_("Layer {layer} · head {head} — step {k}").format(layer=layer + 1,
                                                                                        head=head + 1, k=k))
        spec = replace(spec, zmin=whole.zmin, zmax=whole.zmax)  # one colour range for every frame
        frames.append(Image.open(io.BytesIO(spec_png(spec))).convert("RGB"))
    return gif_bytes(frames, frame_ms=GIF_FRAME_MS, hold=4, max_side_px=GIF_MAX_SIDE_PX)
