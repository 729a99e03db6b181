"""ViT Patching's last section: a published ViT on the chosen picture, its top-5 labels and CLS attention."""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.pretrained.vit import PretrainedViTRun, classify
from transformer_core.pretrained import Pretrained
from ui.common.charts import layer_head_picker
from ui.common.pretrained import cache_key, load_shared, models_on_offer, pick_model, probability_table
from ui.vit.controls import PRE_HEAD, PRE_LAYER, PRETRAINED
from ui.vit.views import attention_section
from ui.vit.why_label import pretrained_label_section


@st.cache_data(max_entries=8, show_spinner="Running the pretrained ViT…")
def _classified(_pre: Pretrained, name: str, pixels: np.ndarray) -> PretrainedViTRun:
    """The model on ``pixels`` (``name`` is the model's :func:`cache_key`; the model itself is not hashed)."""
    return classify(_pre, pixels)


def introduction(pre: Pretrained) -> str:
    """What the chosen model is, from its own folder: its name and how many labels its head chooses among."""
    labels = len(pre.labels or ())
    among = f"chooses among its {labels:,} labels" if labels else "has no label names in its config.json"
    return (f"**{pre.name}**, a published ViT that {among}, reads the same picture, prepared as in its training "
            "(its own resize, crop and colour normalisation; the size and fit above are for the small model).")


def pretrained_section(pixels: np.ndarray, label: str) -> None:
    """Pick a pretrained ViT, run it on the original picture and draw its labels and attention."""
    st.subheader("5 · A pretrained ViT on this picture")
    offer = pick_model(PRETRAINED, ("vit",), label="Pretrained ViT")
    pre = None if offer is None else load_shared(offer, models_on_offer().budget_bytes)
    if pre is None:
        st.markdown("A published ViT reads the same picture, prepared as in its training.")
        return
    st.markdown(introduction(pre))
    run = _classified(pre, cache_key(pre), pixels)
    c = pre.config
    st.caption(f"**{pre.name}** ({pre.architecture}): {pre.n_params:,} parameters, {c.image_size}×{c.image_size} "
               f"pictures in {c.patch_size}-pixel patches ({run.walk.grid_size ** 2} patches), {c.n_layers} layers "
               f"× {c.n_heads} heads, {len(pre.labels or ())} classes.")
    left, right = st.columns([1, 2], gap="large")
    left.image(run.pixels, caption=f"{label}, as the model sees it", width="stretch")
    with right:
        st.markdown("**Top 5 labels**")
        probability_table([lab.name for lab in run.top], [lab.probability for lab in run.top], label="Label",
                          help="The model's class names, from its config.json.")
    layer, head = layer_head_picker(run.walk.num_layers, run.walk.num_heads, keys=(PRE_LAYER, PRE_HEAD), helps=(
        "The block whose CLS attention is drawn; the rollout combines all of them.",
        "The head drawn large; every head of the layer is drawn below."))
    attention_section(run.pixels, run.walk, layer, head, key="vit.pre_cls_numbers")
    pretrained_label_section(pre, pixels, run.pixels, run.walk)
