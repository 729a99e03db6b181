"""Safe image decoding: bad files give a clear ImageError, unusual modes become correct 8-bit RGB."""

from __future__ import annotations

import io
import struct
import time
import zlib

import numpy as np
import pytest
from PIL import GifImagePlugin, Image

from explorer.images import MAX_SIDE, ImageError, image_to_tensor_array, prepare_image, read_image, to_rgb


def encode(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def noise(h: int = 24, w: int = 36) -> Image.Image:
    return Image.fromarray(np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8))


def png_header_only(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width x height`` pixels (a decompression bomb's first bytes)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) \
        + chunk(b"IEND", b"")


def test_png_round_trip_is_exact():
    img = noise()
    out = read_image(encode(img))
    assert out.image.mode == "RGB" and out.file_format == "PNG" and out.notes == ()
    np.testing.assert_array_equal(np.asarray(out.image), np.asarray(img))


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"hello, this is a text file saved as picture.png\n" * 4, "not an image"),
    (b"\x89PNG\r\n\x1a\n", "not an image"),
])
def test_not_an_image(data, words):
    with pytest.raises(ImageError, match=words):
        read_image(data)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_files_are_reported(fmt):
    data = encode(noise(64, 64), fmt)
    with pytest.raises(ImageError, match="truncated or damaged|damaged"):
        read_image(data[: len(data) // 2])


@pytest.mark.parametrize("step", ["n_frames", "load", "convert"])
@pytest.mark.parametrize("error", [IndexError("index out of range"), struct.error("unpack_from requires 4 bytes"),
                                   KeyError("mode"), ZeroDivisionError("division by zero"), OSError("broken data")])
def test_any_pillow_failure_while_decoding_is_an_image_error(monkeypatch, step, error):
    """Whatever a Pillow reader raises while frames are counted, pixels decoded or colours converted."""
    def fail(*args, **kwargs):
        raise error

    frames = [Image.new("RGB", (8, 8), (80 * i, 0, 0)) for i in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    target = {"n_frames": (GifImagePlugin.GifImageFile, "n_frames", property(fail)),
              "load": (GifImagePlugin.GifImageFile, "load", fail), "convert": (Image.Image, "convert", fail)}[step]
    monkeypatch.setattr(*target)
    with pytest.raises(ImageError, match="truncated or damaged|colour mode") as info:
        read_image(buf.getvalue())
    assert info.value.__cause__ is None and len(str(info.value)) < 300


@pytest.mark.parametrize("side", [8000, 30000, 100000])
def test_decompression_bomb_is_refused_before_decoding(side):
    data = png_header_only(side, side)
    assert len(data) < 200
    start = time.perf_counter()
    with pytest.raises(ImageError, match="too large to decode safely"):
        read_image(data)
    assert time.perf_counter() - start < 0.5  # refused from the header, no pixels decoded


def test_pixel_limit_is_configurable():
    with pytest.raises(ImageError, match="100x100"):
        read_image(encode(noise(100, 100)), max_pixels=5000)


def test_file_size_limit():
    with pytest.raises(ImageError, match="limit"):
        read_image(encode(noise()), max_bytes=100)


def test_16_bit_greyscale_is_scaled_to_8_bits():
    values = np.array([[0, 257, 65535, 32896]], dtype=np.uint16)
    out = read_image(encode(Image.fromarray(values)))
    assert out.original_mode.startswith("I")
    np.testing.assert_array_equal(np.asarray(out.image)[0, :, 0], [0, 1, 255, 128])
    assert any("16-bit" in n for n in out.notes)


def test_cmyk_matches_pillow_conversion():
    cmyk = noise().convert("CMYK")
    out = read_image(encode(cmyk, "JPEG", quality=95))
    assert out.original_mode == "CMYK" and any("CMYK" in n for n in out.notes)
    reference = Image.open(io.BytesIO(encode(cmyk, "JPEG", quality=95))).convert("RGB")
    np.testing.assert_array_equal(np.asarray(out.image), np.asarray(reference))


def test_palette_keeps_its_colours():
    pal = noise().convert("P")
    out = read_image(encode(pal))
    np.testing.assert_array_equal(np.asarray(out.image), np.asarray(pal.convert("RGB")))


def test_transparency_is_composited_on_white():
    rgba = Image.new("RGBA", (4, 4), (255, 0, 0, 128))
    out = read_image(encode(rgba))
    # alpha compositing: 255 * a + 255 * (1 - a) for red, 0 * a + 255 * (1 - a) for green and blue
    np.testing.assert_allclose(np.asarray(out.image)[0, 0], [255, 127, 127], atol=1)
    assert any("white" in n for n in out.notes)
    transparent_palette = Image.new("P", (2, 2), 0)
    transparent_palette.putpalette([0, 0, 0] * 256)
    transparent_palette.info["transparency"] = 0
    np.testing.assert_array_equal(np.asarray(read_image(encode(transparent_palette)).image)[0, 0], [255] * 3)


@pytest.mark.parametrize("mode", ["L", "LA", "1", "P", "RGBA", "I;16", "I", "F"])
def test_every_mode_becomes_rgb(mode):
    grey = Image.fromarray(np.arange(64, dtype=np.uint8).reshape(8, 8) * 4)
    img = grey.convert(mode) if mode not in ("I;16", "I", "F") else Image.fromarray(
        np.asarray(grey).astype({"I;16": np.uint16, "I": np.int32, "F": np.float32}[mode]))
    out = to_rgb(img)
    assert out.mode == "RGB" and out.size == (8, 8)


def test_float_images_are_stretched():
    img = Image.fromarray(np.array([[-3.0, 2.0, 7.0]], dtype=np.float32))
    notes: list[str] = []
    np.testing.assert_array_equal(np.asarray(to_rgb(img, notes))[0, :, 0], [0, 128, 255])
    assert notes and "stretched" in notes[0]


@pytest.mark.parametrize("fmt", ["GIF", "WEBP"])
def test_animation_uses_the_first_frame(fmt):
    frames = [Image.new("RGB", (10, 10), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, fmt, save_all=True, append_images=frames[1:], lossless=True)
    out = read_image(buf.getvalue())
    np.testing.assert_allclose(np.asarray(out.image)[5, 5], [255, 0, 0], atol=3)
    assert any("3 frames" in n for n in out.notes)


def test_exif_orientation_is_applied():
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
    out = read_image(encode(Image.new("RGB", (30, 10), "red"), "JPEG", exif=exif))
    assert out.image.size == (10, 30) and out.original_size == (30, 10)


def test_one_pixel_and_extreme_aspect_ratio():
    one = read_image(encode(Image.new("RGB", (1, 1), (10, 20, 30)))).image
    assert prepare_image(one, 32).shape == (32, 32, 3)
    assert (prepare_image(one, 32) == [10, 20, 30]).all()
    strip = read_image(encode(Image.new("RGB", (4000, 10), (0, 0, 255)))).image
    assert strip.size == (4000, 10)  # small enough in pixels: kept as it is
    for mode in ("center-crop", "resize", "pad"):
        out = prepare_image(strip, 48, mode)
        assert out.shape == (48, 48, 3) and out.dtype == np.uint8
    padded = prepare_image(strip, 48, "pad")
    assert (padded[0] == 255).all() and (padded[24, :, 2] > 200).all()  # white border, blue line in the middle


def test_large_photo_is_shrunk_quickly():
    gradient = np.linspace(0, 255, 4000, dtype=np.uint8)[None, :, None].repeat(3000, 0).repeat(3, 2)
    data = encode(Image.fromarray(gradient), "JPEG", quality=80)
    start = time.perf_counter()
    out = read_image(data)
    elapsed = time.perf_counter() - start
    assert out.image.width * out.image.height <= MAX_SIDE**2
    assert abs(out.image.width / out.image.height - 4 / 3) < 0.01
    assert any("Shrunk from 4000x3000" in n for n in out.notes)
    assert elapsed < 5.0


def test_center_crop_keeps_the_middle():
    img = Image.new("RGB", (30, 10))
    for x, colour in ((0, (255, 0, 0)), (10, (0, 255, 0)), (20, (0, 0, 255))):
        img.paste(colour, (x, 0, x + 10, 10))
    out = prepare_image(img, 10, "center-crop")
    assert (out == [0, 255, 0]).all()
    assert (prepare_image(img, 10, "resize")[:, 0] == [255, 0, 0]).all()


def test_prepare_image_rejects_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        prepare_image(noise(), 16, "stretch")
    with pytest.raises(ValueError, match="size"):
        prepare_image(noise(), 0)


def test_image_to_tensor_array():
    pixels = np.zeros((2, 3, 3), dtype=np.uint8)
    pixels[..., 0] = 255
    chw = image_to_tensor_array(pixels)
    assert chw.shape == (3, 2, 3) and chw.dtype == np.float32
    np.testing.assert_allclose(chw[0], 1.0)
    np.testing.assert_allclose(chw[1:], 0.0)
    np.testing.assert_allclose(image_to_tensor_array(pixels, 1), 0.299, rtol=1e-6)
    with pytest.raises(ValueError):
        image_to_tensor_array(pixels, 2)
