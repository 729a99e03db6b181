"""ViT Patching's last section: a published ViT on the chosen picture, its top-5 labels and CLS attention."""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.i18n import _, language, num
from explorer.pretrained.vit import PretrainedViTRun, classify
from transformer_core.pretrained import Pretrained
from ui.common.charts import layer_head_picker
from ui.common.pretrained import cache_key, load_shared, models_on_offer, pick_model, probability_table
from ui.vit.controls import PRE_HEAD, PRE_LAYER, PRETRAINED
from ui.vit.views import attention_section
from ui.vit.why_label import pretrained_label_section


@st.cache_data(max_entries=8, show_spinner=False)
def _classified(_pre: Pretrained, name: str, pixels: np.ndarray, lang: str) -> PretrainedViTRun:
    """The model on ``pixels`` (``name`` is the model's :func:`cache_key`; the model itself is not hashed; ``lang``
    keys the cache by language, since a model without label names calls its classes "class 3" in it)."""
    return classify(_pre, pixels)


def introduction(pre: Pretrained) -> str:
    """What the chosen model is, from its own folder: its name and how many labels its head chooses among."""
    labels = len(pre.labels or ())
    if labels:
        return _("**{name}**, a published ViT that chooses among its {labels} labels, reads the same picture, "
                 "prepared as in its training (its own resize, crop and colour normalisation; the size and fit above "
                 "are for the small model).").format(name=pre.name, labels=num(labels))
    return _("**{name}**, a published ViT that has no label names in its config.json, reads the same picture, "
             "prepared as in its training (its own resize, crop and colour normalisation; the size and fit above "
             "are for the small model).").format(name=pre.name)


def pretrained_section(pixels: np.ndarray, label: str) -> None:
    """Pick a pretrained ViT, run it on the original picture and draw its labels and attention."""
    st.subheader(_("5 · A pretrained ViT on this picture"))
    offer = pick_model(PRETRAINED, ("vit",), label=_("Pretrained ViT"))
    pre = None if offer is None else load_shared(offer, models_on_offer().budget_bytes)
    if pre is None:
        st.markdown(_("A published ViT reads the same picture, prepared as in its training."))
        return
    st.markdown(introduction(pre))
    with st.spinner(_("Running the pretrained ViT…")):
        run = _classified(pre, cache_key(pre), pixels, language())
    c = pre.config
    st.caption(_("**{name}** ({architecture}): {params} parameters, {size}×{size} pictures in {patch}-pixel patches "
                 "({patches} patches), {layers} layers × {heads} heads, {classes} classes.").format(
        name=pre.name, architecture=pre.architecture, params=num(pre.n_params), size=c.image_size,
        patch=c.patch_size, patches=num(run.walk.grid_size ** 2), layers=c.n_layers, heads=c.n_heads,
        classes=num(len(pre.labels or ()))))
    left, right = st.columns([1, 2], gap="large")
    left.image(run.pixels, caption=_("{picture}, as the model sees it").format(picture=label), width="stretch")
    with right:
        st.markdown("**" + _("Top 5 labels") + "**")
        probability_table([lab.name for lab in run.top], [lab.probability for lab in run.top], label=_("Label"),
                          help=_("The model's class names, from its config.json."))
    layer, head = layer_head_picker(run.walk.num_layers, run.walk.num_heads, keys=(PRE_LAYER, PRE_HEAD), helps=(
        _("The block whose CLS attention is drawn; the rollout combines all of them."),
        _("The head drawn large; every head of the layer is drawn below.")))
    attention_section(run.pixels, run.walk, layer, head, key="vit.pre_cls_numbers")
    pretrained_label_section(pre, pixels, run.pixels, run.walk)
