"""The steps of the lesson "Which head does the work?": switch heads of the trained reverse model off.

The model is the training lessons' reverse run, trained here with its model kept (the other lessons keep only
plain-data summaries); it lives in this session's state. Measuring is done by :mod:`explorer.lessons.head_importance`.
"""

from __future__ import annotations

import streamlit as st

from explorer.lessons.head_importance import findings, head_lesson_probe
from explorer.runs.frame import LaneFrame, RunFrame
from explorer.runs.heads_off import HeadProbe, head_label, refs_from_keys
from transformer_core.training import take_snapshot
from ui.common import charts
from ui.common.head_switches import head_switches
from ui.common.theme import projector
from ui.lessons import training as lesson_training
from ui.lessons.frame import key_of, model_steps
from ui.lessons.texts import Lesson
from ui.training.heatmaps import attention_picture, scores_chart, scores_height, scores_of_kind
from ui.training.interventions import importance_caption, importance_spec, pattern_spec, points_text
from ui.training.samples import samples_html

PROBE = "lessons.head_probe"  # HeadProbe: this session's trained reverse model, with (run seed, probe)
TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}


def _train(seed: int) -> None:
    bar = st.progress(0.0, text="Starting…")

    def progress(_label: str, step: int, steps: int) -> None:
        if step % 5 == 0 or step == steps:
            bar.progress(step / steps, text=f"Reverse model: step {step} of {steps}")

    probe = head_lesson_probe(steps=lesson_training.lesson_steps(), seed=seed, progress=progress)
    st.session_state[PROBE] = (seed, probe)
    bar.empty()


def _probe(lesson: Lesson) -> HeadProbe | None:
    """The trained model of this session's seed, after a button press trains it."""
    seed = st.session_state.get(lesson_training.RUN_SEED, 0)
    kept = st.session_state.get(PROBE)
    if kept is not None and kept[0] == seed:
        probe = kept[1]
        st.caption(f"Trained for {probe.step} steps; {probe.outcome().metrics['accuracy']:.0%} of 512 new "
                   "sequences reversed exactly with every head on.")
        return probe
    if st.button(f"Train the reverse model ({lesson_training.lesson_steps()} steps)", key=key_of(lesson, "train"),
                 type="primary", help="Trains the lessons' small reverse model on this server and keeps it, so "
                                      "its heads can be switched off; a progress bar shows how far it is."):
        _train(seed)
        st.rerun()
    return None


def _look_first(lesson: Lesson, probe: HeadProbe) -> None:
    """What students bet on: every cross-attention head's heatmap and how anti-diagonal each one is, on screen
    above the switches."""
    snap = take_snapshot(probe.task, probe.model, probe.task.attention_example(), probe.step)
    frame = RunFrame(probe.task, (LaneFrame("A", (), (snap,), (), None, probe.step, probe.step, True),), "done")
    st.markdown(f"**Look before you bet.** The cross-attention of the trained model (step {probe.step}) on one "
                "sequence, and how anti-diagonal each head is: the higher the score, the clearer its pattern.")
    left, right = st.columns([3, 2], vertical_alignment="center")
    with left:
        html, _ = attention_picture(frame, 0, snap, "cross")
        st.html(html)
    scored = scores_of_kind(snap, "cross")
    if scored is not None:
        data, spec = scores_chart(snap, scored, "cross-attention")
        right.vega_lite_chart(data, spec, width="stretch", height=scores_height(snap, spec), key=key_of(lesson, "bet"))


def _switch_visual(lesson: Lesson, probe: HeadProbe) -> None:
    _look_first(lesson, probe)
    key = key_of(lesson, "off")
    off = probe.known(refs_from_keys(st.session_state.get(key) or ()))
    st.caption("A highlighted head is off; click it again to switch it back on.")
    head_switches(probe.heads, off, key=key, titles=TITLES)
    base, now = probe.outcome(), probe.outcome(off)
    left, right = st.columns(2)
    left.metric("Reversed exactly · every head on", f"{base.metrics['accuracy']:.1%}",
                help="Exact-match accuracy on 512 new sequences with every head working.")
    if not now.heads:
        right.caption("Click the head you think the model cannot do without.")
        return
    change = 100 * (now.metrics["accuracy"] - base.metrics["accuracy"])
    right.metric(f"Reversed exactly · {', '.join(head_label(h) for h in now.heads)} off",
                 f"{now.metrics['accuracy']:.1%}", delta=f"{change:+.1f} points",
                 help="The same 512 sequences with the chosen heads switched off.")
    if not projector():
        st.html(samples_html(now.samples, probe.task.family, "With those heads off"))


def _importance_visual(lesson: Lesson, probe: HeadProbe) -> None:
    if probe.measured_importance is None:
        picked = bool(st.session_state.get(key_of(lesson, "off")))
        if not picked:
            st.caption("Switch off the head you bet on in step 2 first: then measure them all.")
        if st.button("📊 Measure every head", key=key_of(lesson, "measure"), type="primary", disabled=not picked,
                     help="Switches each of the 24 heads off alone and measures the accuracy each time."):
            with st.spinner("Switching 24 heads off one at a time…"):
                probe.importance()
            st.rerun()
        return
    importance = probe.importance()
    left, right = st.columns(2)
    with left:
        charts.show(charts.spec_figure(importance_spec(importance, probe.task, probe.step), x_title="head",
                                       numbers=True), key=key_of(lesson, "map"))
    with right:
        spec = pattern_spec(probe.pattern_scores(), probe.step)
        if spec is not None:
            charts.show(charts.spec_figure(spec, x_title="head", numbers=True), key=key_of(lesson, "scores"))
    found = findings(probe)
    st.caption(f"{importance_caption(importance)} The clearest anti-diagonal is **{head_label(found.clearest)}** "
               f"(score {found.clearest_score:.2f}); off alone it costs {points_text(found.clearest_cost)}. The "
               f"four cross-attention heads of layer 1 cost {points_text(found.first_layer_sum)} one at a time, "
               f"and {points_text(found.first_layer_cost)} switched off together.")


def importance_steps(lesson: Lesson) -> None:
    """The three steps of "Which head does the work?"."""
    model_steps(lesson, _probe, _switch_visual, _importance_visual)
