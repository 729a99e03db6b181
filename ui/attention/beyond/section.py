"""The *Beyond attention* section: a picker over the second lenses and the chosen one, drawn on demand."""

from __future__ import annotations

from importlib import import_module

import streamlit as st

from explorer.i18n import N_, _
from ui.attention.beyond.context import LensContext
from ui.attention.beyond.registry import VIEWS, view
from ui.attention.keys import BEYOND

INTRO = N_("Attention shows where each token looks, not what the model needed to answer. These lenses ask the model "
           "itself: change the input or its insides and see how the answer moves.")


def beyond_section(ctx: LensContext | None) -> None:
    """The picker and the chosen view (nothing is computed until a view is chosen)."""
    if not VIEWS:
        return
    st.subheader(_("Beyond attention: what the model used"))
    if ctx is None or not ctx.projector:
        st.caption(_(INTRO))
    key = st.segmented_control(_("Second lens"), [v.key for v in VIEWS], key=BEYOND,
                               format_func=lambda k: _(view(k).title) if view(k) else k,
                               help=_("Each lens answers a question attention cannot. Pick one to compute it."))
    chosen = view(key or "")
    if chosen is None:
        return
    if ctx is None:
        st.info(_("Type a text the model can read to use this lens."), icon="⌨️")

        return
    module = import_module(f"ui.attention.beyond.{chosen.module}")
    reason = module.offered(ctx)
    if reason:
        st.info(reason, icon="ℹ️")
        return
    module.draw(ctx)
