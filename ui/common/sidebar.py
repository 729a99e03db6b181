"""The settings shared by every page: projector mode, heatmap colours, and where the model runs.

Projector mode and the colour scale travel in the URL too (``?present=true&colors=Cividis``, see
``ui.common.urlstate.APP_PARAMS``), so a teacher's link opens any page ready for the projector.
"""

from __future__ import annotations

import os

import streamlit as st

from explorer.host import GIB, MIB, host_profile, limits
from explorer.i18n import _, ngettext, num
from explorer.runs.load import server_load
from transformer_core import available_devices, configure_threads
from ui.common import state
from ui.common.charts import ATTENTION_SCALES
from ui.common.language import language_picker, mark_page_language
from ui.common.theme import apply_theme, projector
from ui.common.urlstate import APP_PAGE, APP_PARAMS, bind_url, count_run, push_url

_COLLAPSED = "app.sidebar_collapsed"  # bool: projector mode was on in the previous run (sidebar already collapsed)


@st.cache_resource(show_spinner=False)
def _torch_threads() -> int:
    """Set torch's thread count for this host once per process (a read-only result).

    ``TE_NUM_THREADS`` in the environment wins over the host's default, as it does for the CLI.
    """
    return configure_threads(None if os.environ.get("TE_NUM_THREADS") else limits().threads)


def app_settings() -> None:
    """Apply the URL's app-wide settings, draw the shared sidebar and the projector-mode style sheet.

    The router calls it once per run, before the page.
    """
    count_run()
    bind_url(APP_PARAMS, page=APP_PAGE)
    presentation = projector()
    if presentation and not st.session_state.get(_COLLAPSED, False):
        # Collapse once when projector mode starts; later runs leave the sidebar as the presenter put it.
        st.set_page_config(initial_sidebar_state="collapsed")
    st.session_state[_COLLAPSED] = presentation
    with st.sidebar:
        language_picker()
        mark_page_language()
        st.toggle(
            _("Projector mode"), key=state.PRESENTATION,
            help=_("Larger text, bigger charts and fewer controls, for showing the app on a projector. "
                   "Links with ?present=true open in this mode."),
        )
        st.selectbox(
            _("Heatmap colours"), state.SEQUENTIAL_SCALES, key=state.COLORSCALE,
            help=_("Colour scale of every attention heatmap. Viridis and Cividis stay readable with colour "
                   "blindness; hover over a cell for its exact number."),
        )
        st.radio(
            _("Attention colours"), list(ATTENTION_SCALES), key=state.ATTENTION_SCALE,
            format_func=lambda scale: _(ATTENTION_SCALES[scale]),
            help=_("Fixed: every attention map is coloured from 0 to 1, so near-uniform (random) attention looks "
                   "flat. Stretch: each map uses its own lowest to highest weight, which shows small differences "
                   "but makes any map look structured. Maps whose rows barely vary are flagged “nearly uniform” "
                   "either way."),
        )
        st.radio(
            _("Chart downloads"), ("PNG", "SVG"), key=state.IMAGE_FORMAT, horizontal=True,
            help=_("What the camera icon above each chart saves: PNG, a picture for slides, or SVG, a drawing "
                   "that stays sharp at any size."),
        )
        _host_caption()
    apply_theme()
    push_url(APP_PARAMS)


def _host_caption() -> None:
    devices = available_devices()
    threads = _torch_threads()
    st.caption(ngettext("Running on **{device}** · available: {devices} · {n} CPU thread",
                        "Running on **{device}** · available: {devices} · {n} CPU threads", threads)
               .format(device=devices[0].upper(), devices=", ".join(devices), n=num(threads)))
    st.caption(server_line())
    profile = host_profile()
    if profile.small:
        st.caption(ngettext("Small host ({n} core, {memory} GB): model sizes, batches and training runs are "
                            "limited to keep the app responsive.",
                            "Small host ({n} cores, {memory} GB): model sizes, batches and training runs are "
                            "limited to keep the app responsive.", profile.cores)
                   .format(n=num(profile.cores), memory=num(profile.memory_bytes / GIB, 1)))


def server_line() -> str:
    """What the server's runs hold against its caps: runs training, paused (with their trainer or training memory
    still held) and waiting, trainer processes, and their estimated training memory."""
    load = server_load()
    caps, most = load.capacity, limits().max_live_runs
    return _("Training here: {running} of {most} running · {paused} paused · {waiting} waiting · trainers "
             "{trainers} of {max_trainers} · memory {memory} of {max_memory}").format(
        running=num(load.running), most=num(most), paused=num(load.paused), waiting=num(load.waiting),
        trainers=num(load.trainers), max_trainers=num(caps.max_trainers), memory=_size(load.memory_bytes),
        max_memory=_size(caps.memory_bytes))


def _size(n: int) -> str:
    if n >= GIB:
        return _("{size} GB").format(size=num(n / GIB, 1))
    return _("{size} MB").format(size=num(n / MIB, 0))
