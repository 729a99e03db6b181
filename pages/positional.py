"""Positional Encodings: the sinusoidal table, why relative positions are learnable, and why positions matter."""

import streamlit as st

from explorer.i18n import _
from ui.common import theme
from ui.pages import close_page, open_page, settings_panel, share_page
from ui.positional import views
from ui.positional.compare import compare_section, every_encoding_past_max_len, shuffle_section
from ui.positional.pretrained import pretrained_section

info = open_page("positional", init=views.init_page_state, kept=views.KEPT,
                 caption=_("Attention by itself is blind to word order. Positional encodings give every position "
                           "its own signature; this page shows what they look like and why they work."))
share_page(info)
projector = theme.projector()

with settings_panel():
    max_len, d_model, base = views.table_controls(projector=projector)
section = st.radio(_("Section"), list(views.SECTIONS), format_func=lambda s: _(views.SECTIONS[s]), key=views.SECTION,
                   horizontal=True, label_visibility="collapsed", help=_("Which part of the story to show."))
if section == "table":
    views.table_section(max_len, d_model, base)
elif section == "relative":
    views.relative_section(max_len, d_model, base)
elif section == "beyond":
    views.beyond_section(max_len, d_model, base)
    every_encoding_past_max_len(max_len, d_model, base)
elif section == "compare":
    compare_section(max_len, d_model, base)
elif section == "pretrained":
    pretrained_section()
else:
    shuffle_section()
close_page(info)
