"""Live Training page: the settings' session-state keys, their URL form and tuned values, kept valid.

Settings survive visits to other pages and projector mode (which hides them): their values are mirrored in
``SAVED`` and put back before the widgets (:mod:`ui.training.widgets`) are drawn, then settled into the choices
this server offers. The keys live here, in one module, because the widgets, the run they describe
(:mod:`ui.training.specs`), links, checkpoints and lessons all read and write them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from explorer.guard import FF_PER_WIDTH
from explorer.heads import MAX_HEADS, head_choices
from explorer.host import limits
from explorer.i18n import _, num
from explorer.lab.block_compare import BLOCKS
from transformer_core import available_devices, divisors
from transformer_core.config import NORM_POSITIONS, ViTConfig
from transformer_core.families import family
from transformer_core.positional import get as positional_kind
from transformer_core.positional import kinds as positional_kinds
from transformer_core.tasks import TASK_NAMES, Task, get_task, task_names
from transformer_core.training import default_train_config
from ui.common.urlstate import UrlParam, set_by_link, settle_choice
from ui.training import interventions, text
from ui.training.task_labels import known

PAGE = "training"  # the page's url path and its name for ui.common.urlstate
# Widget keys (also the URL settings, under the short names given in URL_PARAMS).
TASK, LAYERS, HEADS, D_MODEL, D_FF = "live.task", "live.layers", "live.heads", "live.d_model", "live.d_ff"
NORM, POSITIONAL, DROPOUT = "live.norm", "live.positional", "live.dropout"
LR, BATCH, STEPS, SEED, DEVICE = "live.lr", "live.batch", "live.steps", "live.seed", "live.device"
COMPARE, B_LAYERS, B_HEADS = "live.compare", "live.b_layers", "live.b_heads"
B_POSITIONAL, B_NORM = "live.b_positional", "live.b_norm"
BLOCK, KV_HEADS = "live.block", "live.kv_heads"  # decoder-only tasks: GPT-2's block or a Llama block, its K/V heads
# Other state of the page.
SESSION = "live.session"  # RunSession: this browser session's run and its rules (ui.training.run.session)
SAVED = "live.saved"  # dict key -> value: the settings as last drawn (restored after other pages)
DEFAULTS_FOR = "live.defaults_for"  # the task whose tuned settings the widgets were last given

D_MODELS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
D_FFS = (32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048)
LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0)
BATCHES = (8, 16, 32, 64, 128, 256)
POSITIONALS = positional_kinds()

URL_PARAMS = (
    UrlParam(TASK, TASK_NAMES[0], choices=TASK_NAMES, name="task"),
    UrlParam(LAYERS, 2, lo=1, hi=8, name="layers"),
    UrlParam(HEADS, 4, lo=1, hi=MAX_HEADS, name="heads"),
    UrlParam(D_MODEL, 64, choices=D_MODELS, name="d_model"),
    UrlParam(D_FF, 256, choices=D_FFS, name="d_ff"),
    UrlParam(NORM, "pre", choices=NORM_POSITIONS, name="norm"),
    UrlParam(BLOCK, "gpt", choices=tuple(BLOCKS), name="block"),
    UrlParam(KV_HEADS, 2, lo=1, hi=MAX_HEADS, name="kv_heads"),
    UrlParam(POSITIONAL, "sinusoidal", choices=POSITIONALS, name="positional"),
    UrlParam(DROPOUT, 0.0, lo=0.0, hi=0.5, name="dropout"),
    UrlParam(LR, 3e-3, choices=LRS, name="lr"),
    UrlParam(BATCH, 64, choices=BATCHES, name="batch"),
    UrlParam(STEPS, 300, lo=10, hi=100_000, name="steps"),
    UrlParam(SEED, 0, lo=0, hi=2**31 - 1, name="seed"),
    UrlParam(COMPARE, False, name="compare"),
    UrlParam(B_LAYERS, 2, lo=1, hi=8, name="b_layers"),
    UrlParam(B_HEADS, 4, lo=1, hi=MAX_HEADS, name="b_heads"),
    UrlParam(B_POSITIONAL, "none", choices=POSITIONALS, name="b_positional"),
    UrlParam(B_NORM, "pre", choices=NORM_POSITIONS, name="b_norm"),
    *text.URL_PARAMS,
    *interventions.URL_PARAMS,
)
DEFAULTS = {p.key: p.default for p in URL_PARAMS}
SESSION_DEFAULTS = {**DEFAULTS, **text.DEFAULTS}  # everything restored after other pages (the text: not in the URL)


@st.cache_resource(show_spinner=False)
def load_task(name: str) -> Task:
    """The built-in task called ``name`` (read-only: it generates data, it keeps no per-run state).

    Only built-in data: a task on the user's own text is per user and lives in session state
    (:func:`ui.training.text.user_task`).
    """
    return get_task(name)


def task_defaults(name: str) -> dict[str, Any]:
    """The settings that suit task ``name``: its recommended model and training run (the offered rate nearest
    its learning rate)."""
    task = load_task(name)
    model = task.default_model_config()
    train = default_train_config(task)
    values = {
        LAYERS: model.n_layers,
        HEADS: model.n_heads,
        D_MODEL: model.d_model,
        D_FF: model.d_ff,
        DROPOUT: model.dropout,
        LR: min(LRS, key=lambda lr: (abs(lr - train.lr), lr)),
        BATCH: train.batch_size,
        B_LAYERS: model.n_layers,
        B_HEADS: model.n_heads,
        STEPS: min(train.steps, limits().default_steps, limits().max_steps),
    }
    if not isinstance(model, ViTConfig):
        values.update(
            {
                NORM: model.norm_position,
                POSITIONAL: model.positional,
                B_NORM: model.norm_position,
                B_POSITIONAL: "none" if model.positional != "none" else "sinusoidal",
            }
        )
    return values


def url_params(task_name: str | None) -> tuple[UrlParam, ...]:
    """The page's URL settings with task ``task_name``'s tuned values as defaults.

    Links leave out what equals these defaults, and a link's missing settings take them, so ``?task=vit_shapes``
    opens the ViT with the settings that the task menu would give it. An unknown name counts as the first task
    (the one such a link ends up with).
    """
    names = task_names()  # the registered tasks, read now: a task may be registered after this module
    tuned = task_defaults(task_name if task_name in names else names[0])
    params = (replace(p, choices=names) if p.key == TASK else p for p in URL_PARAMS)
    return tuple(replace(p, default=tuned[p.key]) if p.key in tuned else p for p in params)


def choose_task(name: str) -> None:
    """Switch to task ``name`` with its recommended model and run (the menu, a checkpoint)."""
    st.session_state[TASK] = name
    st.session_state.update(task_defaults(name))
    st.session_state[DEFAULTS_FOR] = name


def _follow_task() -> None:
    """Give the settings the task's tuned values whenever the task changed without them.

    A link opened on this run already brought them (see :func:`url_params`), with its own settings on top.
    """
    task = st.session_state[TASK]
    if set_by_link(TASK):
        st.session_state[DEFAULTS_FOR] = task
    elif st.session_state.get(DEFAULTS_FOR) != task:
        choose_task(task)


def setting(key: str) -> Any:
    """A setting's value, also where its widget was not drawn in the last run (Streamlit forgets a widget's value
    then: a ViT task draws no norm or positional encoding): the session's, else the saved one, else the default."""
    if key in st.session_state:
        return st.session_state[key]
    return st.session_state.get(SAVED, {}).get(key, SESSION_DEFAULTS[key])


def restore_settings() -> None:
    """Put every setting back into session state before the widgets are drawn, and make it valid."""
    saved = st.session_state.setdefault(SAVED, {})
    for key, default in SESSION_DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = saved.get(key, default)
    settle_choice(TASK, list(task_names()))
    _follow_task()
    st.session_state.setdefault(DEVICE, saved.get(DEVICE, available_devices()[0]))
    host = limits()
    settle_choice(DEVICE, available_devices())
    settle_choice(
        D_MODEL, d_model_choices(), why=_("this server trains models up to d_model {n}").format(n=host.max_d_model)
    )
    settle_choice(
        D_FF, d_ff_choices(), why=_("this server allows d_ff up to {n}").format(n=FF_PER_WIDTH * host.max_d_model)
    )
    settle_choice(LR, list(LRS))
    settle_choice(BATCH, batch_choices(), why=_("this server trains batches up to {n}").format(n=host.max_batch))
    settle_choice(text.SOURCE, list(text.SOURCES))
    settle_choice(text.TEMPERATURE, list(text.TEMPERATURES))
    settle_choice(text.TOP_K, list(text.TOP_KS))
    if not isinstance(st.session_state[text.TEXT], str):
        st.session_state[text.TEXT] = ""
    settle_choice(
        STEPS,
        range(10, host.max_steps + 1),
        why=_("this server trains at most {n} steps").format(n=num(host.max_steps)),
    )
    for key in (LAYERS, B_LAYERS):
        settle_choice(
            key, range(1, host.max_layers + 1), why=_("this server trains at most {n} layers").format(n=host.max_layers)
        )
    settle_choice(BLOCK, list(BLOCKS))
    llama = llama_block(get_task_family(st.session_state[TASK]))
    for key, pos in ((HEADS, POSITIONAL), (B_HEADS, B_POSITIONAL)):
        d_model = st.session_state[D_MODEL]
        spec = positional_kind("rope" if llama else st.session_state[pos])
        settle_choice(
            key,
            head_options(d_model, spec.name),
            why=(
                _("the number of heads must divide d_model {d_model} into an even head size for {kind} positions")
                if spec.even_head_reason
                else _("the number of heads must divide d_model {d_model}")
            ).format(d_model=d_model, kind=known(spec.title)),
        )
    settle_choice(
        KV_HEADS,
        divisors(st.session_state[HEADS]),
        why=_("the K/V heads must divide the {n} query heads").format(n=st.session_state[HEADS]),
    )


def get_task_family(name: str) -> str:
    """The model family of the task called ``name`` (the user's own text trains the character model)."""
    return load_task(name).family if name in task_names() else "causal_lm"


def llama_block(task_family: str) -> bool:
    """Whether the settings build a Llama block: chosen, and the task trains a decoder-only model."""
    return family(task_family).decoder_only and st.session_state.get(BLOCK) == "llama"


def save_settings() -> None:
    """Remember the settings as drawn, for the next visit and for projector mode."""
    st.session_state[SAVED] = {key: st.session_state[key] for key in (*SESSION_DEFAULTS, DEVICE)}


def d_model_choices() -> list[int]:
    return [d for d in D_MODELS if d <= limits().max_d_model]


def d_ff_choices() -> list[int]:
    return [d for d in D_FFS if d <= FF_PER_WIDTH * limits().max_d_model]


def batch_choices() -> list[int]:
    return [b for b in BATCHES if b <= limits().max_batch]


def head_options(d_model: int, positional: str) -> list[int]:
    """Head counts that divide ``d_model``, at most MAX_HEADS, with a head size the encoding accepts."""
    spec = positional_kind(positional)
    return [h for h in head_choices(d_model) if spec.head_ok(d_model // h)]
