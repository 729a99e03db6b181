"""Home: what Transformer Explorer is, what each page teaches, and how to start."""

import streamlit as st

from explorer.i18n import _
from ui.pages import PAGES, encoding_titles, open_page, page_info, share_page

info = open_page("home")  # the home page has no settings of its own: a link's unknown ones get a notice
st.markdown(_(
    "A complete transformer, written from scratch in PyTorch, that you can take apart and **watch it learn**. "
    "Every number on these pages comes from a real forward pass — change heads, layers or `d_model`, upload an "
    "image, or train a small model for a few seconds and see its attention reorganise."
))
share_page(info)  # the app-wide settings only: heatmap colours, projector mode

st.subheader(_("Where to start"))
c1, c2, c3 = st.columns(3)
with c1:
    st.markdown(_("**New to transformers?**  \nFollow a guided lesson: goal, a few steps, a question to predict."))
    st.page_link(page_info("lessons").path, label=_("Open the lessons"), icon=page_info("lessons").icon)
with c2:
    st.markdown(_("**Want to see attention?**  \nType a sentence and step through Q, K, V, softmax and the heads."))
    st.page_link(page_info("attention").path, label=_("Open the Attention Lab"), icon=page_info("attention").icon)
with c3:
    st.markdown(_("**Ready to train?**  \nPick a task, press Start and watch the heads discover the pattern."))
    st.page_link(page_info("training").path, label=_("Open Live Training"), icon=page_info("training").icon)

st.subheader(_("What each page teaches"))
for page in PAGES:
    if page.blurb:
        with st.container(border=True):
            st.page_link(page.path, label=f"**{_(page.title)}**", icon=page.icon)
            st.markdown(page.blurb)

st.subheader(_("How it works"))
st.markdown(_(
    "- **One engine** (`transformer_core`, pure PyTorch) runs text, protein sequences and images: multi-head "
    "attention with masks, {encodings} positions, pre- or post-norm encoder and decoder blocks, an encoder–decoder "
    "with a projection layer, a decoder-only language model, an encoder-only regressor and a Vision Transformer.\n"
    "- It runs **offline on a laptop CPU** (or a GPU when there is one); nothing is downloaded while you use it.\n"
    "- Everything you see can be **exported**: figures as PNG or SVG, attention tensors as CSV or NPY, metrics, "
    "configs and checkpoints."
).format(encodings=" / ".join(encoding_titles(with_none=False))))
