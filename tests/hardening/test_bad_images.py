"""Bad and unusual image files: each gets a clear message or is decoded correctly, and the ViT page keeps working.

The files are built in memory by :mod:`tests.hardening.bad_files`.
"""

from __future__ import annotations

import io
import struct
import time

import numpy as np
import pytest
from PIL import Image

from explorer.images import FIT_MODES, MAX_SIDE, ImageError, prepare_image, read_image
from tests.app.conftest import app_at, assert_no_exception
from tests.hardening.bad_files import (
    BAD_IMAGES,
    HAS_WEBP,
    alpha_webp,
    animated_gif,
    animated_png,
    animated_webp,
    bomb_header_png,
    cmyk_jpeg,
    good_png,
    large_photo_jpeg,
    mime_of,
    noise_rgb,
    one_pixel_png,
    palette_png,
    rgba_png,
    rotated_jpeg,
    sixteen_bit_png,
    truncated_gif_descriptor,
    truncated_gif_frame,
)

REJECTED = [name for name, (_, _, phrase) in BAD_IMAGES.items() if phrase is not None]
ACCEPTED = [name for name, (_, _, phrase) in BAD_IMAGES.items() if phrase is None]


@pytest.mark.parametrize("name", REJECTED)
def test_unusable_file_gets_a_clear_message(name: str) -> None:
    _, build, phrase = BAD_IMAGES[name]
    with pytest.raises(ImageError, match=phrase) as info:
        read_image(build())
    assert "Traceback" not in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize("name", ACCEPTED)
def test_unusual_file_is_decoded_to_small_rgb(name: str) -> None:
    _, build, _ = BAD_IMAGES[name]
    img = read_image(build()).image
    assert img.mode == "RGB"
    assert img.width * img.height <= MAX_SIDE**2
    for mode in FIT_MODES:
        pixels = prepare_image(img, 32, mode)
        assert pixels.shape == (32, 32, 3) and pixels.dtype == np.uint8


def test_decompression_bomb_is_refused_before_decoding() -> None:
    data = bomb_header_png()
    assert len(data) < 200  # a tiny file ...
    start = time.perf_counter()
    with pytest.raises(ImageError, match="too large to decode safely"):  # ... that claims 10 gigapixels
        read_image(data)
    assert time.perf_counter() - start < 0.5  # refused from the header, no pixels were allocated


def test_sixteen_bit_ramp_keeps_its_order_and_range() -> None:
    loaded = read_image(sixteen_bit_png())
    assert loaded.original_mode.startswith("I")
    assert any("16-bit" in note for note in loaded.notes)
    grey = np.asarray(loaded.image)[..., 0].astype(int).ravel()
    expected = np.rint(np.arange(64 * 64) * 16 / 257).astype(int)  # 16-bit 0..65520 -> 8-bit 0..255
    np.testing.assert_array_equal(grey, expected)


def test_cmyk_colours_survive_the_conversion() -> None:
    loaded = read_image(cmyk_jpeg())
    assert loaded.original_mode == "CMYK" and any("CMYK" in note for note in loaded.notes)
    reference = np.asarray(noise_rgb().convert("CMYK").convert("RGB"), dtype=float)
    assert np.abs(np.asarray(loaded.image, dtype=float) - reference).mean() < 25  # JPEG loses some detail


def test_palette_image_is_expanded_exactly() -> None:
    data = palette_png()
    reference = Image.open(__import__("io").BytesIO(data)).convert("RGB")
    np.testing.assert_array_equal(np.asarray(read_image(data).image), np.asarray(reference))


def test_transparency_is_composited_on_white() -> None:
    loaded = read_image(rgba_png())
    pixels = np.asarray(loaded.image)
    alpha = np.asarray(Image.linear_gradient("L").resize((64, 48)))
    np.testing.assert_array_equal(pixels[alpha == 0], 255)  # fully transparent -> white
    opaque = alpha == 255
    np.testing.assert_array_equal(pixels[opaque], np.asarray(noise_rgb())[opaque])


def test_animated_gif_uses_its_first_frame() -> None:
    loaded = read_image(animated_gif())
    assert any("3 frames" in note for note in loaded.notes)
    np.testing.assert_array_equal(np.asarray(loaded.image)[20, 20], [255, 0, 0])


@pytest.mark.parametrize("build, error", [(truncated_gif_frame, IndexError),
                                          (truncated_gif_descriptor, struct.error)])
def test_gif_cut_in_a_later_frame_is_reported_as_damaged(build, error) -> None:
    data = build()
    raw = Image.open(io.BytesIO(data))  # Pillow opens it and reads the first frame's header ...
    assert raw.size == (40, 40)
    with pytest.raises(error):  # ... but fails while counting the frames (this used to crash the page)
        _ = raw.n_frames
    with pytest.raises(ImageError, match="truncated or damaged"):
        read_image(data)


@pytest.mark.parametrize("build", [animated_png, pytest.param(animated_webp, marks=pytest.mark.skipif(
    not HAS_WEBP, reason="this Pillow has no WebP support"))])
def test_other_animations_use_their_first_frame(build) -> None:
    loaded = read_image(build())
    assert any("3 frames" in note for note in loaded.notes)
    np.testing.assert_array_equal(np.asarray(loaded.image)[20, 20], [255, 0, 0])


@pytest.mark.skipif(not HAS_WEBP, reason="this Pillow has no WebP support")
def test_webp_with_transparency_is_composited_on_white() -> None:
    loaded = read_image(alpha_webp())
    assert loaded.file_format == "WEBP" and loaded.original_mode == "RGBA"
    expected = np.rint((np.asarray(noise_rgb(), dtype=float) * 128 + 255 * 127) / 255)  # alpha 128 over white
    assert np.abs(np.asarray(loaded.image, dtype=float) - expected).max() <= 2


def test_exif_orientation_turns_the_photo_upright() -> None:
    data = rotated_jpeg()
    loaded = read_image(data)
    assert loaded.original_size == (64, 48) and loaded.image.size == (48, 64)
    assert any("orientation" in note for note in loaded.notes)
    stored = Image.open(io.BytesIO(data)).convert("RGB")  # the pixels as stored, lying on their side
    upright = stored.transpose(Image.Transpose.ROTATE_270)  # orientation 6: turn 90° clockwise
    np.testing.assert_array_equal(np.asarray(loaded.image), np.asarray(upright))


def test_one_pixel_image_fills_the_square() -> None:
    img = read_image(one_pixel_png()).image
    for mode in ("center-crop", "resize"):
        np.testing.assert_array_equal(prepare_image(img, 32, mode), np.full((32, 32, 3), (200, 30, 30)))


def test_extreme_aspect_ratio_is_fitted_without_distortion_when_padded() -> None:
    img = read_image(BAD_IMAGES["extreme_aspect"][1]()).image
    padded = prepare_image(img, 64, "pad")
    assert (padded[:20] == 255).all() and (padded[-20:] == 255).all()  # a thin strip across the middle


def test_large_photo_is_shrunk_and_keeps_its_orientation() -> None:
    loaded = read_image(large_photo_jpeg())
    assert loaded.original_size == (6000, 4000)
    assert loaded.image.width * loaded.image.height <= MAX_SIDE**2
    assert abs(loaded.image.width / loaded.image.height - 1.5) < 0.01
    pixels = np.asarray(loaded.image, dtype=int)
    assert pixels[0, -1, 0] > 200 and pixels[0, 0, 0] < 40  # red grows to the right
    assert pixels[-1, 0, 1] > 200 and pixels[0, 0, 1] < 40  # green grows downwards


def _upload(at, file_name: str, data: bytes) -> None:
    at.file_uploader(key="vit.upload").set_value((file_name, data, mime_of(file_name)))
    at.run()


@pytest.mark.slow
def test_vit_page_survives_every_bad_upload() -> None:
    at = app_at("pages/vit.py")
    at.radio(key="vit.source").set_value("upload")
    at.run()
    for name, (file_name, build, phrase) in BAD_IMAGES.items():
        _upload(at, file_name, build())
        assert_no_exception(at)
        errors = [e.value for e in at.error]
        images = at.get("image")
        assert len(images) >= 3, f"{name}: the page stopped drawing its pictures"
        shown = images[0].proto.imgs[0].caption  # "<picture>, center-crop to 64×64, ..."
        if phrase is None:
            assert not errors, f"{name}: {errors}"
            assert shown.startswith(file_name), f"{name}: the upload is not the picture shown ({shown})"
        else:
            assert any(file_name in e and phrase in e for e in errors), f"{name}: {errors}"
            assert shown.startswith("sample"), f"{name}: the sample is not shown instead ({shown})"
    _upload(at, "fine.png", good_png())
    assert_no_exception(at)
    assert not at.error
