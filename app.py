"""Transformer Explorer — the router: page config, shared sidebar and navigation over the pages in pages/."""

import streamlit as st

from ui.common import state
from ui.common.sidebar import app_settings
from ui.training.run import leave_page

st.set_page_config(page_title="Transformer Explorer", page_icon="🔭", layout="wide")
state.init_state()

PAGES = {
    "Start": [
        st.Page("pages/home.py", title="Home", icon="🏠", default=True),
        st.Page("pages/lessons.py", title="Lessons", icon="🎓", url_path="lessons"),
    ],
    "Explore": [
        st.Page("pages/attention.py", title="Attention Lab", icon="🔍", url_path="attention"),
        st.Page("pages/positional.py", title="Positional Encodings", icon="〰️", url_path="positional"),
        st.Page("pages/vit.py", title="ViT Patching", icon="🖼️", url_path="vit"),
        st.Page("pages/builder.py", title="Model Builder", icon="🧱", url_path="builder"),
    ],
    "Train": [
        st.Page("pages/training.py", title="Live Training", icon="📈", url_path="training"),
    ],
}

page = st.navigation(PAGES)
app_settings()
if page.url_path != "training":
    leave_page()  # a training run nobody watches stops and frees its memory
page.run()
