"""Positional Encodings: the sinusoidal table, why relative positions are learnable, and why positions matter."""

import streamlit as st

from ui import positional_views as pv
from ui import state
from ui.positional_compare import compare_section, every_encoding_past_max_len, shuffle_section
from ui.router import ensure_router
from ui.urlstate import bind_url, push_url, share_link

ensure_router()  # a deep link on a fresh server must still go through app.py

st.title("〰️ Positional Encodings")
st.caption("Attention by itself is blind to word order. Positional encodings give every position its own "
           "signature; this page shows what they look like and why they work.")
pv.init_page_state()
bind_url(pv.URL_PARAMS, page="positional")
share_link(pv.URL_PARAMS, url_path="positional")
projector = st.session_state.get(state.PRESENTATION, False)

max_len, d_model, base = pv.table_controls(projector=projector)
section = st.radio("Section", list(pv.SECTIONS), format_func=pv.SECTIONS.get, key=pv.SECTION, horizontal=True,
                   label_visibility="collapsed", help="Which part of the story to show.")
if section == "table":
    pv.table_section(max_len, d_model, base)
elif section == "relative":
    pv.relative_section(max_len, d_model, base)
elif section == "beyond":
    pv.beyond_section(max_len, d_model, base)
    every_encoding_past_max_len(max_len, d_model, base)
elif section == "compare":
    compare_section(max_len, d_model, base)
else:
    shuffle_section()
push_url(pv.URL_PARAMS)
