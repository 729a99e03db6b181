"""Projector mode: whether it is on, and its look (larger type, more room for the main visual, less chrome); and
small-screen fixes.

Every page, chart and lesson asks :func:`projector` whether projector mode is on. The page colours come from
``.streamlit/config.toml`` and Streamlit's light/dark switch (app menu → Settings); this module only adds the style
sheet that projector mode needs. Charts size their own fonts (``ui.common.charts.font_size``).
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from explorer.i18n import language
from ui.common import state

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


# Always on: on a 1024-pixel screen the page's wide side padding leaves narrow columns, and labels in them broke
# mid-word ("placemen t"). Less padding below 1280 pixels, and labels that wrap between words only.
BASE_CSS = """
<style>
@media (max-width: 1280px) {
  [data-testid="stMainBlockContainer"] { padding-left: 1.5rem; padding-right: 1.5rem; }
}
[data-testid="stWidgetLabel"] p, [data-testid="stMetricLabel"] p, [data-testid="stDownloadButton"] button p,
[data-testid="stPopover"] button p, [data-testid="stButton"] button p {
  word-break: normal; overflow-wrap: normal; }
/* A narrow column (1024 pixels with the sidebar open, a phone) wraps a figure or a label onto a second line
   rather than cutting it to "221 / 3,…" or "Attentio…", and scrolls a chart wider than it rather than hiding
   its last heads. */
[data-testid="stMetricValue"] > div, [data-testid="stMetricLabel"] div, [data-testid="stMetricLabel"] p,
[data-testid="stDownloadButton"] button p, [data-testid="stPopover"] button p, [data-testid="stButton"] button p,
[data-testid="stButton"] button [data-testid="stMarkdownContainer"], [data-testid="stMetricValue"] p,
[data-testid="stPageLink"] span, [data-testid="stPageLink"] p {
  white-space: normal; overflow: visible; text-overflow: clip; }
[data-testid="stVegaLiteChart"] { max-width: 100%; overflow-x: auto; }
/* Pills go on to a second row rather than scroll out of sight ("n504" hidden under the next widget). */
[data-testid="stButtonGroup"] > div { flex-wrap: wrap; }
/* Columns made by wrapping_columns go a set number to a row where their container is narrower than 900 pixels
   (a 1024-pixel screen with the sidebar open) and fewer on a phone: six controls to a row cut their values to
   "sinusoi" and "pre-nor", four figures to a row ran "3·14·14 = 588" into "66,049", a formula beside its map lost
   its end. Shares rather than exact fractions leave room for any gap between the columns. Only the container's own
   row: a row inside one of its columns keeps its layout. */
[class*="st-key-wrap"] { container-type: inline-size; }
@container (max-width: 899px) {
  [class*="st-key-wrap"] > * > [data-testid="stHorizontalBlock"] { flex-wrap: wrap; row-gap: 0.5rem; }
  [class*="st-key-wrap3-"] > * > * > [data-testid="stColumn"] { flex: 1 1 30% !important; min-width: 30% !important; }
  [class*="st-key-wrap2-"] > * > * > [data-testid="stColumn"] { flex: 1 1 40% !important; min-width: 40% !important; }
  [class*="st-key-wrap1-"] > * > * > [data-testid="stColumn"] { flex: 1 1 100% !important; min-width: 100% !important; }
}
/* A sample table's remark goes under its row in a narrow lane rather than scroll out of sight beside it. */
.te-samples { container-type: inline-size; }
.te-samples tr.te-under { display: none; }
@container (max-width: 479px) {
  .te-samples .te-beside { display: none; }
  .te-samples tr.te-under { display: table-row; }
}
@container (max-width: 539px) {
  [class*="st-key-wrap3-"] > * > * > [data-testid="stColumn"] { flex: 1 1 40% !important; min-width: 40% !important; }
  [class*="st-key-wrap2-"] > * > * > [data-testid="stColumn"] { flex: 1 1 100% !important; min-width: 100% !important; }
}
</style>
"""


def wrapping_columns(spec: int | list[float], key: str, *, per_row: int = 3, **kwargs: Any) -> list[DeltaGenerator]:
    """``st.columns(spec, **kwargs)`` in a container (keyed by ``key``) whose columns go ``per_row`` to a row where
    it is narrower than 900 pixels, and ``per_row - 1`` (at least one) on a phone, narrower than 540.

    ``per_row`` 3 suits a row of many controls, 2 a row of four figures, 1 a text beside its picture.
    """
    if per_row not in (1, 2, 3):
        raise ValueError(f"per_row must be 1, 2 or 3, not {per_row}")
    with st.container(key=f"wrap{per_row}-{key}"):
        return list(st.columns(spec, **kwargs))


def projector() -> bool:
    """Whether projector mode is on (the sidebar's switch, or ``present=1`` in the address)."""
    return bool(st.session_state.get(state.PRESENTATION, False))


def phone() -> bool:
    """Whether the page is on a phone, by its browser's own word: "Mobi" in the user agent, as phone browsers say
    and tablets do not. The server cannot know the screen's width; on a phone's third of a laptop's, the pages that
    can lay out their live view for one column (Live Training's first screen) do so."""
    try:
        agent = st.context.headers.get("User-Agent") or ""
    except Exception:  # noqa: BLE001 - no request headers outside a served page (bare scripts, some tests)
        return False
    return "Mobi" in agent


def one_column() -> bool:
    """Whether live views lay out for one column, as Live Training's compact first screen: in projector mode (the
    class reads it from afar) and on a phone (:func:`phone`)."""
    return projector() or phone()


# Streamlit's own hints under a text box ("Press Enter to apply", "3/500") are English whatever the page's language:
# a page in another language leaves them out (the boxes apply on Enter or when left, as everywhere), and the class
# code box always, whose counter of a pasted link's 500 characters said nothing about a six-letter code.
HINTS_CSS = """
<style>
[data-testid="InputInstructions"] { display: none; }
</style>
"""
CODE_BOX_CSS = """
<style>
.st-key-class-code [data-testid="InputInstructions"] { display: none; }
</style>
"""


def apply_theme() -> None:
    """Add the base style sheet, and projector mode's when it is on (once per run, before the page)."""
    hints = CODE_BOX_CSS if language() == "en" else HINTS_CSS
    st.html(BASE_CSS + hints + (PROJECTOR_CSS if projector() else ""))
