"""Page frame shared by the pages: the intro, the share link and the settings, arranged for the screen in use.

On a projector the main picture must be on the first screen (1024 × 768 is common in classrooms), so projector
mode drops the intro text and the share link and folds each page's settings into one collapsed "Settings"
panel; the widgets keep their values and can still be opened. Without projector mode nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

import streamlit as st

from ui.charts import projector
from ui.urlstate import UrlParam, share_link

SETTINGS_LABEL = "⚙️ Settings"  # the collapsed panel that holds a page's settings in projector mode


def page_intro(caption: str, *, params: Sequence[UrlParam] | None = None, url_path: str | None = None) -> None:
    """The page's one-paragraph intro and its share link, both left out in projector mode."""
    if projector():
        return
    st.caption(caption)
    if params is not None and url_path is not None:
        share_link(params, url_path=url_path)


def settings_panel() -> AbstractContextManager:
    """Where a page draws its settings: a collapsed panel in projector mode, the page itself otherwise."""
    if projector():
        return st.expander(SETTINGS_LABEL, expanded=False)
    return st.container()
