"""The steps of the two lessons that train models: "Why positional encoding matters" and "Many heads, one pattern".

Both use the same runs of the reverse task (with and without positional encoding). Training happens only when
the student presses a button, in a live view like Live Training's first screen; the plain-data results live in
this session's state only.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.host import limits
from explorer.i18n import N_, _, ngettext, num, percent
from explorer.lab.positional import shuffle_test
from explorer.lessons.experiments import REVERSE_STEPS, REVERSE_VARIANTS, VariantRun, output_labels
from ui.common import charts
from ui.common.theme import projector
from ui.lessons import live_runs
from ui.lessons.frame import key_of, model_steps, step_intro
from ui.lessons.lesson import Lesson

RUNS = "lessons.runs"  # dict label -> VariantRun: this session's reverse-task runs, shared by two lessons
RUN_SEED = "lessons.run_seed"  # int: seed of those runs; "train again" moves to the next seed
VARIANTS = REVERSE_VARIANTS
ROW_TITLE = N_("digit written")  # cross-attention rows are named by the digit each output position writes
VARIANT_TITLES = {"sinusoidal": N_("With sinusoidal encoding"), "none": N_("Without positional encoding")}
SHUFFLE_DIGITS = (3, 1, 4, 1, 5, 9, 2, 6)


# Why positional encoding matters


@st.cache_data(show_spinner=False)
def _shuffle_differences() -> dict[str, float]:
    ids = [d + 1 for d in SHUFFLE_DIGITS]
    perm = list(reversed(range(len(ids))))
    return {kind: shuffle_test(ids, perm, positional=kind).max_diff for kind in VARIANTS}


def _shuffle_visual() -> None:
    diffs = _shuffle_differences()
    cols = st.columns(2)
    for col, kind in zip(cols, VARIANTS, strict=True):
        same = diffs[kind] < 1e-4
        col.metric(
            _(VARIANT_TITLES[kind]),
            "≈ 0" if same else num(float(f"{diffs[kind]:.2g}")),
            help=_(
                "Largest difference between the outputs for the reversed input and the reversed "
                "outputs for the original input. 0 means: the same vectors, merely reordered."
            ),
        )
        col.caption(_("→ the same vectors, reordered") if same else _("→ different vectors: the order matters"))


def lesson_steps() -> int:
    """Steps of the lessons' reverse runs on this server (its step limit may be lower)."""
    return min(REVERSE_STEPS, limits().max_steps)


def _train(labels: list[str]) -> bool:
    """Train (or replay) the missing variants in a live view and keep their summaries in the session; returns
    whether they trained (not when this browser already holds its limit of runs: the page says so)."""
    runs = live_runs.train(labels, steps=lesson_steps(), seed=st.session_state.get(RUN_SEED, 0), titles=VARIANT_TITLES)
    if runs is None:
        return False
    st.session_state.setdefault(RUNS, {}).update(runs)
    return True


def _train_button(lesson: Lesson, labels: list[str], text: str) -> dict[str, VariantRun]:
    runs = st.session_state.get(RUNS, {})
    missing = [k for k in labels if k not in runs]
    live_runs.share_toggle(missing, st.session_state.get(RUN_SEED, 0), lesson_steps())
    if missing:
        pressed = st.button(
            text,
            key=key_of(lesson, "train"),
            type="primary",
            help=ngettext(
                "Trains {n} small model for {steps} steps on this server; the view below shows it learn.",
                "Trains {n} small models for {steps} steps on this server; the view below shows them learn.",
                len(missing),
            ).format(n=num(len(missing)), steps=num(lesson_steps())),
        )
        if pressed and _train(missing):
            st.rerun()
        elif not pressed:  # the untrained model, the "before" the class watches change
            live_runs.untrained_view(missing, st.session_state.get(RUN_SEED, 0), lesson_steps())
    elif not projector() and st.button(
        _("Train again with another seed"),
        key=key_of(lesson, "retrain"),
        help=_("New initial weights and batches; the results stay similar."),
    ):
        st.session_state[RUN_SEED] = st.session_state.get(RUN_SEED, 0) + 1
        st.session_state[RUNS] = {}
        if _train(list(VARIANTS)):
            st.rerun()
    return {k: runs[k] for k in labels if k in runs}


def _comparison_visual(lesson: Lesson) -> None:
    runs = _train_button(
        lesson, list(VARIANTS), _("Train both models ({steps} steps each)").format(steps=num(lesson_steps()))
    )
    if len(runs) < len(VARIANTS):
        return
    cols = st.columns(len(runs))
    for col, (label, run) in zip(cols, runs.items(), strict=True):
        col.metric(
            _(VARIANT_TITLES[label]),
            _("{share} reversed exactly").format(share=percent(run.final_metric)),
            help=_("Exact-match accuracy on 512 new sequences after {steps} steps ({seconds} s of training).").format(
                steps=num(run.steps[-1]), seconds=num(run.seconds, 1)
            ),
        )
    left, right = st.columns(2)
    accuracy = {_(VARIANT_TITLES[k]): (r.steps, r.metric) for k, r in runs.items()}
    with left:
        fig = charts.line_chart(
            accuracy,
            title=_("Sequences reversed exactly"),
            x_title=_("training step"),
            y_title=_("accuracy"),
            height=400,
        )
        charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "curve"))
    loss = {_(VARIANT_TITLES[k]): (list(range(1, len(r.losses) + 1)), r.losses) for k, r in runs.items()}
    with right:
        fig = charts.line_chart(
            loss,
            title=_("Training loss"),
            x_title=_("training step"),
            y_title=_("cross-entropy"),
            log_y=True,
            height=400,
        )
        charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "loss"))


def _cross_attention_visual(lesson: Lesson) -> None:
    runs = {k: r for k, r in st.session_state.get(RUNS, {}).items() if k in VARIANTS}
    if len(runs) < len(VARIANTS):
        st.caption(_("Train both models in step 2 to see their attention."))
        return
    cols = st.columns(len(runs))
    for col, (label, run) in zip(cols, runs.items(), strict=True):
        rows, columns = _cross_labels(run)
        z = run.snapshots[-1]["cross"][-1].astype(float).mean(axis=0)  # (L, H, T, S) -> (T, S)
        fig = charts.heatmap(
            z,
            columns,
            rows,
            title=_(VARIANT_TITLES[label]),
            x_title=_("input digit (read)"),
            y_title=_(ROW_TITLE),
            zmin=0.0,
            zmax=1.0,
            hover_name=_("weight"),
        )
        fig.update_xaxes(dtick=1)
        fig.update_yaxes(dtick=1)  # every token label, also with projector mode's larger font
        with col:
            charts.show(fig, key=key_of(lesson, f"cross.{label}"))


def _cross_labels(run: VariantRun) -> tuple[list[str] | None, list[str] | None]:
    """Rows named by the digit each output position writes, columns by the input digits."""
    rows, columns = run.labels.get("cross", (None, None))
    return (output_labels(rows) if rows else None), columns


# Many heads, one pattern


def _heads_train_visual(lesson: Lesson) -> VariantRun | None:
    runs = _train_button(
        lesson, ["sinusoidal"], _("Train the reverse model ({steps} steps)").format(steps=num(lesson_steps()))
    )
    if not runs:
        return None
    run = runs["sinusoidal"]
    st.caption(
        _("Trained for {steps} steps in {seconds} s; {share} of new sequences reversed exactly.").format(
            steps=num(run.steps[-1]), seconds=num(run.seconds, 1), share=percent(run.final_metric)
        )
    )
    return run


def _heads_grid_visual(lesson: Lesson, run: VariantRun) -> None:
    step = st.select_slider(
        _("Training step"),
        run.snapshot_steps,
        value=run.snapshot_steps[0],
        key=key_of(lesson, "step"),
        help=_("Attention on one fixed example, recorded at these steps during training."),
    )
    cross = run.snapshots[run.snapshot_steps.index(step)]["cross"].astype(float)  # (L, H, T, S)
    layers, heads = cross.shape[:2]
    grid = [[cross[layer, head] for head in range(heads)] for layer in range(layers)]
    rows, columns = _cross_labels(run)
    fig = charts.heatmap_grid(
        grid,
        row_titles=[_("layer {n}").format(n=i + 1) for i in range(layers)],
        col_titles=[_("head {n}").format(n=i + 1) for i in range(heads)],
        x=columns,
        y=rows,
        x_title=_("input digit"),
        y_title=_(ROW_TITLE),
        title=_("Cross-attention of every head at step {step}").format(step=num(step)),
    )
    charts.show(fig, key=key_of(lesson, "grid"))


def _heads_score_visual(lesson: Lesson, run: VariantRun) -> None:
    pattern = next(iter(run.scores[0]))
    scores = np.stack([s[pattern] for s in run.scores])  # (snapshots, L, H)
    names = {
        (layer, head): _("layer {layer} head {head}").format(layer=layer + 1, head=head + 1)
        for layer in range(scores.shape[1])
        for head in range(scores.shape[2])
    }
    series = {name: (run.snapshot_steps, scores[:, layer, head]) for (layer, head), name in names.items()}
    fig = charts.line_chart(
        series,
        title=_("Anti-diagonal score of each head"),
        x_title=_("training step"),
        y_title=_("pattern score"),
        height=380,
    )
    dashed = {name for (layer, _head), name in names.items() if layer == 1}  # the second layer's heads
    fig.for_each_trace(lambda t: t.update(line_dash="dash") if t.name in dashed else None)
    charts.show(charts.move_legend(fig, "right"), key=key_of(lesson, "scores"))
    best = np.unravel_index(int(np.argmax(scores[-1])), scores[-1].shape)
    st.caption(
        _("Highest at the end: layer {layer}, head {head} ({score}); the lowest head scores {lowest}.").format(
            layer=best[0] + 1, head=best[1] + 1, score=num(scores[-1][best], 2), lowest=num(scores[-1].min(), 2)
        )
    )


def positional_steps(lesson: Lesson) -> None:
    """The three steps of "Why positional encoding matters"."""
    step_intro(lesson, 1)
    _shuffle_visual()
    step_intro(lesson, 2)
    _comparison_visual(lesson)
    step_intro(lesson, 3)
    _cross_attention_visual(lesson)


def heads_steps(lesson: Lesson) -> None:
    """The three steps of "Many heads, one pattern"."""
    model_steps(lesson, _heads_train_visual, _heads_grid_visual, _heads_score_visual)
