"""Every app-wide session-state key, the one way settings are kept across pages, and the hand-over of trained
models between pages.

Per-user objects (models, optimisers, runs) live in ``st.session_state`` only; nothing per-user is cached.

Settings kept across pages: Streamlit forgets the state of every widget a run does not draw (all of a page's
widgets while another page runs, and those a page hides in projector mode). A page lists the keys to keep in
``KEPT`` (in its ``controls.py``) and passes them to ``ui.pages.open_page(kept=KEPT)``, which calls
:func:`restore_settings` before the page's defaults and :func:`save_settings` once the link is applied. Both keep
the values under :data:`SAVED`, a key no widget owns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

# App-wide settings (sidebar).
PRESENTATION = "app.presentation"  # bool: projector mode (large fonts, fewer controls)
COLORSCALE = "app.colorscale"  # str: colour scale for heatmaps, one of SEQUENTIAL_SCALES
ATTENTION_SCALE = "app.attention_scale"  # str: "fixed" (attention coloured 0 to 1) or "stretch" (each map's range)
IMAGE_FORMAT = "app.image_format"  # str: "PNG" or "SVG", what the camera button above a chart saves
DEVICE = "app.device"  # str: "cuda" / "mps" / "cpu"

SEQUENTIAL_SCALES = ("Viridis", "Cividis", "Plasma", "Blues", "Greys")  # the heatmap colours one can choose

# Live Training: which attention map the "Numbers" table shows (1-based layer and head).
LIVE_NUMBERS_LAYER = "live.numbers_layer"  # int
LIVE_NUMBERS_HEAD = "live.numbers_head"  # int

# The explorer pages' settings, saved on every run of their page and put back after a visit elsewhere.
SAVED = "shared.saved"  # dict[str widget key, value]

# Models trained on the Live Training page, offered to the other pages (see publish_trained).
TRAINED = "shared.trained"  # dict[str family, TrainedModel]

DEFAULTS: dict[str, Any] = {
    PRESENTATION: False,
    COLORSCALE: SEQUENTIAL_SCALES[0],
    ATTENTION_SCALE: "fixed",
    IMAGE_FORMAT: "PNG",
}


def init_state() -> None:
    """Set every app-wide default once per session (called by the router on each run)."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.session_state.setdefault(TRAINED, {})


def restore_settings(keys: Iterable[str]) -> None:
    """Put back the saved value of every setting in ``keys`` that is gone; call before the page's defaults.

    Streamlit forgets the state of every widget a run does not draw: all of a page's widgets while another page
    runs, and those a page hides (projector mode, a trained model's fixed settings). Saving the values in a key
    no widget owns (:func:`save_settings`) keeps them for the whole session.
    """
    saved = st.session_state.get(SAVED, {})
    for key in keys:
        if key not in st.session_state and key in saved:
            st.session_state[key] = saved[key]


def save_settings(keys: Iterable[str]) -> None:
    """Save the current value of every setting in ``keys``; call once the page has applied its link."""
    saved = st.session_state.setdefault(SAVED, {})
    saved.update({key: st.session_state[key] for key in keys if key in st.session_state})


@dataclass(frozen=True)
class TrainedModel:
    """A model trained in this session, as shared with the explorer pages."""

    family: str  # its model family's name (transformer_core.families), e.g. "causal_lm"
    task_name: str  # the built-in task it was trained on
    task_title: str  # human-readable task name
    model: Any  # the torch module (in eval mode when used by other pages)
    config: Any  # its TransformerConfig or ViTConfig
    step: int  # training steps done when it was published
    task_options: dict = field(default_factory=dict)  # options the task was built with, e.g. the user's text
    task: Any = None  # the task it was trained on (its name alone cannot rebuild a task on the user's own text)


def publish_trained(entry: TrainedModel) -> None:
    """Make a trained model available to the other pages of this session (one per family, the latest last).

    A family's model stays until a later model of the same family replaces it: training a text model after a
    ViT leaves the ViT to the ViT page.
    """
    entries = st.session_state.setdefault(TRAINED, {})
    entries.pop(entry.family, None)  # re-inserted at the end: the dict's order is the order of training
    entries[entry.family] = entry


def latest_trained() -> TrainedModel | None:
    """The model published last in this session, of any family."""
    entries = list(st.session_state.get(TRAINED, {}).values())
    return entries[-1] if entries else None


def trained_models(*families: str) -> list[TrainedModel]:
    """Models trained in this session, optionally only those of the given families."""
    entries = st.session_state.get(TRAINED, {})
    return [e for f, e in entries.items() if not families or f in families]
