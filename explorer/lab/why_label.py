"""*Why this label?*: a ViT's class logit traced back to its patches (one value per patch), drawn over the picture
beside the attention rollout.

:func:`label_question` lists the likeliest classes of a :class:`~explorer.lab.vit_walkthrough.ViTWalkthrough` as
:class:`~explorer.lab.why_word.Explained` outputs (the model's input is the picture tensor it read; the attention
row is the CLS token's over the patches); :func:`attribution_overlay` colours a picture by per-patch values on a
diverging scale; :func:`pictures_png` puts labelled pictures side by side in one PNG.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from explorer.i18n import _, percent
from explorer.lab.vit_walkthrough import ViTWalkthrough
from explorer.lab.why_word import TOP, Explained, Question
from explorer.render import heatmap as hm

DISPLAY_PX = 320  # the side of a drawn picture, about
CAPTION_PX = 13  # the captions' font size in a PNG
# Fonts for the captions, first found first: Noto Sans CJK writes Chinese as well as Latin; else DejaVu, else Pillow's.
_FONT_PATHS = ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
               "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
               "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def patch_names(grid: int) -> tuple[str, ...]:
    """One name per patch in reading order (left to right, then top to bottom), e.g. "row 2, column 3"."""
    name = _("row {row}, column {column}")
    return tuple(name.format(row=r + 1, column=c + 1) for r in range(grid) for c in range(grid))


def label_question(walk: ViTWalkthrough, model_input: torch.Tensor, names: Sequence[str] | None,
                   k: int = TOP) -> Question:
    """The ``k`` likeliest classes of ``walk``; ``model_input`` ``(C, H, W)`` is the tensor the model read."""
    probs = walk.logits.double().softmax(dim=-1)
    attention = np.stack([a[:, 0, 1:].float().numpy() for a in walk.attention])  # (L, H, N): CLS → each patch
    tokens = patch_names(walk.grid_size)
    values, top = probs.topk(min(k, probs.numel()))
    choices = []
    for p, i in zip(values.tolist(), top.tolist(), strict=True):
        name = names[i] if names is not None and i < len(names) else _("class {n}").format(n=i)
        choices.append(Explained(f"{name} ({percent(p)})", name, model_input.detach(), int(i), -1, tokens, 0,
                                 attention, _("the CLS token (the class is read from it)")))
    return Question(_("Label explained"), tuple(choices))


def attribution_overlay(pixels: np.ndarray, values: np.ndarray, *, alpha: float = 0.65,
                        target: int = DISPLAY_PX) -> Image.Image:
    """A ``(grid, grid)`` map of signed values over a grey copy of ``pixels`` ``(H, W, 3)``: red raised the
    output, blue lowered it, white (the picture shows through) did neither; the colours span ±(largest size)."""
    size, grid = pixels.shape[0], values.shape[0]
    patch = size // grid
    low, high = hm.value_range(values, diverging=True)
    rgb = hm.colours(np.kron(np.asarray(values, dtype=float), np.ones((patch, patch))), hm.DIVERGING, low, high)
    grey = np.asarray(pixels, dtype=np.float64)[:grid * patch, :grid * patch].mean(axis=2, keepdims=True)
    blend = (1 - alpha) * grey + alpha * rgb
    scale = max(1, target // max(1, grid * patch))
    img = Image.fromarray(np.clip(np.rint(blend), 0, 255).astype(np.uint8))
    return img.resize((img.width * scale, img.height * scale), Image.Resampling.NEAREST)


def pictures_png(pictures: Sequence[Image.Image], captions: Sequence[str]) -> bytes:
    """The pictures side by side, each with its caption below, as PNG bytes."""
    line = 18
    width = sum(p.width for p in pictures) + 12 * (len(pictures) + 1)
    height = max(p.height for p in pictures) + 24 + 3 * line  # room for three lines of caption
    out = Image.new("RGB", (width, height), "white")
    draw, x, font = ImageDraw.Draw(out), 12, _caption_font()
    for picture, caption in zip(pictures, captions, strict=True):
        out.paste(picture.convert("RGB"), (x, 12))
        for i, text in enumerate(_wrap(draw, caption, picture.width, font)[:3]):
            draw.text((x, picture.height + 16 + i * line), text, fill="black", font=font)
        x += picture.width + 12
    buf = io.BytesIO()
    out.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _wrap(draw: ImageDraw.ImageDraw, text: str, width: int, font) -> list[str]:
    """``text`` in lines no wider than ``width``: broken between words, and inside a word (or a sentence written
    without spaces, as Chinese is) only where it is wider than a line by itself."""
    lines = [""]
    for word in text.split():
        if draw.textlength(word, font=font) > width:
            current = lines[-1] + (" " if lines[-1] else "")
            for char in word:
                if draw.textlength(current + char, font=font) <= width or not current.strip():
                    current += char
                else:
                    lines[-1] = current.rstrip()
                    lines.append("")
                    current = char
            lines[-1] = current
            continue
        trial = f"{lines[-1]} {word}".strip()
        if draw.textlength(trial, font=font) <= width or not lines[-1]:
            lines[-1] = trial
        else:
            lines.append(word)
    return lines


@lru_cache(maxsize=1)
def _caption_font() -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """The captions' font: one that writes every language of the app where the machine has it."""
    for path in _FONT_PATHS:
        if Path(path).is_file():
            try:
                return ImageFont.truetype(path, CAPTION_PX)
            except OSError:
                continue
    return ImageFont.load_default(CAPTION_PX)
