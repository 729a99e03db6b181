"""The ViT page's pictures: encoded once as PNG for the server, found again only by everything they are drawn from."""

from __future__ import annotations

import io

import numpy as np
import pytest
import streamlit as st
from PIL import Image

from ui.common import state
from ui.vit import pictures


@pytest.fixture
def pixels() -> np.ndarray:
    return (np.random.default_rng(3).random((32, 32, 3)) * 255).astype(np.uint8)


@pytest.fixture
def counted(monkeypatch):
    """Each drawing counts its calls; the server's kept pictures start empty."""
    calls: list[str] = []
    for name, draw in list(pictures.DRAWINGS.items()):
        monkeypatch.setitem(pictures.DRAWINGS, name, lambda *a, _n=name, _d=draw, **k: calls.append(_n) or _d(*a, **k))
    pictures._encoded.clear()
    yield calls
    pictures._encoded.clear()


def test_a_picture_is_the_drawing_as_png(pixels, counted):
    data = pictures.png("grid", pixels, patch=8)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"  # PNG, not the JPEG Streamlit makes of a picture without alpha
    shown = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert np.array_equal(shown, np.asarray(pictures.grid_overlay(pixels, 8)))  # lossless: every pixel as drawn


def test_a_rerun_draws_nothing_again_and_new_inputs_draw_anew(pixels, counted):
    first = pictures.png("mosaic", pixels, patch=8)
    assert pictures.png("mosaic", pixels, patch=8) == first and counted == ["mosaic"]
    pictures.png("mosaic", pixels, patch=16)
    other = pixels.copy()
    other[0, 0] = 255 - other[0, 0]
    pictures.png("mosaic", other, patch=8)  # one pixel differs: another picture
    assert counted == ["mosaic"] * 3


def test_an_attention_picture_follows_the_sidebars_scale_and_range(pixels, counted):
    weights = np.array([[0.1, 0.2], [0.3, 0.4]])
    plain = pictures.png("attention", pixels, weights=weights)
    st.session_state[state.COLORSCALE] = "Cividis"
    try:
        recoloured = pictures.png("attention", pixels, weights=weights)
        st.session_state[state.ATTENTION_SCALE] = "stretch"
        stretched = pictures.png("attention", pixels, weights=weights)
    finally:
        del st.session_state[state.COLORSCALE]
        st.session_state.pop(state.ATTENTION_SCALE, None)
    assert len({plain, recoloured, stretched}) == 3 and counted == ["attention"] * 3
    drawn = pictures.attention_overlay(pixels, weights, scale_name="Cividis", stretch=True)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(stretched)).convert("RGB")), np.asarray(drawn))


def test_a_white_picture_still_shows_its_patch_grid_and_tiles():
    white = np.full((32, 32, 3), 255, dtype=np.uint8)
    grid = np.asarray(pictures.grid_overlay(white, 8, numbers=False))  # (H, W, 3)
    cell = grid.shape[0] // 4
    line = grid[cell // 2, cell - 2: cell + 3]  # across the line between the first two patches
    assert (line < 200).any(), line  # an edge darker than the white around it
    mosaic = np.asarray(pictures.patch_mosaic(white, 8))
    assert (mosaic < 200).any(axis=-1).sum() > 4 * 4 * cell  # every tile outlined on the white page
