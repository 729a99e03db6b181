"""Exports of the attention snapshots a training run keeps: NumPy arrays and an animated GIF time-lapse.

Pure NumPy; Pillow is imported only by :func:`timelapse_gif`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from explorer.i18n import _
from transformer_core.training import Snapshot

# Viridis at 9 evenly spaced stops; :func:`viridis_lut` interpolates between them.
_VIRIDIS_STOPS = np.array([
    [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
    [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
], dtype=float)
GAP_PX = 4  # white space between the heatmaps of a frame
HEADER_PX = 22  # height of the "step N" line above each frame
MAX_SIDE_PX = 900  # frames are scaled down so that neither side exceeds this


def viridis_lut(n: int = 256) -> np.ndarray:
    """``(n, 3)`` uint8 colour table of the Viridis scale (dark purple = 0, yellow = 1)."""
    t = np.linspace(0, len(_VIRIDIS_STOPS) - 1, n)
    lo = np.floor(t).astype(int).clip(0, len(_VIRIDIS_STOPS) - 2)
    frac = (t - lo)[:, None]
    rgb = _VIRIDIS_STOPS[lo] * (1 - frac) + _VIRIDIS_STOPS[lo + 1] * frac
    return np.rint(rgb).astype(np.uint8)


def snapshots_npz(snapshots: Sequence[Snapshot]) -> bytes:
    """The snapshots as an ``.npz`` archive: ``steps`` (N,) and one ``(N, L, H, T, S)`` float16 array per kind.

    ``.npz`` is a zip of ``.npy`` files; ``numpy.load`` opens it, and any zip tool extracts the ``.npy`` files.
    """
    if not snapshots:
        raise ValueError("There are no attention snapshots yet: train for a few steps first.")
    arrays = {"steps": np.array([s.step for s in snapshots], dtype=np.int64)}
    for kind in snapshots[0].attention:
        arrays[kind] = np.stack([s.attention[kind] for s in snapshots])  # (N, L, H, T, S)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def snapshots_npy(snapshots: Sequence[Snapshot], kind: str) -> bytes:
    """One attention kind's snapshots as a single ``.npy`` array ``(N, L, H, T, S)`` in float16.

    The steps the snapshots were taken at are in :func:`snapshots_npz` and in the metrics CSV.
    """
    if not snapshots:
        raise ValueError("There are no attention snapshots yet: train for a few steps first.")
    if kind not in snapshots[0].attention:
        raise ValueError(f"This model has no {kind!r} attention; it has {', '.join(snapshots[0].attention)}.")
    buffer = io.BytesIO()
    np.save(buffer, np.stack([s.attention[kind] for s in snapshots]), allow_pickle=False)  # (N, L, H, T, S)
    return buffer.getvalue()


def frame_pixels(maps: np.ndarray, lut: np.ndarray, cell_px: int) -> np.ndarray:
    """One frame: the ``(L, H, T, S)`` maps as a grid of heatmaps (rows = layers, columns = heads), RGB uint8.

    Every map is coloured on the same 0..1 scale (attention weights are probabilities).
    """
    layers, heads, t, s = maps.shape
    scale = max(1, cell_px // max(t, s))
    tile_h, tile_w = t * scale, s * scale
    height = layers * tile_h + (layers - 1) * GAP_PX
    width = heads * tile_w + (heads - 1) * GAP_PX
    out = np.full((height, width, 3), 255, dtype=np.uint8)
    idx = np.rint(np.clip(np.nan_to_num(maps.astype(np.float32)), 0, 1) * (len(lut) - 1)).astype(int)
    for layer in range(layers):
        for head in range(heads):
            tile = lut[idx[layer, head]].repeat(scale, axis=0).repeat(scale, axis=1)  # (T*k, S*k, 3)
            top, left = layer * (tile_h + GAP_PX), head * (tile_w + GAP_PX)
            out[top:top + tile_h, left:left + tile_w] = tile
    return out


def timelapse_gif(snapshots: Sequence[Snapshot], kind: str, *, lut: np.ndarray | None = None,
                  cell_px: int = 96, frame_ms: int = 300, title: str = "") -> bytes:
    """An animated GIF with one frame per snapshot: every layer x head of attention ``kind``, and the step.

    Args:
        snapshots: the run's snapshots, oldest first.
        kind: which attention to draw, e.g. "cross", "encoder" or "decoder".
        lut: ``(n, 3)`` uint8 colour table (default: Viridis).
        cell_px: about how many pixels each heatmap is wide.
        frame_ms: how long each frame shows; the last one shows three times as long.
        title: text before the step number in each frame's header.
    """
    from PIL import Image, ImageDraw

    frames_in = [s for s in snapshots if kind in s.attention]
    if not frames_in:
        raise ValueError(f"No snapshot has {kind!r} attention to animate.")
    lut = viridis_lut() if lut is None else np.asarray(lut, dtype=np.uint8)
    frames = []
    for snap in frames_in:
        pixels = frame_pixels(snap.attention[kind], lut, cell_px)
        canvas = Image.new("RGB", (pixels.shape[1], pixels.shape[0] + HEADER_PX), "white")
        canvas.paste(Image.fromarray(pixels), (0, HEADER_PX))
        caption = _("{title}step {step}").format(title=title, step=snap.step).strip()
        ImageDraw.Draw(canvas).text((2, 4), caption, fill=(31, 41, 51), font=_caption_font(caption))
        frames.append(canvas)
    return gif_bytes(frames, frame_ms=frame_ms, hold=3)


def _caption_font(text: str):
    """Pillow's own small font for a frame's header, or a font that can write it when it has Chinese."""
    from PIL import ImageFont

    from explorer.render.fonts import font, needs_cjk

    return font(HEADER_PX - 8, text) if needs_cjk(text) else ImageFont.load_default()


def gif_bytes(frames: Sequence, *, frame_ms: int, hold: int, max_side_px: int = MAX_SIDE_PX) -> bytes:
    """RGB Pillow images as one looping GIF: each scaled down to ``max_side_px`` at most, shown ``frame_ms`` each,
    the last ``hold`` times as long."""
    from PIL import Image

    shown = []
    for picture in frames:
        if max(picture.size) > max_side_px:
            ratio = max_side_px / max(picture.size)
            picture = picture.resize((max(1, int(picture.width * ratio)), max(1, int(picture.height * ratio))))
        shown.append(picture.convert("P", palette=Image.Palette.ADAPTIVE))
    durations = [frame_ms] * (len(shown) - 1) + [frame_ms * hold]
    buffer = io.BytesIO()
    shown[0].save(buffer, format="GIF", save_all=True, append_images=shown[1:], duration=durations, loop=0)
    return buffer.getvalue()
