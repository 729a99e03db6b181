"""The image preprocessing a pretrained vision model was trained with, read from ``preprocessor_config.json``.

The steps follow Hugging Face's ``ViTImageProcessor`` and ``DeiTImageProcessor``: convert to RGB, resize (to an
exact size, or the shortest edge), centre-crop when asked, rescale to [0, 1] and normalise with the stored mean
and standard deviation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

PREPROCESSOR_FILE = "preprocessor_config.json"
MAX_SIDE = 4096  # largest resize or crop side accepted from a preprocessor_config.json
_RESAMPLE_NAMES = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}


def _pixels(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIDE:
        raise ValueError(f"{PREPROCESSOR_FILE}'s {key!r} must be a whole number of pixels from 1 to {MAX_SIDE}, "
                         f"got {value!r}.")
    return value


def _size(value: Any, key: str, default: tuple[int, int]) -> tuple[int, int] | int:
    """``(height, width)``, or a lone int for a shortest-edge resize."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return (_pixels(key, value), _pixels(key, value))
    if isinstance(value, dict):
        if "height" in value and "width" in value:
            return (_pixels(key, value["height"]), _pixels(key, value["width"]))
        if "shortest_edge" in value:
            return _pixels(key, value["shortest_edge"])
    raise ValueError(f"{PREPROCESSOR_FILE}'s {key!r} is not a size: {value!r}.")


def _triple(raw: dict[str, Any], key: str, default: float) -> tuple[float, float, float]:
    value = raw.get(key, [default] * 3)
    if isinstance(value, (int, float)):
        value = [value] * 3
    if not isinstance(value, list) or len(value) != 3 or not all(isinstance(v, (int, float)) for v in value):
        raise ValueError(f"{PREPROCESSOR_FILE}'s {key!r} must be three numbers, got {value!r}.")
    return tuple(float(v) for v in value)


@dataclass(frozen=True)
class ImagePreprocessor:
    """PIL image -> ``(1, 3, H, W)`` float tensor, as the model expects."""

    size: tuple[int, int] | int  # resize to (height, width), or the shortest edge to this many pixels
    crop: tuple[int, int] | None  # centre crop to (height, width) after resizing, or None
    resample: int  # PIL resampling filter (2 bilinear, 3 bicubic)
    rescale_factor: float | None  # multiply pixel values by this (1/255), or None to keep them
    mean: tuple[float, float, float] | None  # per-channel mean subtracted after rescaling, or None
    std: tuple[float, float, float]  # per-channel standard deviation divided by

    @classmethod
    def from_config(cls, raw: dict[str, Any], image_size: int) -> ImagePreprocessor:
        """Read a ``preprocessor_config.json`` dict; missing settings take ViTImageProcessor's defaults."""
        resample = raw.get("resample", 2)
        if resample not in _RESAMPLE_NAMES:
            raise ValueError(f"{PREPROCESSOR_FILE}'s resample={resample!r} is not a known filter.")
        size = _size(raw.get("size"), "size", (image_size, image_size)) if raw.get("do_resize", True) else \
            (image_size, image_size)
        crop = _size(raw.get("crop_size"), "crop_size", (image_size, image_size)) if raw.get("do_center_crop") \
            else None
        if isinstance(crop, int):
            crop = (crop, crop)
        factor = float(raw.get("rescale_factor", 1 / 255)) if raw.get("do_rescale", True) else None
        normalize = raw.get("do_normalize", True)
        mean = _triple(raw, "image_mean", 0.5) if normalize else None
        std = _triple(raw, "image_std", 0.5)
        if min(std) <= 0:
            raise ValueError(f"{PREPROCESSOR_FILE}'s 'image_std' must be positive, got {list(std)}.")
        return cls(size, crop, resample, factor, mean, std)

    @classmethod
    def from_folder(cls, folder: Path, image_size: int) -> ImagePreprocessor:
        """Read the folder's ``preprocessor_config.json`` (ViT defaults for ``image_size`` when there is none)."""
        path = Path(folder) / PREPROCESSOR_FILE
        if not path.is_file():
            return cls.from_config({}, image_size)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{PREPROCESSOR_FILE} is not a readable JSON file ({exc}).") from exc
        if not isinstance(raw, dict):
            raise ValueError(f"{PREPROCESSOR_FILE} must hold a JSON object.")
        return cls.from_config(raw, image_size)

    @property
    def output_size(self) -> tuple[int, int]:
        """``(height, width)`` of the tensors this preprocessor makes (known unless resizing by shortest edge)."""
        if self.crop is not None:
            return self.crop
        return self.size if isinstance(self.size, tuple) else (self.size, self.size)

    def _resized(self, image):
        if isinstance(self.size, tuple):
            h, w = self.size
        else:  # shortest edge -> self.size, aspect ratio kept
            short, long = sorted(image.size)
            scaled = int(self.size * long / short)
            w, h = (self.size, scaled) if image.width <= image.height else (scaled, self.size)
        return image.resize((w, h), resample=self.resample, reducing_gap=None)

    def __call__(self, image) -> torch.Tensor:
        """Shape: a PIL image of any size -> ``(1, 3, H, W)`` float32."""
        x = np.asarray(self._resized(image.convert("RGB")), dtype=np.float32)  # (H, W, 3)
        if self.crop is not None:
            ch, cw = self.crop
            top, left = (x.shape[0] - ch) // 2, (x.shape[1] - cw) // 2
            x = x[max(top, 0) : max(top, 0) + ch, max(left, 0) : max(left, 0) + cw]
        if self.rescale_factor is not None:
            x = x * np.float32(self.rescale_factor)
        if self.mean is not None:
            x = (x - np.asarray(self.mean, dtype=np.float32)) / np.asarray(self.std, dtype=np.float32)
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]  # HWC -> (1, C, H, W)
