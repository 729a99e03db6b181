"""Live Training page: replay a recorded run instead of training the same settings again.

Start looks up the recording of exactly these settings (:func:`explorer.runs.recording.recording_key`) in the run
store. When one is kept, the session's run becomes a :class:`~explorer.runs.recording.ReplayRun`: it shows what
training would show, at the recorded pace (faster on request), takes no place among the runs training at once,
and says that it is a replay. "Train for real" is one click away and trains these settings anyway.
"""

from __future__ import annotations

import streamlit as st

from explorer.runs.live import LiveRun
from explorer.runs.recording import ReplayRun, find_replay, keep
from explorer.runs.store import StoreUnavailable, run_store
from ui.common import st_internals

REAL = "live.replay.real"  # the settings signature the user chose to train for real (no replay for it)
SPEED = "live.replay.speed"  # how many times faster than recorded a replay plays
SPEEDS = (1, 2, 4, 8)
LOG = st_internals.logger("transformer_explorer.replay")


def replay_for(run: LiveRun, signature: tuple) -> LiveRun:
    """A replay of ``run``'s settings when a recording of them is kept (and the user did not ask to train for
    real), else ``run`` itself."""
    if st.session_state.get(REAL) == signature:
        return run
    try:
        played = find_replay(run, run_store(), speed=st.session_state.get(SPEED, 1))
    except StoreUnavailable as err:
        LOG.warning("no replay: %s", err)
        return run
    return run if played is None else played


def keep_recording(run: LiveRun) -> None:
    """Keep a run that went its whole way, so that the same settings replay it (nothing else is kept)."""
    try:
        recording = keep(run, run_store())
    except StoreUnavailable as err:
        LOG.warning("run not recorded: %s", err)
        return
    if recording is not None:
        LOG.info("run recorded for replays (%d steps, %.1f MB)", run.step, recording.nbytes() / 2**20)


def replay_banner(run: LiveRun | None, train_for_real) -> None:
    """While a replay is shown: what it is, its speed, and the button that trains the settings for real."""
    if not isinstance(run, ReplayRun):
        return
    st.session_state.setdefault(SPEED, 1)
    with st.container(border=True):
        c_text, c_speed, c_real = st.columns([4, 1, 1.3], vertical_alignment="center")
        c_text.markdown("▶️ **Replay.** These exact settings were trained on this server before, so this is a "
                        "recording of that run: the same curves, attention and samples that training gives, at "
                        "the recorded pace. It costs no training and takes no place in line.")
        c_speed.selectbox("Replay speed", SPEEDS, key=SPEED, format_func=lambda s: f"{s}×",
                          help="How many times faster than it was recorded the replay plays.")
        c_real.button("Train for real", icon=":material/model_training:", on_click=train_for_real,
                      key="live.replay.train",
                      help="Train these settings now instead of replaying the recording (you may have to wait "
                           "for a free place).")
    run.speed = float(st.session_state[SPEED])
