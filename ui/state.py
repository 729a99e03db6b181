"""Every session-state key of the app, defined in one place, and the hand-over of trained models between pages.

Per-user objects (models, optimisers, runs) live in ``st.session_state`` only; nothing per-user is cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import streamlit as st

# App-wide settings (sidebar).
PRESENTATION = "app.presentation"  # bool: projector mode (large fonts, fewer controls)
COLORSCALE = "app.colorscale"  # str: colour scale for heatmaps
ATTENTION_SCALE = "app.attention_scale"  # str: "fixed" (attention coloured 0 to 1) or "stretch" (each map's range)
IMAGE_FORMAT = "app.image_format"  # str: "PNG" or "SVG", what the camera button above a chart saves
DEVICE = "app.device"  # str: "cuda" / "mps" / "cpu"

# Live Training: which attention map the "Numbers" table shows (1-based layer and head).
LIVE_NUMBERS_LAYER = "live.numbers_layer"  # int
LIVE_NUMBERS_HEAD = "live.numbers_head"  # int

# Models trained on the Live Training page, offered to the other pages (see publish_trained).
TRAINED = "shared.trained"  # dict[str family, TrainedModel]

DEFAULTS: dict[str, Any] = {
    PRESENTATION: False,
    COLORSCALE: "Viridis",
    ATTENTION_SCALE: "fixed",
    IMAGE_FORMAT: "PNG",
}


def init_state() -> None:
    """Set every app-wide default once per session (called by the router on each run)."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.session_state.setdefault(TRAINED, {})


@dataclass(frozen=True)
class TrainedModel:
    """A model trained in this session, as shared with the explorer pages."""

    family: str  # "seq2seq", "causal_lm", "regression" or "vision"
    task_name: str  # the built-in task it was trained on
    task_title: str  # human-readable task name
    model: Any  # the torch module (in eval mode when used by other pages)
    config: Any  # its TransformerConfig or ViTConfig
    step: int  # training steps done when it was published
    task_options: dict = field(default_factory=dict)  # options the task was built with, e.g. the user's text
    task: Any = None  # the task it was trained on (its name alone cannot rebuild a task on the user's own text)


def publish_trained(entry: TrainedModel) -> None:
    """Make a trained model available to the other pages of this session (one per family)."""
    st.session_state.setdefault(TRAINED, {})[entry.family] = entry


def trained_models(*families: str) -> list[TrainedModel]:
    """Models trained in this session, optionally only those of the given families."""
    entries = st.session_state.get(TRAINED, {})
    return [e for f, e in entries.items() if not families or f in families]
