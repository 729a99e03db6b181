"""Hostile and unusual files, built in memory, shared by the hardening tests and the browser upload tests.

Each builder returns the bytes a visitor could upload. Nothing is written to disk and nothing is downloaded.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable
from functools import cache

import numpy as np
from PIL import Image, features


def _save(img: Image.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **options)
    return buf.getvalue()


def noise_rgb(width: int = 64, height: int = 48, seed: int = 0) -> Image.Image:
    """A colourful RGB picture with detail everywhere (compresses badly, so truncation hits pixel data)."""
    pixels = np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def gradient_rgb(width: int, height: int) -> Image.Image:
    """A smooth RGB picture (compresses well, like a photo of the sky), built without large temporaries."""
    x = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    y = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    red = np.broadcast_to(x, (height, width)).astype(np.uint8)
    green = np.broadcast_to(y, (height, width)).astype(np.uint8)
    blue = ((x + y) / 2).astype(np.uint8)
    return Image.merge("RGB", [Image.fromarray(c) for c in (red, green, blue)])


def good_png() -> bytes:
    """An ordinary 64x48 RGB PNG."""
    return _save(noise_rgb(), "PNG")


def zero_bytes() -> bytes:
    return b""


def truncated_png() -> bytes:
    data = good_png()
    return data[: len(data) // 3]


def truncated_jpeg() -> bytes:
    data = _save(noise_rgb(256, 256), "JPEG", quality=90)
    return data[: len(data) // 3]


def text_named_png() -> bytes:
    return b"This is a shopping list, not a picture.\nmilk\neggs\n" * 20


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def bomb_header_png(side: int = 100_000) -> bytes:
    """A 100-byte PNG whose header claims side x side pixels (10 gigapixels) — a decompression bomb."""
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


@cache
def bomb_real_png(side: int = 8_000) -> bytes:
    """A valid, fully decodable 1-bit PNG of side x side pixels (64 megapixels) that is only a few kB."""
    return _save(Image.new("1", (side, side), 0), "PNG")


def sixteen_bit_png() -> bytes:
    ramp = (np.arange(64 * 64, dtype=np.uint32).reshape(64, 64) * 16).astype(np.uint16)  # 0..65520
    return _save(Image.fromarray(ramp), "PNG")


def cmyk_jpeg() -> bytes:
    return _save(noise_rgb().convert("CMYK"), "JPEG", quality=90)


def palette_png() -> bytes:
    return _save(noise_rgb().convert("P", palette=Image.Palette.ADAPTIVE, colors=16), "PNG")


def rgba_png() -> bytes:
    rgba = noise_rgb().convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize(rgba.size))
    return _save(rgba, "PNG")


def animated_gif() -> bytes:
    frames = [Image.new("RGB", (40, 40), colour) for colour in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    return _save(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)


def one_pixel_png() -> bytes:
    return _save(Image.new("RGB", (1, 1), (200, 30, 30)), "PNG")


def extreme_aspect_png() -> bytes:
    return _save(noise_rgb(4000, 10), "PNG")


@cache
def large_photo_jpeg() -> bytes:
    """A legitimate 24-megapixel (6000x4000) JPEG of about a megabyte."""
    return _save(gradient_rgb(6000, 4000), "JPEG", quality=85)


def _second_gif_frame(data: bytes) -> int:
    """Offset of the second frame's image descriptor (the byte 0x2C after its graphic control extension)."""
    control = data.index(b"\x21\xf9", data.index(b"\x21\xf9") + 1)  # second graphic control extension
    return control + 8  # 21 F9 04, packed byte, delay (2), transparent index, terminator 00


def truncated_gif_frame() -> bytes:
    """An animated GIF cut inside its second frame's pixel data; counting its frames raises IndexError."""
    data = animated_gif()
    return data[: _second_gif_frame(data) + 12]


def truncated_gif_descriptor() -> bytes:
    """An animated GIF cut inside its second frame's descriptor; counting its frames raises struct.error."""
    data = animated_gif()
    return data[: _second_gif_frame(data) + 3]


def good_webp() -> bytes:
    return _save(noise_rgb(), "WEBP", quality=90)


def animated_webp() -> bytes:
    frames = [Image.new("RGB", (40, 40), colour) for colour in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    return _save(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100, loop=0, lossless=True)


def alpha_webp() -> bytes:
    rgba = noise_rgb().convert("RGBA")
    rgba.putalpha(128)
    return _save(rgba, "WEBP", lossless=True)


def truncated_webp() -> bytes:
    data = good_webp()
    return data[: len(data) // 2]


def animated_png() -> bytes:
    frames = [Image.new("RGB", (40, 40), colour) for colour in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    return _save(frames[0], "PNG", save_all=True, append_images=frames[1:], duration=100)


def rotated_jpeg() -> bytes:
    """A 64x48 landscape JPEG whose EXIF orientation tag (6) says: turn 90° clockwise to view."""
    exif = Image.Exif()
    exif[0x0112] = 6
    return _save(noise_rgb(), "JPEG", quality=90, exif=exif.tobytes())


def good_bmp() -> bytes:
    return _save(noise_rgb(), "BMP")


def tiff_named_png() -> bytes:
    """A TIFF (not an accepted format) saved under a .png name."""
    return _save(noise_rgb(), "TIFF")


HAS_WEBP = features.check("webp")  # whether this Pillow can write (and read) WebP

# name -> (file name, builder, expected: None = accepted, else a phrase the error message must contain)
BAD_IMAGES: dict[str, tuple[str, Callable[[], bytes], str | None]] = {
    "zero_bytes": ("empty.png", zero_bytes, "empty"),
    "truncated_png": ("cut.png", truncated_png, "damaged"),
    "truncated_jpeg": ("cut.jpg", truncated_jpeg, "damaged"),
    "truncated_gif_frame": ("cutframe.gif", truncated_gif_frame, "damaged"),
    "truncated_gif_descriptor": ("cuthead.gif", truncated_gif_descriptor, "damaged"),
    "text_named_png": ("notes.png", text_named_png, "not an image"),
    "tiff_named_png": ("scan.png", tiff_named_png, "not an image"),
    "bomb_header": ("bomb.png", bomb_header_png, "decompression bomb"),
    "bomb_real": ("bomb1bit.png", bomb_real_png, "decompression bomb"),
    "sixteen_bit": ("deep.png", sixteen_bit_png, None),
    "cmyk": ("print.jpg", cmyk_jpeg, None),
    "palette": ("palette.png", palette_png, None),
    "rgba": ("glass.png", rgba_png, None),
    "animated_gif": ("blink.gif", animated_gif, None),
    "animated_png": ("blink.png", animated_png, None),
    "rotated_jpeg": ("phone.jpg", rotated_jpeg, None),
    "bmp": ("paint.bmp", good_bmp, None),
    "one_pixel": ("dot.png", one_pixel_png, None),
    "extreme_aspect": ("strip.png", extreme_aspect_png, None),
    "large_photo": ("photo.jpg", large_photo_jpeg, None),
}
if HAS_WEBP:
    BAD_IMAGES |= {
        "webp": ("web.webp", good_webp, None),
        "animated_webp": ("blink.webp", animated_webp, None),
        "alpha_webp": ("glass.webp", alpha_webp, None),
        "truncated_webp": ("cut.webp", truncated_webp, "damaged"),
    }

MIME = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "bmp": "image/bmp"}


def mime_of(file_name: str) -> str:
    """The MIME type a browser would send for ``file_name``."""
    return MIME[file_name.rsplit(".", 1)[-1]]
