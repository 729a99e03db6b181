"""Projector mode's look: larger type, more room for the main visual, less chrome.

The page colours come from ``.streamlit/config.toml`` and Streamlit's light/dark switch (app menu → Settings);
this module only adds the style sheet that projector mode needs. Charts size their own fonts
(``ui.common.charts.font_size``).
"""

from __future__ import annotations

import streamlit as st

PROJECTOR_SCALE = 1.3  # text size in projector mode relative to the normal size

# Streamlit sizes text in rem, so scaling the root font size enlarges every label, table and widget at once.
# Headings get an extra step; the top padding shrinks so the main visual starts higher on a 16:9 screen.
PROJECTOR_CSS = f"""
<style>
html {{ font-size: {100 * PROJECTOR_SCALE:.0f}%; }}
[data-testid="stMainBlockContainer"] {{ padding-top: 2.5rem; padding-left: 2rem; padding-right: 2rem;
    max-width: 100%; }}
[data-testid="stMainBlockContainer"] h1 {{ font-size: 2.6rem; }}
[data-testid="stMainBlockContainer"] h2 {{ font-size: 2.0rem; }}
[data-testid="stMainBlockContainer"] h3 {{ font-size: 1.6rem; }}
[data-testid="stMainBlockContainer"] p, [data-testid="stMainBlockContainer"] li {{ line-height: 1.5; }}
[data-testid="stCaptionContainer"] {{ font-size: 1rem; }}
[data-testid="stDecoration"] {{ display: none; }}
</style>
"""


def apply_theme(presentation: bool) -> None:
    """Add projector mode's style sheet when ``presentation`` is on (call once per run, before the page)."""
    if presentation:
        st.html(PROJECTOR_CSS)
