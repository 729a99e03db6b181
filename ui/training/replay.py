"""Live Training page: the banner of a replay — what it is, its speed, and "Train for real".

Start replays a recording of exactly these settings when the run store keeps one
(:meth:`~explorer.runs.session.RunSession.replay`): a :class:`~explorer.runs.recording.ReplayRun` shows what
training would show, at the recorded pace (faster on request), takes no place among the runs training at once,
and says that it is a replay. A run on the user's own text is never recorded for others, so never replayed.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from explorer.i18n import _
from explorer.runs.recording import ReplayRun
from explorer.runs.session import RunSession

SPEED = "live.replay.speed"  # how many times faster than recorded a replay plays
SPEEDS = (1, 2, 4, 8)


def replay_banner(held: RunSession, train_for_real: Callable[[], None]) -> None:
    """While a replay is shown: what it is, its speed, and the button that trains the settings for real."""
    st.session_state.setdefault(SPEED, 1)
    held.replay_speed = float(st.session_state[SPEED])
    run = held.run
    if not isinstance(run, ReplayRun):
        return
    with st.container(border=True):
        c_text, c_speed, c_real = st.columns([4, 1, 1.3], vertical_alignment="center")
        c_text.markdown(
            "▶️ "
            + _(
                "**Replay.** These exact settings were trained on this server before, so this "
                "is a recording of that run: the same curves, attention and samples that training "
                "gives, at the recorded pace. It costs no training and takes no place in line."
            )
        )
        c_speed.selectbox(
            _("Replay speed"),
            SPEEDS,
            key=SPEED,
            format_func=lambda s: f"{s}×",
            help=_("How many times faster than it was recorded the replay plays."),
        )
        c_real.button(
            _("Train for real"),
            icon=":material/model_training:",
            on_click=train_for_real,
            key="live.replay.train",
            help=_(
                "Train these settings now instead of replaying the recording (you may have to wait for a free place)."
            ),
        )
    run.speed = held.replay_speed = float(st.session_state[SPEED])
