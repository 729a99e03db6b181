"""The sidebar shared by every page: display settings and where the model runs."""

from __future__ import annotations

import streamlit as st

from transformer_core import available_devices
from ui import state
from ui.charts import SEQUENTIAL_SCALES


def app_settings() -> None:
    """Projector mode, heatmap colours and the compute device, under the page menu."""
    with st.sidebar:
        st.toggle(
            "Projector mode", key=state.PRESENTATION,
            help="Larger fonts and fewer controls, for showing the app on a projector.",
        )
        st.selectbox(
            "Heatmap colours", SEQUENTIAL_SCALES, key=state.COLORSCALE,
            help="Colour scale of every attention heatmap. Viridis and Cividis stay readable with colour blindness.",
        )
        devices = available_devices()
        st.caption(f"Running on **{devices[0].upper()}** · available: {', '.join(devices)}")
