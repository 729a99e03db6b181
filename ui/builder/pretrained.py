"""Model Builder: a loaded pretrained model, counted the same way, set beside the famous models."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from explorer.i18n import _, num
from explorer.pretrained.catalogue import Offer
from explorer.pretrained.sizes import FAMILY_KINDS, LoadedSizes, loaded_sizes
from ui.builder.controls import COMPARE_LOADED, LOADED_MODEL
from ui.common.pretrained import load_shared, models_on_offer, pick_model


def loaded_model_sizes(batch_size: int) -> LoadedSizes | None:
    """A switch and a model menu; the chosen pretrained model's real sizes, or ``None`` when none is chosen."""
    if not st.toggle(
        _("Set a pretrained model beside them"),
        key=COMPARE_LOADED,
        help=_(
            "Loads a GPT-2, a Llama-family model (SmolLM2, Qwen2.5), BERT or ViT from the models "
            "folder or the Hugging Face cache and counts its real modules: parameters by component, "
            "FLOPs and training memory."
        ),
    ):
        return None
    offer = pick_model(LOADED_MODEL, tuple(FAMILY_KINDS), label=_("Pretrained model to count"))
    pretrained = None if offer is None else load_shared(offer, models_on_offer().budget_bytes)
    if pretrained is None:
        return None
    sizes = loaded_sizes(pretrained, batch_size=batch_size, where=_where(offer))
    st.caption(
        _("**{model}**: {count} parameters, counted from its loaded weights.").format(
            model=sizes.title, count=num(pretrained.n_params)
        )
    )
    return sizes


def _where(offer: Offer) -> str:
    """The models folder and the folder's name (``models/gpt2``), or "the Hugging Face cache"."""
    if offer.where == "Hugging Face cache":
        return _("the Hugging Face cache")
    path = Path(offer.source)
    return f"{path.parent.name}/{path.name}"
