"""The steps of the two lessons that train models: "Why positional encoding matters" and "Many heads, one pattern".

Both use the same runs of the reverse task (with and without positional encoding). Training happens only when
the student presses a button, in a live view like Live Training's first screen; the plain-data results live in
this session's state only.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.host import limits
from explorer.lab.positional import shuffle_test
from explorer.lessons.experiments import REVERSE_STEPS, REVERSE_VARIANTS, VariantRun, output_labels
from ui.common import charts
from ui.common.theme import projector
from ui.lessons import live_runs
from ui.lessons.frame import key_of, model_steps, step_intro
from ui.lessons.texts import Lesson

RUNS = "lessons.runs"  # dict label -> VariantRun: this session's reverse-task runs, shared by two lessons
RUN_SEED = "lessons.run_seed"  # int: seed of those runs; "train again" moves to the next seed
VARIANTS = REVERSE_VARIANTS
ROW_TITLE = "digit written"  # cross-attention rows are named by the digit each output position writes
VARIANT_TITLES = {"sinusoidal": "With sinusoidal encoding", "none": "Without positional encoding"}
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
        col.metric(VARIANT_TITLES[kind], "≈ 0" if same else f"{diffs[kind]:.2g}",
                   help="Largest difference between the outputs for the reversed input and the reversed "
                        "outputs for the original input. 0 means: the same vectors, merely reordered.")
        col.caption("→ the same vectors, reordered" if same else "→ different vectors: the order matters")


def lesson_steps() -> int:
    """Steps of the lessons' reverse runs on this server (its step limit may be lower)."""
    return min(REVERSE_STEPS, limits().max_steps)


def _train(labels: list[str]) -> bool:
    """Train (or replay) the missing variants in a live view and keep their summaries in the session; returns
    whether they trained (not when this browser already holds its limit of runs: the page says so)."""
    runs = live_runs.train(labels, steps=lesson_steps(), seed=st.session_state.get(RUN_SEED, 0),
                           titles=VARIANT_TITLES)
    if runs is None:
        return False
    st.session_state.setdefault(RUNS, {}).update(runs)
    return True


def _train_button(lesson: Lesson, labels: list[str], text: str) -> dict[str, VariantRun]:
    runs = st.session_state.get(RUNS, {})
    missing = [k for k in labels if k not in runs]
    live_runs.share_toggle(missing, st.session_state.get(RUN_SEED, 0), lesson_steps())
    if missing:
        pressed = st.button(text, key=key_of(lesson, "train"), type="primary",
                            help=f"Trains {len(missing)} small model{'s' if len(missing) > 1 else ''} for "
                                 f"{lesson_steps()} steps on this server; the view below shows it learn.")
        if pressed and _train(missing):
            st.rerun()
        elif not pressed:  # the untrained model, the "before" the class watches change
            live_runs.untrained_view(missing, st.session_state.get(RUN_SEED, 0), lesson_steps())
    elif not projector() and st.button("Train again with another seed", key=key_of(lesson, "retrain"),
                                          help="New initial weights and batches; the results stay similar."):
        st.session_state[RUN_SEED] = st.session_state.get(RUN_SEED, 0) + 1
        st.session_state[RUNS] = {}
        if _train(list(VARIANTS)):
            st.rerun()
    return {k: runs[k] for k in labels if k in runs}


def _comparison_visual(lesson: Lesson) -> None:
    runs = _train_button(lesson, list(VARIANTS), f"Train both models ({lesson_steps()} steps each)")
    if len(runs) < len(VARIANTS):
        return
    cols = st.columns(len(runs))
    for col, (label, run) in zip(cols, runs.items(), strict=True):
        col.metric(VARIANT_TITLES[label], f"{run.final_metric:.0%} reversed exactly",
                   help=f"Exact-match accuracy on 512 new sequences after {run.steps[-1]} steps "
                        f"({run.seconds:.1f} s of training).")
    left, right = st.columns(2)
    accuracy = {VARIANT_TITLES[k]: (r.steps, r.metric) for k, r in runs.items()}
    with left:
        fig = charts.line_chart(accuracy, title="Sequences reversed exactly", x_title="training step",
                                y_title="accuracy", height=400)
        charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "curve"))
    loss = {VARIANT_TITLES[k]: (list(range(1, len(r.losses) + 1)), r.losses) for k, r in runs.items()}
    with right:
        fig = charts.line_chart(loss, title="Training loss", x_title="training step", y_title="cross-entropy",
                                log_y=True, height=400)
        charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "loss"))


def _cross_attention_visual(lesson: Lesson) -> None:
    runs = {k: r for k, r in st.session_state.get(RUNS, {}).items() if k in VARIANTS}
    if len(runs) < len(VARIANTS):
        st.caption("Train both models in step 2 to see their attention.")
        return
    cols = st.columns(len(runs))
    for col, (label, run) in zip(cols, runs.items(), strict=True):
        rows, columns = _cross_labels(run)
        z = run.snapshots[-1]["cross"][-1].astype(float).mean(axis=0)  # (L, H, T, S) -> (T, S)
        fig = charts.heatmap(z, columns, rows, title=VARIANT_TITLES[label], x_title="input digit (read)",
                             y_title=ROW_TITLE, zmin=0.0, zmax=1.0, hover_name="weight")
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
    runs = _train_button(lesson, ["sinusoidal"], f"Train the reverse model ({lesson_steps()} steps)")
    if not runs:
        return None
    run = runs["sinusoidal"]
    st.caption(f"Trained for {run.steps[-1]} steps in {run.seconds:.1f} s; "
               f"{run.final_metric:.0%} of new sequences reversed exactly.")
    return run


def _heads_grid_visual(lesson: Lesson, run: VariantRun) -> None:
    step = st.select_slider("Training step", run.snapshot_steps, value=run.snapshot_steps[0],
                            key=key_of(lesson, "step"),
                            help="Attention on one fixed example, recorded at these steps during training.")
    cross = run.snapshots[run.snapshot_steps.index(step)]["cross"].astype(float)  # (L, H, T, S)
    layers, heads = cross.shape[:2]
    grid = [[cross[layer, head] for head in range(heads)] for layer in range(layers)]
    rows, columns = _cross_labels(run)
    fig = charts.heatmap_grid(grid, row_titles=[f"layer {i + 1}" for i in range(layers)],
                              col_titles=[f"head {i + 1}" for i in range(heads)], x=columns, y=rows,
                              x_title="input digit", y_title=ROW_TITLE,
                              title=f"Cross-attention of every head at step {step}")
    charts.show(fig, key=key_of(lesson, "grid"))


def _heads_score_visual(lesson: Lesson, run: VariantRun) -> None:
    pattern = next(iter(run.scores[0]))
    scores = np.stack([s[pattern] for s in run.scores])  # (snapshots, L, H)
    series = {f"layer {layer + 1} head {head + 1}": (run.snapshot_steps, scores[:, layer, head])
              for layer in range(scores.shape[1]) for head in range(scores.shape[2])}
    fig = charts.line_chart(series, title="Anti-diagonal score of each head", x_title="training step",
                            y_title="pattern score", height=380)
    fig.for_each_trace(lambda t: t.update(line_dash="dash") if t.name.startswith("layer 2") else None)
    charts.show(charts.move_legend(fig, "right"), key=key_of(lesson, "scores"))
    best = np.unravel_index(int(np.argmax(scores[-1])), scores[-1].shape)
    st.caption(f"Highest at the end: layer {best[0] + 1}, head {best[1] + 1} "
               f"({scores[-1][best]:.2f}); the lowest head scores {scores[-1].min():.2f}.")


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
