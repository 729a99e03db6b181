"""Safe image loading for uploads: decode untrusted bytes into a small RGB picture, or explain why not.

Every failure raises :class:`ImageError` with a message a student can act on. The pixel count is checked from
the header *before* any pixels are decoded (a "decompression bomb" is a tiny file that claims huge dimensions),
large JPEGs are decoded at a reduced scale, and unusual colour modes are converted to 8-bit RGB with a note.
Messages and notes are English (uploads are decoded in a cache every session shares); a page shows them in the
reader's language with :func:`explorer.i18n.message.localized`.
"""

from __future__ import annotations

import io
import struct
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from explorer.i18n import N_
from explorer.i18n.message import Message, Num

# File formats accepted from uploads ("MPO" is how Pillow names many camera JPEGs).
FORMATS = ("PNG", "JPEG", "MPO", "WEBP", "GIF", "BMP")
MAX_PIXELS = 40_000_000  # largest width x height accepted (a 40-megapixel photo); more is treated as a bomb
MAX_BYTES = 10 * 1024 * 1024  # largest file accepted; the ViT page's uploader has the same limit
MAX_SIDE = 1024  # decoded pictures are shrunk to at most MAX_SIDE**2 pixels (aspect kept) to stay fast
FIT_MODES = ("center-crop", "resize", "pad")
# What Pillow's readers raise on damaged data: a truncated later GIF frame gives IndexError or struct.error when the
# frames are counted, broken headers give SyntaxError, KeyError or ZeroDivisionError, cut pixel data OSError.
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, KeyError, TypeError, ZeroDivisionError,
                  struct.error, Image.DecompressionBombError)


class ImageError(ValueError):
    """The bytes cannot be used as an image; the message says why in plain words."""


@dataclass(frozen=True)
class LoadedImage:
    """A decoded upload and what was done to it."""

    image: Image.Image  # the picture in mode "RGB", at most max_side**2 pixels
    original_size: tuple[int, int]  # (width, height) stated by the file
    original_mode: str  # Pillow colour mode of the file, e.g. "RGBA", "CMYK", "I;16"
    file_format: str  # "PNG", "JPEG", ...
    notes: tuple[str, ...] = ()  # conversions applied, in plain English words (shown with i18n.message.localized)


def read_image(data: bytes, *, max_pixels: int = MAX_PIXELS, max_bytes: int = MAX_BYTES,
               max_side: int = MAX_SIDE) -> LoadedImage:
    """Decode image bytes safely into an RGB picture plus notes on any conversion.

    Raises:
        ImageError: empty, too large, not an image, truncated or damaged, too many pixels, or an unusable mode.
    """
    if not data:
        raise ImageError(N_("The file is empty (0 bytes). Please choose an image file."))
    if len(data) > max_bytes:
        raise ImageError(Message(N_("The file is {size} MB; the limit is {limit} MB."),
                                 {"size": Num(len(data) / 2**20, 1), "limit": Num(max_bytes / 2**20, 0)}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            img = Image.open(io.BytesIO(data), formats=_registered_formats())
        except UnidentifiedImageError:
            raise ImageError(
                N_("This file is not an image that can be read (PNG, JPEG, WebP, GIF or BMP are supported).")
            ) from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise _bomb_error(None, max_pixels) from None
        except _DECODE_ERRORS as err:
            raise ImageError(
                Message(N_("The file looks damaged and cannot be opened ({detail})."), {"detail": _short(err)})
            ) from None
        return _decode(img, max_pixels=max_pixels, max_side=max_side)


def _registered_formats() -> list[str]:
    Image.init()  # registers every plugin (some, such as MPO, are not loaded by default)
    return [f for f in FORMATS if f in Image.OPEN]


def _decode(img: Image.Image, *, max_pixels: int, max_side: int) -> LoadedImage:
    """Check the stated size, then count frames, decode, orient and convert; any Pillow failure is an ImageError."""
    size, mode, fmt = img.size, img.mode, img.format or "image"
    width, height = size
    if width < 1 or height < 1:
        raise ImageError(Message(N_("The image claims a size of {width}x{height} pixels, which is empty."),
                                 {"width": str(width), "height": str(height)}))
    if width * height > max_pixels:
        raise _bomb_error(size, max_pixels)
    notes: list[str] = []
    try:
        frames = _frame_count(img)  # walks every frame header: a damaged later frame fails here
        if frames > 1:
            notes.append(
                Message(N_("This is an animation with {frames} frames; only the first frame is used."),
                        {"frames": str(frames)})
            )
        if fmt in ("JPEG", "MPO"):
            img.draft("RGB", (max_side, max_side))  # let the JPEG decoder shrink by 1/2, 1/4 or 1/8 for free
        img.load()
        rgb = to_rgb(_orient(img, notes), notes)
        if rgb.width * rgb.height > max_side**2:
            scale = (max_side**2 / (rgb.width * rgb.height)) ** 0.5  # keep the aspect ratio, cap the pixel count
            rgb = rgb.resize((max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale))),
                             Image.Resampling.LANCZOS)
            notes.append(Message(
                N_("Shrunk from {width}x{height} to {new_width}x{new_height} pixels to keep the page fast."),
                {"width": str(width), "height": str(height), "new_width": str(rgb.width),
                 "new_height": str(rgb.height)}))
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _bomb_error(size, max_pixels) from None
    except _DECODE_ERRORS as err:
        raise ImageError(
            Message(N_("The file is truncated or damaged and cannot be decoded ({detail})."), {"detail": _short(err)})
        ) from None
    return LoadedImage(rgb, size, mode, fmt, tuple(notes))


def _frame_count(img: Image.Image) -> int:
    """Frames in an animation (1 for a still picture); Pillow returns to the first frame after counting."""
    return int(img.n_frames) if getattr(img, "is_animated", False) else 1


def _bomb_error(size: tuple[int, int] | None, max_pixels: int) -> ImageError:
    if size:
        return ImageError(Message(N_(
            "The image claims {width}x{height} = {pixels} pixels and is too large to decode safely (limit {limit} "
            "pixels). Small files that claim huge sizes are a known attack ('decompression bomb'); please use a "
            "smaller image."), {"width": str(size[0]), "height": str(size[1]), "pixels": Num(size[0] * size[1]),
                                "limit": Num(max_pixels)}))
    return ImageError(Message(N_(
        "The image is too large to decode safely (limit {limit} pixels). Small files that claim huge sizes are a "
        "known attack ('decompression bomb'); please use a smaller image."), {"limit": Num(max_pixels)}))


def _short(err: BaseException) -> str:
    return (str(err) or type(err).__name__)[:120]


def _orient(img: Image.Image, notes: list[str]) -> Image.Image:
    """Apply the EXIF orientation (photos taken with a turned phone), ignoring broken EXIF data."""
    try:
        orientation = img.getexif().get(0x0112, 1)
        if orientation in (2, 3, 4, 5, 6, 7, 8):
            notes.append(N_("Rotated upright using the photo's orientation tag (EXIF)."))
            return ImageOps.exif_transpose(img)
    except _DECODE_ERRORS:
        notes.append(N_("The photo's EXIF data is damaged and was ignored."))
    return img


def to_rgb(img: Image.Image, notes: list[str] | None = None) -> Image.Image:
    """Convert any Pillow mode to 8-bit RGB; transparency is composited on white.

    High-bit-depth greyscale (``"I;16"``, ``"I"``, ``"F"``) is scaled to 0-255. ``notes`` receives a sentence for
    each conversion that changes what the picture looks like.
    """
    notes = [] if notes is None else notes
    mode = img.mode
    if mode == "RGB":
        return img
    if (mode == "P" and "transparency" in img.info) or mode == "PA":
        img, mode = img.convert("RGBA"), "RGBA"
    if mode in ("RGBA", "LA", "RGBa", "La"):
        notes.append(N_("Transparent parts were placed on a white background."))
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    if mode.startswith("I") or mode.startswith("F"):
        return _scale_wide(img, notes)
    if mode == "CMYK":
        notes.append(N_("Converted from CMYK (printing colours) to RGB; colours may look slightly different."))
    try:
        return img.convert("RGB")
    except (ValueError, OSError):
        raise ImageError(
            Message(N_("The colour mode {mode} of this image is not supported; please save it as RGB."),
                    {"mode": repr(mode)})
        ) from None


def _scale_wide(img: Image.Image, notes: list[str]) -> Image.Image:
    """16-bit, 32-bit integer or float greyscale -> 8-bit RGB."""
    values = np.asarray(img, dtype=np.float64)
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    if lo >= 0.0 and hi <= 255.0 and img.mode.startswith("I") and not img.mode.startswith("I;16"):
        scaled = values
    elif lo >= 0.0 and hi <= 65535.0 and img.mode.startswith("I"):
        scaled = values / 257.0  # 16-bit range 0..65535 onto 0..255
        notes.append(N_("A 16-bit greyscale image was reduced to 8 bits per pixel."))
    else:
        span = hi - lo if hi > lo else 1.0
        scaled = (np.nan_to_num(values, nan=lo) - lo) / span * 255.0
        notes.append(
            Message(N_("Pixel values from {low} to {high} were stretched to 0-255."),
                    {"low": f"{lo:.3g}", "high": f"{hi:.3g}"})
        )
    grey = Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8))
    return grey.convert("RGB")


def prepare_image(img: Image.Image, size: int, mode: str = "center-crop") -> np.ndarray:
    """Fit a picture into a ``size x size`` square for the model.

    Args:
        mode: ``"center-crop"`` keeps the middle square (nothing stretched, edges lost), ``"resize"`` stretches
            the whole picture, ``"pad"`` shrinks it to fit and fills the rest with white (nothing lost).

    Shape:
        returns ``(size, size, 3)`` uint8.
    """
    if mode not in FIT_MODES:
        raise ValueError(f"mode={mode!r} must be one of {', '.join(FIT_MODES)}.")
    if size < 1:
        raise ValueError(f"size={size} must be a positive number of pixels.")
    img = to_rgb(img)
    if mode == "center-crop":
        out = ImageOps.fit(img, (size, size), Image.Resampling.LANCZOS)
    elif mode == "resize":
        out = img.resize((size, size), Image.Resampling.LANCZOS)
    else:
        scale = size / max(img.size)
        inner = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
        out = Image.new("RGB", (size, size), (255, 255, 255))
        out.paste(img.resize(inner, Image.Resampling.LANCZOS), ((size - inner[0]) // 2, (size - inner[1]) // 2))
    return np.asarray(out, dtype=np.uint8).copy()


def image_to_tensor_array(pixels: np.ndarray, channels: int = 3) -> np.ndarray:
    """``(H, W, 3)`` uint8 -> ``(channels, H, W)`` float32 in [0, 1]; one channel means the grey level."""
    x = pixels.astype(np.float32) / 255.0  # (H, W, 3)
    if channels == 1:
        x = (x @ np.array([0.299, 0.587, 0.114], dtype=np.float32))[..., None]  # (H, W, 1) luma
    elif channels != 3:
        raise ValueError(f"channels={channels} must be 1 (grey) or 3 (RGB).")
    return np.ascontiguousarray(x.transpose(2, 0, 1))  # HWC -> CHW
