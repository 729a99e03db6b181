"""ViT Patching's *Why this label?*: which patches moved the class a ViT predicts (gradient × input, or integrated
gradients on a button), drawn over the picture beside the attention rollout, with CSV and PNG downloads.

Offered for a trained ViT (section 4) and a pretrained one (section 5); random weights predict no class, and the
section says so.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import streamlit as st
import torch
from PIL import Image

from explorer.i18n import N_, _
from explorer.images import image_to_tensor_array
from explorer.lab.vit_walkthrough import ViTWalkthrough
from explorer.lab.why_label import attribution_overlay, label_question, pictures_png
from explorer.lab.why_reading import disagreement, why_csv
from ui.attention.beyond.why_panel import METHODS, attribution, caption, gap_sentence
from ui.common.pretrained import cache_key
from ui.vit.pictures import attention_overlay

RANDOM = N_("Random weights predict no class worth explaining: the scores are noise. Train a ViT on the Live Training "
          "page (then choose its weights above), or load a pretrained ViT in section 5, to ask which patches "
          "decided its label.")


def why_label_section(model: torch.nn.Module | None, model_input: torch.Tensor | None, pixels: np.ndarray,
                      walk: ViTWalkthrough, names: Sequence[str] | None, *, key: str, model_key: Hashable) -> None:
    """A toggle and, when on, the class picker, the patch attributions over the picture beside the rollout, the
    sentence on where they disagree, the caption and the downloads. ``model=None``: random weights (refused)."""
    if not st.toggle(_("Why this label? Which patches moved the class"), key=f"{key}.on",
                     help=_("Traces the predicted class's score back to the patches (gradient × input, or integrated "
                            "gradients on a button) and draws it beside the attention rollout.")):
        return
    if model is None or model_input is None:
        st.info(_(RANDOM), icon="ℹ️")
        return
    q = label_question(walk, model_input, names)
    st.session_state[f"{key}.target"] = min(int(st.session_state.get(f"{key}.target", 0)), len(q.choices) - 1)
    pick = st.selectbox(q.title, range(len(q.choices)), format_func=lambda i: q.choices[i].label,
                        key=f"{key}.target",
                        help=_("The class whose score (logit) is traced back to the patches."))
    e = q.choices[pick]
    shown = attribution(model, e, key=key, model_key=model_key, method_key=f"{key}.method",
                        steps_key=f"{key}.steps")
    if shown is None:
        return
    grid = shown.values.reshape(walk.grid_size, walk.grid_size)
    rollout = walk.cls_rollout().numpy()
    what = _("{method}: what moved “{label}” (red raised it, blue lowered it)").format(
        method=_(METHODS[shown.method]), label=e.token)
    rolled = _("Attention rollout through all {layers} layers (heads averaged)").format(layers=walk.num_layers)
    left, right = st.columns(2, gap="medium")
    moved, looked = attribution_overlay(pixels, grid), attention_overlay(pixels, rollout)
    left.image(moved, caption=what)
    right.image(looked, caption=rolled)
    st.markdown(disagreement(shown.values, rollout.ravel(), e.tokens, looker=_("the rollout")))
    if shown.gap is not None:
        st.caption(gap_sentence(shown))
    st.caption(_("Each patch is coloured by its attribution: how much the patch's embedding moved the class's "
                 "logit.") + " " + caption(_("picture"), _("patch"), _("every patch's embedding")))
    with st.container(horizontal=True):
        st.download_button("CSV", lambda: why_csv(e.tokens, shown.values, rollout.ravel()),
                           file_name=f"why_label_{shown.method}.csv", mime="text/csv", key=f"{key}.csv",
                           on_click="ignore", icon=":material/download:",
                           help=_("One line per patch (reading order): attribution and rollout weight."))
        st.download_button("PNG", lambda: pictures_png([moved, looked], [what, rolled]),
                           file_name=f"why_label_{shown.method}.png", mime="image/png", key=f"{key}.png",
                           on_click="ignore", icon=":material/download:",
                           help=_("Both pictures side by side, with their captions."))


def trained_label_section(entry, task, pixels: np.ndarray, walk: ViTWalkthrough) -> None:
    """*Why this label?* for the ViT trained in this session (``entry=None``: random weights, refused)."""
    model = x = None
    if entry is not None:
        model = entry.model
        image = torch.from_numpy(image_to_tensor_array(pixels, entry.config.in_channels))[None]  # (1, C, H, W)
        prepare = getattr(task, "model_input", None)
        x = (prepare(image) if prepare is not None else image)[0]  # the tensor the model reads, (C, H, W)
    why_label_section(model, x, pixels, walk, getattr(task, "classes", None), key="vit.why",
                      model_key=(id(model), getattr(entry, "step", None)))


def pretrained_label_section(pre, original: np.ndarray, shown: np.ndarray, walk: ViTWalkthrough) -> None:
    """*Why this label?* for a pretrained ViT: ``original`` is the chosen picture, ``shown`` it as the model sees
    it (after its own resize and crop)."""
    x = pre.preprocess(Image.fromarray(np.asarray(original, dtype=np.uint8)))[0]  # (3, S, S), normalised
    why_label_section(pre.model, x, shown, walk, pre.labels, key="vit.pre_why", model_key=cache_key(pre))
