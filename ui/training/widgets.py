"""Live Training page: the settings widgets — the task menu, the model and training settings, configuration B.

Every widget here is created without ``value=``/``index=`` and keyed by a constant of
:mod:`ui.training.controls`, which puts each value into session state before they are drawn: session state is
the single source of a widget's value. The choices offered are the ones that module keeps the values within.
"""

from __future__ import annotations

import streamlit as st

from explorer.host import limits
from explorer.i18n import _
from explorer.lab.block_compare import BLOCKS
from transformer_core import available_devices, divisors
from transformer_core.config import NORM_POSITIONS
from transformer_core.families import family
from transformer_core.positional import get as positional_kind
from transformer_core.tasks import Task, task_names
from ui.common.theme import wrapping_columns
from ui.training import text
from ui.training.controls import (
    B_HEADS,
    B_LAYERS,
    B_NORM,
    B_POSITIONAL,
    BATCH,
    BLOCK,
    COMPARE,
    D_FF,
    D_MODEL,
    DEVICE,
    DROPOUT,
    HEADS,
    KV_HEADS,
    LAYERS,
    LR,
    LRS,
    NORM,
    POSITIONAL,
    POSITIONALS,
    SEED,
    STEPS,
    TASK,
    batch_choices,
    choose_task,
    d_ff_choices,
    d_model_choices,
    head_options,
    llama_block,
    load_task,
    setting,
)
from ui.training.task_labels import known, task_description, task_title


def pos_title(kind: str) -> str:
    """Menu label of a positional encoding."""
    return known(positional_kind(kind).title)


def norm_title(position: str) -> str:
    """Menu label of a norm placement ("pre-norm")."""
    return {"pre": _("pre-norm"), "post": _("post-norm")}.get(position, f"{position}-norm")


def on_task_change() -> None:
    """A new task brings its own recommended model and run."""
    choose_task(st.session_state[TASK])


def on_compare_change() -> None:
    """Comparing starts from configuration A with the positional encoding switched off (or on); where B has no
    positional encoding of its own to change (a Vision Transformer, a Llama block), with one layer fewer (or more)."""
    state = st.session_state
    if state[COMPARE]:
        layers = setting(LAYERS)
        state[B_LAYERS] = layers
        state[B_HEADS] = setting(HEADS)
        state[B_NORM] = setting(NORM)
        state[B_POSITIONAL] = "none" if setting(POSITIONAL) != "none" else "sinusoidal"
        if not _b_has_positions(load_task(setting(TASK))):
            state[B_LAYERS] = layers - 1 if layers > 1 else min(2, limits().max_layers)


def _b_has_positions(task: Task) -> bool:
    """Whether configuration B chooses its own positional encoding and norm (not a ViT's, not a Llama block's)."""
    return not (family(task.family).reads_images or llama_block(task.family))


def b_same_as_a(task: Task) -> bool:
    """Whether configuration B, as its widgets stand, is configuration A: the two lanes would train alike."""
    state = st.session_state
    same = state[B_LAYERS] == state[LAYERS] and state[B_HEADS] == state[HEADS]
    if _b_has_positions(task):
        same = same and state[B_POSITIONAL] == state[POSITIONAL] and state[B_NORM] == state[NORM]
    return same


def task_picker() -> Task:
    """The task menu with the task's description beside it."""
    c_task, c_text = st.columns([1, 2], vertical_alignment="center")
    c_task.selectbox(
        _("Task"),
        task_names(),
        key=TASK,
        format_func=lambda n: task_title(load_task(n)),
        on_change=on_task_change,
        help=_("What the model learns. Each task needs its own attention pattern; watch it appear."),
    )
    task = load_task(st.session_state[TASK])
    c_text.caption(_(text.OWN_DESCRIPTION) if text.own_text_selected(task.name) else task_description(task))
    return task


def settings_panel(task: Task) -> None:
    """Architecture and training settings: six narrow columns of two controls each (three to a row, two on a
    phone, in a narrow column)."""
    c1, c2, c3, c4, c5, c6 = wrapping_columns(6, key="training-settings")
    c1.select_slider(
        _("Layers"),
        list(range(1, limits().max_layers + 1)),
        key=LAYERS,
        help=_("Blocks stacked on top of each other (the encoder and the decoder each get this many)."),
    )
    c1.selectbox(
        _("Heads"),
        head_options(st.session_state[D_MODEL], "rope" if llama_block(task.family) else st.session_state[POSITIONAL]),
        key=HEADS,
        help=_(
            "Attention heads per layer; each gets d_model / heads numbers and can learn its own "
            "pattern. Only counts that divide d_model are offered."
        ),
    )
    c2.selectbox(
        "d_model",
        d_model_choices(),
        key=D_MODEL,
        help=_("Width of every token vector. Wider models can learn more but train slower."),
    )
    c2.selectbox(
        "d_ff",
        d_ff_choices(),
        key=D_FF,
        help=_("Hidden width of the feed-forward network after each attention (often 4 × d_model)."),
    )
    if family(task.family).decoder_only:
        c3.selectbox(
            _("Block"),
            list(BLOCKS),
            key=BLOCK,
            format_func=lambda b: known(BLOCKS[b]),
            help=_(
                "GPT-2's block (LayerNorm, a GELU/ReLU MLP, the positions chosen below) or a Llama "
                "block as in Llama, Qwen and SmolLM: RMSNorm, a SwiGLU feed-forward of width d_ff, "
                "rotary positions, no biases, and query heads sharing K/V heads."
            ),
        )
    if llama_block(task.family):
        c3.selectbox(
            _("K/V heads"),
            divisors(st.session_state[HEADS]),
            key=KV_HEADS,
            help=_(
                "Key/value heads the query heads share (grouped-query attention): as many as the heads "
                "gives each head its own; 1 is multi-query attention. Fewer make the KV cache smaller."
            ),
        )
    elif family(task.family).reads_images:
        c3.caption(_("The Vision Transformer always uses learned position embeddings and pre-norm blocks."))
    else:
        c3.selectbox(
            _("Positional encoding"),
            POSITIONALS,
            key=POSITIONAL,
            format_func=pos_title,
            help=_(
                "How the model knows token order. With 'none', attention cannot tell positions "
                "apart, so reversing becomes impossible."
            ),
        )
        c3.selectbox(
            _("Norm placement"),
            NORM_POSITIONS,
            key=NORM,
            format_func=norm_title,
            help=_(
                "Pre-norm puts LayerNorm before each sub-layer (trains stably); post-norm after the "
                "residual add, as in the 2017 paper (may need a lower learning rate)."
            ),
        )
    c4.slider(
        _("Dropout"),
        0.0,
        0.5,
        step=0.05,
        key=DROPOUT,
        help=_("Randomly zeroes this fraction of attention weights and activations while training."),
    )
    c4.select_slider(
        _("Learning rate"),
        LRS,
        key=LR,
        format_func=lambda v: f"{v:g}",
        help=_("Size of each update. Too high and the loss jumps around or becomes NaN."),
    )
    c5.select_slider(
        _("Batch size"),
        batch_choices(),
        key=BATCH,
        help=_("Examples per step. Larger batches give smoother curves but slower steps."),
    )
    c5.number_input(
        _("Steps"), 10, limits().max_steps, step=50, key=STEPS, help=_("Optimisation steps in the whole run.")
    )
    c6.number_input(
        _("Seed"),
        0,
        2**31 - 1,
        step=1,
        key=SEED,
        help=_("Fixes the initial weights and the training data: the same seed gives the same run."),
    )
    devices = available_devices()
    c6.selectbox(
        _("Device"),
        devices,
        key=DEVICE,
        disabled=len(devices) == 1,
        help=_("Where the model trains. Only devices found on this server are offered."),
    )


def compare_panel(task: Task) -> None:
    """The Compare switch and, when on, what configuration B changes."""
    st.toggle(
        _("Compare two configurations"),
        key=COMPARE,
        on_change=on_compare_change,
        help=_("Train a second configuration B on the same task, data and seed, side by side with A."),
    )
    if not st.session_state[COMPARE]:
        return
    c0, c1, c2, c3, c4 = wrapping_columns([2, 1, 1, 1, 1], key="training-compare", vertical_alignment="center")
    c0.caption(_("Configuration **B** shares A's width, learning rate, batch, steps and seed. Choose what differs:"))
    c1.select_slider(
        _("B · layers"), list(range(1, limits().max_layers + 1)), key=B_LAYERS, help=_("Layers of configuration B.")
    )
    llama = llama_block(task.family)
    c2.selectbox(
        _("B · heads"),
        head_options(st.session_state[D_MODEL], "rope" if llama else st.session_state[B_POSITIONAL]),
        key=B_HEADS,
        help=_("Heads of configuration B (e.g. 1 head against A's 4)."),
    )
    if llama:
        c3.caption(
            _(
                "B keeps A's Llama block (rotary positions, RMSNorm before each sub-layer) and A's K/V heads "
                "when they divide B's heads."
            )
        )
    elif _b_has_positions(task):
        c3.selectbox(
            _("B · positional encoding"),
            POSITIONALS,
            key=B_POSITIONAL,
            format_func=pos_title,
            help=_("Positional encoding of configuration B (e.g. none against A's sinusoidal)."),
        )
        c4.selectbox(
            _("B · norm"),
            NORM_POSITIONS,
            key=B_NORM,
            format_func=norm_title,
            help=_("Norm placement of configuration B."),
        )
    if b_same_as_a(task):
        st.info(_("Configuration B is the same as A: the two lanes would train alike. Change what B should try."),
                icon="⚖️")
