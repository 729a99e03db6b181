"""The steps of the lesson "Which head does the work?": switch heads of the trained reverse model off.

The model is the training lessons' reverse run, trained here with its model kept (the other lessons keep only
plain-data summaries); it lives in this session's state. Measuring is done by :mod:`explorer.lessons.head_importance`.
"""

from __future__ import annotations

import streamlit as st

from explorer.i18n import N_, _, num, percent
from explorer.lessons.head_importance import findings, head_lesson_probe
from explorer.runs.frame import LaneFrame, RunFrame
from explorer.runs.heads_off import HeadProbe, head_label, refs_from_keys
from transformer_core.snapshots import take_snapshot
from ui.common import charts
from ui.common.chart_style import vega_locale
from ui.common.head_switches import head_switches
from ui.common.theme import projector
from ui.lessons import training as lesson_training
from ui.lessons.frame import key_of, model_steps
from ui.lessons.lesson import Lesson
from ui.training.head_scores import scores_chart, scores_height, scores_of_kind
from ui.training.heatmaps import COLUMN_PX, attention_picture
from ui.training.interventions import (
    delta_style,
    importance_caption,
    importance_spec,
    pattern_spec,
    points_text,
    signed,
)
from ui.training.samples import samples_html

LOOK_SHARES = (3, 2)  # the heatmap grid beside the anti-diagonal scores students bet on
SMALL_GAP_PX = 16  # st.columns' default gap between them
PROBE = "lessons.head_probe"  # HeadProbe: this session's trained reverse model, with (run seed, probe)
TITLES = {
    "encoder": N_("Encoder self-attention"),
    "decoder": N_("Decoder self-attention"),
    "cross": N_("Cross-attention"),
}


def _train(seed: int) -> None:
    bar = st.progress(0.0, text=_("Starting…"))

    def progress(_label: str, step: int, steps: int) -> None:
        if step % 5 == 0 or step == steps:
            bar.progress(
                step / steps, text=_("Reverse model: step {step} of {steps}").format(step=num(step), steps=num(steps))
            )

    probe = head_lesson_probe(steps=lesson_training.lesson_steps(), seed=seed, progress=progress)
    st.session_state[PROBE] = (seed, probe)
    bar.empty()


def _probe(lesson: Lesson) -> HeadProbe | None:
    """The trained model of this session's seed, after a button press trains it."""
    seed = st.session_state.get(lesson_training.RUN_SEED, 0)
    kept = st.session_state.get(PROBE)
    if kept is not None and kept[0] == seed:
        probe = kept[1]
        st.caption(
            _("Trained for {steps} steps; {share} of 512 new sequences reversed exactly with every head on.").format(
                steps=num(probe.step), share=percent(probe.outcome().metrics["accuracy"])
            )
        )
        return probe
    if st.button(
        _("Train the reverse model ({steps} steps)").format(steps=num(lesson_training.lesson_steps())),
        key=key_of(lesson, "train"),
        type="primary",
        help=_(
            "Trains the lessons' small reverse model on this server and keeps it, so "
            "its heads can be switched off; a progress bar shows how far it is."
        ),
    ):
        _train(seed)
        st.rerun()
    return None


def _look_first(lesson: Lesson, probe: HeadProbe) -> None:
    """What students bet on: every cross-attention head's heatmap and how anti-diagonal each one is, on screen
    above the switches."""
    snap = take_snapshot(probe.task, probe.model, probe.task.attention_example(), probe.step)
    frame = RunFrame(probe.task, (LaneFrame("A", (), (snap,), (), None, probe.step, probe.step, True),), "done")
    st.markdown(
        _(
            "**Look before you bet.** The cross-attention of the trained model (step {step}) on one "
            "sequence, and how anti-diagonal each head is: the higher the score, the clearer its pattern."
        ).format(step=num(probe.step))
    )
    left, right = st.columns(LOOK_SHARES, vertical_alignment="center")
    with left:
        room = (COLUMN_PX - SMALL_GAP_PX) * LOOK_SHARES[0] // sum(LOOK_SHARES)
        html, _size = attention_picture(frame, 0, snap, "cross", room=room)
        st.html(html)
    scored = scores_of_kind(snap, "cross")
    if scored is not None:
        data, spec = scores_chart(snap, scored, _("cross-attention"))
        right.vega_lite_chart(
            data, vega_locale(spec), width="stretch", height=scores_height(snap, spec), key=key_of(lesson, "bet")
        )


def _switch_visual(lesson: Lesson, probe: HeadProbe) -> None:
    _look_first(lesson, probe)
    key = key_of(lesson, "off")
    off = probe.known(refs_from_keys(st.session_state.get(key) or ()))
    st.caption(_("A highlighted head is off; click it again to switch it back on."))
    head_switches(probe.heads, off, key=key, titles={stack: _(title) for stack, title in TITLES.items()})
    base, now = probe.outcome(), probe.outcome(off)
    left, right = st.columns(2)
    left.metric(
        _("Reversed exactly · every head on"),
        percent(base.metrics["accuracy"], 1),
        help=_("Exact-match accuracy on 512 new sequences with every head working."),
    )
    if not now.heads:
        right.caption(_("Click the head you think the model cannot do without."))
        return
    change = 100 * (now.metrics["accuracy"] - base.metrics["accuracy"])
    right.metric(
        _("Reversed exactly · {heads} off").format(heads=", ".join(head_label(h) for h in now.heads)),
        percent(now.metrics["accuracy"], 1),
        delta=_("{change} points").format(change=signed(change, 1)),
        **delta_style("accuracy", base.metrics["accuracy"], now.metrics["accuracy"], True),
        help=_("The same 512 sequences with the chosen heads switched off."),
    )
    if not projector():
        st.html(samples_html(now.samples, probe.task.family, _("With those heads off")))


def _importance_visual(lesson: Lesson, probe: HeadProbe) -> None:
    if probe.measured_importance is None:
        picked = bool(st.session_state.get(key_of(lesson, "off")))
        if not picked:
            st.caption(_("Switch off the head you bet on in step 2 first: then measure them all."))
        if st.button(
            _("📊 Measure every head"),
            key=key_of(lesson, "measure"),
            type="primary",
            disabled=not picked,
            help=_("Switches each of the 24 heads off alone and measures the accuracy each time."),
        ):
            with st.spinner(_("Switching 24 heads off one at a time…")):
                probe.importance()
            st.rerun()
        return
    importance = probe.importance()
    left, right = st.columns(2)
    with left:
        charts.show(
            charts.spec_figure(importance_spec(importance, probe.task, probe.step), x_title=_("head"), numbers=True,
                               title_chars=charts.half_title_chars()),
            key=key_of(lesson, "map"),
        )
    with right:
        spec = pattern_spec(probe.pattern_scores(), probe.step)
        if spec is not None:
            charts.show(charts.spec_figure(spec, x_title=_("head"), numbers=True,
                                           title_chars=charts.half_title_chars()), key=key_of(lesson, "scores"))
    found = findings(probe)
    found_text = _(
        "The clearest anti-diagonal is **{head}** (score {score}); off alone it costs {cost}. The four "
        "cross-attention heads of layer 1 cost {one_at_a_time} one at a time, and {together} switched off together."
    ).format(
        head=head_label(found.clearest),
        score=num(found.clearest_score, 2),
        cost=points_text(found.clearest_cost),
        one_at_a_time=points_text(found.first_layer_sum),
        together=points_text(found.first_layer_cost),
    )
    st.caption(f"{importance_caption(importance)} {found_text}")


def importance_steps(lesson: Lesson) -> None:
    """The three steps of "Which head does the work?"."""
    model_steps(lesson, _probe, _switch_visual, _importance_visual)
