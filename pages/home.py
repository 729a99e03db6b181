"""Home: what Transformer Explorer is, what each page teaches, and how to start."""

import streamlit as st

from ui.common.router import ensure_router
from ui.common.urlstate import bind_url, share_link

ensure_router()  # a deep link on a fresh server must still go through app.py

st.title("🔭 Transformer Explorer")
bind_url((), page="home")  # the home page has no settings of its own: a link's unknown ones get a notice
st.markdown(
    "A complete transformer, written from scratch in PyTorch, that you can take apart and **watch learn**. "
    "Every number on these pages comes from a real forward pass — change heads, layers or `d_model`, upload an "
    "image, or train a small model for a few seconds and see its attention reorganise."
)
share_link((), url_path="")  # the app-wide settings only: heatmap colours, projector mode

st.subheader("Where to start")
c1, c2, c3 = st.columns(3)
with c1:
    st.markdown("**New to transformers?**  \nFollow a guided lesson: goal, a few steps, a question to predict.")
    st.page_link("pages/lessons.py", label="Open the lessons", icon="🎓")
with c2:
    st.markdown("**Want to see attention?**  \nType a sentence and step through Q, K, V, softmax and the heads.")
    st.page_link("pages/attention.py", label="Open the Attention Lab", icon="🔍")
with c3:
    st.markdown("**Ready to train?**  \nPick a task, press Start and watch the heads discover the pattern.")
    st.page_link("pages/training.py", label="Open Live Training", icon="📈")

st.subheader("What each page teaches")
PAGES = [
    ("pages/attention.py", "Attention Lab", "🔍",
     "Scaled dot-product and multi-head attention step by step — X → Q, K, V → QKᵀ → ÷√d_k → mask → softmax → ×V "
     "→ concatenate heads → W_O — with the real numbers, causal and padding masks, and every layer × head at once."),
    ("pages/positional.py", "Positional Encodings", "〰️",
     "Why attention needs positions: the sinusoidal table, why PE(pos + k) is a rotation of PE(pos), learned, "
     "rotary and no encoding compared, and the shuffle test."),
    ("pages/vit.py", "ViT Patching", "🖼️",
     "How an image becomes tokens: patches, flattening, the linear projection, the CLS token and positional "
     "embeddings, and where the CLS token looks (attention rollout)."),
    ("pages/builder.py", "Model Builder", "🧱",
     "Configure encoder-only, decoder-only, encoder–decoder or ViT models and see parameters, FLOPs and memory, "
     "next to BERT-base, GPT-2 small, the original Transformer and ViT-B/16."),
    ("pages/training.py", "Live Training", "📈",
     "Train a small model on reverse, sort, induction, character language modelling, protein properties or "
     "shapes images and watch loss, accuracy and attention heatmaps change live; scrub the time-lapse."),
    ("pages/lessons.py", "Lessons", "🎓",
     "Short guided scenarios for a classroom: positional encoding matters, heads specialise, patches are tokens, "
     "causal masks."),
]
for path, title, icon, text in PAGES:
    with st.container(border=True):
        st.page_link(path, label=f"**{title}**", icon=icon)
        st.markdown(text)

st.subheader("How it works")
st.markdown(
    "- **One engine** (`transformer_core`, pure PyTorch) runs text, protein sequences and images: multi-head "
    "attention with masks, sinusoidal / learned / rotary positions, pre- or post-norm encoder and decoder blocks, "
    "an encoder–decoder with a projection layer, a decoder-only language model, an encoder-only regressor and a "
    "Vision Transformer.\n"
    "- It runs **offline on a laptop CPU** (or a GPU when there is one); nothing is downloaded while you use it.\n"
    "- Everything you see can be **exported**: figures as PNG or SVG, attention tensors as CSV or NPY, metrics, "
    "configs and checkpoints."
)
