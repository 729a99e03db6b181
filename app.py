"""Transformer Explorer — the router: page config, shared sidebar, navigation over the page registry."""

import streamlit as st

from explorer.heap import settle_heap
from ui.common import st_costs, state
from ui.common.language import apply_language
from ui.common.sidebar import app_settings
from ui.pages import navigation
from ui.training.run import leave_page

settle_heap()  # once per process: the imported modules leave the cycle collector's walks (explorer/heap.py)
st_costs.read_config_without_lock()  # once per process: no element waits on Streamlit's config lock
st.set_page_config(page_title="Transformer Explorer", page_icon="🔭", layout="wide")
state.init_state()
apply_language()  # before anything is drawn: every string below reads the session's language

page = st.navigation(navigation())
app_settings()
if page.url_path != "training":
    leave_page()  # a training run nobody watches stops and frees its memory
page.run()
