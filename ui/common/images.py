"""Pictures for the pages: the generated samples in assets/samples/ and safely decoded uploads, both cached."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from explorer.i18n import _
from explorer.i18n.message import message_of
from explorer.images import ImageError, read_image

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "assets" / "samples"
SAMPLE_ORDER = ("house", "smiley", "shapes", "digit", "checkerboard")  # the order shown in the menu
UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "gif", "bmp"]  # extensions the upload box accepts


@dataclass(frozen=True)
class Picture:
    """A picture ready for the page: pixels plus where they came from and what was done to them."""

    pixels: np.ndarray  # (H, W, 3) uint8
    label: str  # "sample: house" or the upload's file name
    notes: tuple[str, ...] = ()  # conversions applied while decoding, in plain words


def sample_names() -> list[str]:
    """Names of the sample pictures that exist on disk, in menu order."""
    found = {p.stem for p in SAMPLES_DIR.glob("*.png")}
    return [n for n in SAMPLE_ORDER if n in found] + sorted(found - set(SAMPLE_ORDER))


@st.cache_data(max_entries=16, show_spinner=False)
def load_sample(name: str) -> np.ndarray:
    """The pixels ``(H, W, 3)`` uint8 of one sample picture."""
    if name not in sample_names():
        raise ValueError(f"There is no sample picture called {name!r}.")
    return np.asarray(read_image((SAMPLES_DIR / f"{name}.png").read_bytes()).image, dtype=np.uint8)


@st.cache_data(max_entries=4, show_spinner=False)
def _decode(data: bytes) -> tuple[np.ndarray | None, tuple[str, ...], str | None]:
    try:
        loaded = read_image(data)
    except ImageError as err:
        return None, (), message_of(err)  # a Message: said in each reader's language when shown
    return np.asarray(loaded.image, dtype=np.uint8), loaded.notes, None


def decode_upload(name: str, data: bytes) -> Picture:
    """Decode an uploaded file; raises :class:`ImageError` with a friendly message when it is unusable."""
    pixels, notes, error = _decode(data)
    if error is not None or pixels is None:
        raise ImageError(error or _("The file could not be read."))
    return Picture(pixels, name, notes)
