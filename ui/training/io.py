"""Live Training page: the time-lapse slider, downloads (NPZ, CSV, JSON, safetensors, GIF) and checkpoint upload.

Files are made only when a download button is clicked, from the run as it is at that moment. An uploaded
checkpoint is judged from its header first — the size limits of this server, the settings the page can
reproduce and the resource guard — and its model is built only when all of them allow it. A checkpoint of
another task switches the page to that task and says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import streamlit as st

from explorer.guard import model_limit_problems
from explorer.host import MIB, limits
from explorer.i18n import _, num
from explorer.i18n.message import localized, message_of
from explorer.render.timelapse import snapshots_npy, snapshots_npz, timelapse_gif
from explorer.runs.frame import RunFrame
from explorer.runs.live import LiveRun
from explorer.runs.recording import checkpoint_bytes
from transformer_core.checkpoint import (
    CheckpointError,
    CheckpointInfo,
    load_checkpoint,
    read_checkpoint_info,
)
from transformer_core.tasks import task_names
from ui.common.charts import colorscale
from ui.common.exports import colormap
from ui.common.theme import wrapping_columns
from ui.training import controls
from ui.training.charts import kind_title
from ui.training.run import build_run, hand_over_model, session
from ui.training.specs import build_specs, guard
from ui.training.task_labels import shown_label, task_title
from ui.training.views import PIN

FRAME = "live.frame"  # the time-lapse slider (a snapshot's step)
FRAME_LAST = "live.frame_last"  # the slider's last step when it was drawn: choosing it means "follow"
UPLOAD = "live.upload"  # the checkpoint uploader
# Model settings a checkpoint fills into the page's widgets.
_ARCH_KEYS = {
    "n_layers": controls.LAYERS,
    "n_heads": controls.HEADS,
    "d_model": controls.D_MODEL,
    "d_ff": controls.D_FF,
    "dropout": controls.DROPOUT,
    "norm_position": controls.NORM,
    "positional": controls.POSITIONAL,
}


def _on_frame() -> None:
    value, last = st.session_state.get(FRAME), st.session_state.get(FRAME_LAST)
    st.session_state[PIN] = None if value is None or last is None or value >= last else value


def timelapse_controls(run: RunFrame, kind: str, *, follow: bool) -> Any:
    """The time-lapse slider over the snapshots and the GIF export; returns the live line's place when following.

    While the heatmaps follow training (``follow``), the slider, drawn once per script run, would lag behind
    them: an ``st.empty`` takes its place, and the live view writes the step it shows there.
    """
    steps = [s.step for s in run.lanes[0].snapshots]
    c_slider, c_gif = st.columns([5, 1], vertical_alignment="bottom")
    if follow:
        line = c_slider.empty()
    elif len(steps) < 2:
        c_slider.caption("🎞️ " + _("The time-lapse slider appears once a second attention snapshot has been taken."))
        return None
    else:
        line = None
        pin = st.session_state.get(PIN)
        st.session_state[FRAME] = steps[-1] if pin is None else min(steps, key=lambda s: abs(s - pin))
        st.session_state[FRAME_LAST] = steps[-1]
        c_slider.select_slider(
            "🎞️ " + _("Time-lapse: attention at step"),
            options=steps,
            key=FRAME,
            on_change=_on_frame,
            help=_(
                "Scrub through the attention snapshots; the dotted line on the curves marks the step shown. "
                "At the right end the heatmaps follow training live."
            ),
        )
    lut = colormap(colorscale())
    title = f"{task_title(run.task)} · {kind_title(kind, run.task.family)} · "
    c_gif.download_button(
        "GIF",
        lambda: timelapse_gif(run.lanes[0].snapshots, kind, lut=lut, title=title),
        file_name=f"{run.task.name}-{kind}-timelapse.gif",
        mime="image/gif",
        on_click="ignore",
        icon=":material/movie:",
        key="live.gif",
        width="stretch",
        help=_(
            "The time-lapse as an animated GIF: every layer × head of the attention shown, one frame per "
            "snapshot (configuration A)."
        ),
    )
    return line


def _download(col, label: str, data: Callable[[], bytes | str], name: str, mime: str, key: str, help: str) -> None:
    col.download_button(
        label,
        data,
        file_name=name,
        mime=mime,
        key=key,
        help=help,
        on_click="ignore",
        icon=":material/download:",
        width="stretch",
    )


def _checkpoint(run: LiveRun, lane: int) -> bytes:
    run.current_weights()  # a run training elsewhere sends its weights of this step
    return checkpoint_bytes(run, lane)


def downloads(run: LiveRun, kind: str) -> None:
    """Attention snapshots (the shown ``kind`` as NPY, every kind as NPZ), metrics, configuration and checkpoint."""
    for i, (label, trainer) in enumerate(zip(run.labels, run.trainers, strict=True)):
        tag = f"-{'ab'[i]}" if len(run.trainers) > 1 else ""
        if len(run.trainers) > 1:
            st.markdown(f"**{shown_label(label)}**")
        cols = wrapping_columns(5, key=f"live-downloads-{i}")  # "Checkpoint" whole in a narrow column
        base = f"{run.task.name}{tag}"
        shown = kind_title(kind, run.task.family)
        _download(
            cols[0],
            _("Attention (NPY)"),
            lambda t=trainer: snapshots_npy(t.snapshots, kind),
            f"{base}-{kind}-attention.npy",
            "application/octet-stream",
            f"live.dl.npy{i}",
            _(
                "{kind}: every snapshot as one float16 array (snapshots, layers, heads, queries, keys). "
                "Open with numpy.load; the snapshot steps are in the NPZ file."
            ).format(kind=shown),
        )
        _download(
            cols[1],
            _("All kinds (NPZ)"),
            lambda t=trainer: snapshots_npz(t.snapshots),
            f"{base}-attention.npz",
            "application/octet-stream",
            f"live.dl.npz{i}",
            _(
                "Every snapshot of every attention kind in one .npz (a zip of .npy files): 'steps' and one "
                "(snapshots, layers, heads, queries, keys) array per kind. Open with numpy.load."
            ),
        )
        _download(
            cols[2],
            _("Metrics (CSV)"),
            lambda t=trainer: t.metrics_csv(),
            f"{base}-metrics.csv",
            "text/csv",
            f"live.dl.csv{i}",
            _("One row per step: loss, learning rate, time, and the held-out metrics."),
        )
        config = {**run.config_dict(), "runs": [run.config_dict()["runs"][i]]}
        _download(
            cols[3],
            _("Config (JSON)"),
            lambda c=config: json.dumps(c, indent=2),
            f"{base}-config.json",
            "application/json",
            f"live.dl.json{i}",
            _("The task, model and training settings of this run."),
        )
        _download(
            cols[4],
            _("Checkpoint"),
            lambda lane=i: _checkpoint(run, lane),
            f"{base}.safetensors",
            "application/octet-stream",
            f"live.dl.ckpt{i}",
            _("The trained weights as .safetensors; load them again here with 'Load a checkpoint'."),
        )


def _fill_settings(task_name: str, config) -> None:
    """Point the settings widgets at a checkpoint's task and architecture."""
    controls.choose_task(task_name)
    st.session_state[controls.COMPARE] = False
    for name, key in _ARCH_KEYS.items():
        if name in {f.name for f in fields(config)}:
            st.session_state[key] = getattr(config, name)


def _settings() -> dict[str, Any]:
    return {k: st.session_state[k] for k in (*controls.SESSION_DEFAULTS, controls.DEVICE) if k in st.session_state}


def upload_limit_mb() -> int:
    """Largest checkpoint file this server takes, in MB: its biggest model's weights plus room for the header."""
    return math.ceil(limits().max_checkpoint_bytes / MIB) + 1


def _check_fits(info: CheckpointInfo) -> None:
    """Refuse, before anything is built, a checkpoint this page cannot train; fills in its settings otherwise.

    The described model must be within this server's sizes, the page must reproduce it exactly (vocabulary,
    sequence length, ...) from its settings, and the resource guard must accept it.
    """
    if info.task_name not in task_names():
        raise CheckpointError(
            _("This checkpoint was trained on {task}, which is not a task of this page.").format(
                task=repr(info.task_name)
            )
        )
    too_big = model_limit_problems(info.config, limits())
    if too_big:
        raise CheckpointError(
            _("Its model is larger than this server trains: {problems}.").format(problems=", ".join(too_big))
        )
    _fill_settings(info.task_name, info.config)
    controls.restore_settings()
    try:
        task, specs = build_specs()
    except ValueError as err:
        raise CheckpointError(message_of(err)) from err
    if specs[0].model_config != info.config:
        raise CheckpointError(
            _(
                "This checkpoint's model has settings this page cannot reproduce "
                "(for example another vocabulary or sequence length)."
            )
        )
    verdict = guard(task, specs)
    if not verdict.ok:
        raise CheckpointError(verdict.reason)


def _on_upload() -> None:
    file = st.session_state.get(UPLOAD)
    if file is None:
        return
    before = _settings()
    old_task = controls.load_task(before.get(controls.TASK, task_names()[0]))
    try:
        data = file.getvalue()
        if len(data) > upload_limit_mb() * MIB:
            raise CheckpointError(
                _("The file is {size} MB; checkpoints on this server are at most {limit} MB.").format(
                    size=num(len(data) / MIB, 1), limit=upload_limit_mb()
                )
            )
        info = read_checkpoint_info(data)
        _check_fits(info)
        loaded = load_checkpoint(data)
        run, verdict, error = build_run(force=True)
        if error or run is None or verdict is None or not verdict.ok:
            raise CheckpointError(error or (verdict.reason if verdict else _("The model does not fit.")))
        run.load_weights(loaded.model.state_dict())
        hand_over_model(run, force=True)
        switched = (
            ""
            if loaded.task_name == old_task.name
            else " "
            + _("It was trained on the {task} task, so the page switched from {old} to {task}.").format(
                task=task_title(run.task), old=task_title(old_task)
            )
        )
        session().notice = (
            "success",
            _("Loaded {file}.").format(file=file.name)
            + switched
            + " "
            + _("Press Start to train it further, or open the other pages to explore it."),
        )
    except CheckpointError as err:
        st.session_state.update(before)  # a refused file leaves the settings as they were
        session().notice = (
            "error",
            _("{file} was not loaded. {reason}").format(file=file.name, reason=localized(err)),
        )


def upload() -> None:
    """A safetensors uploader: the checkpoint's model replaces configuration A (validated first)."""
    st.file_uploader(
        _("Load a checkpoint (.safetensors)"),
        type=["safetensors"],
        key=UPLOAD,
        on_change=_on_upload,
        max_upload_size=upload_limit_mb(),
        help=_(
            "A checkpoint downloaded from this page (float32 weights). Its task and architecture fill in the "
            "settings; a checkpoint of another task switches the page to that task. Pickled PyTorch files "
            "(.pt, .pth) are refused because they can run code."
        ),
    )
