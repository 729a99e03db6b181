"""Live Training page: session-state keys, the settings widgets, and the run they describe.

Settings survive visits to other pages and projector mode (which hides them): their values are mirrored in
``SAVED`` and put back before the widgets are drawn. Every widget is created without ``value=``/``index=``,
so session state is the single source of its value.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import streamlit as st

from explorer.guard import FF_PER_WIDTH, GuardResult, check_budget
from explorer.heads import MAX_HEADS, head_choices
from explorer.host import limits
from explorer.i18n import _, num
from explorer.lab.block_compare import BLOCKS, block_fields
from explorer.runs.live import LIVE_THREADS, RunSpec
from explorer.runs.place import default_place
from transformer_core import available_devices, divisors
from transformer_core.config import NORM_POSITIONS, ViTConfig
from transformer_core.families import family
from transformer_core.positional import get as positional_kind
from transformer_core.positional import kinds as positional_kinds
from transformer_core.tasks import TASK_NAMES, Task, get_task, task_names
from transformer_core.training import default_train_config
from ui.common.urlstate import UrlParam, set_by_link, settle_choice
from ui.training import interventions, text
from ui.training.task_labels import known, task_description, task_title

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
SNAPSHOTS_PER_RUN = 60  # attention snapshots a run aims for (the time-lapse frames)
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
    """Comparing starts from configuration A with the positional encoding switched off (or on)."""
    if st.session_state[COMPARE]:
        st.session_state[B_LAYERS] = st.session_state[LAYERS]
        st.session_state[B_HEADS] = st.session_state[HEADS]
        st.session_state[B_NORM] = st.session_state[NORM]
        st.session_state[B_POSITIONAL] = "none" if st.session_state[POSITIONAL] != "none" else "sinusoidal"


def settings_signature() -> tuple:
    """All settings that shape a run (the user's text by its hash); a run built from other settings is out of date.

    Sampling settings and the heads switched off are left out: they change only what is shown of the run.
    """
    keys = [k for k in (*DEFAULTS, DEVICE) if k not in (*text.SAMPLING_KEYS, *interventions.KEYS)]
    return (*(st.session_state[k] for k in keys), text.text_signature(st.session_state[TASK]))


def build_specs() -> tuple[Task, list[RunSpec]]:
    """The task and one RunSpec per configuration from the current settings (ValueError if invalid)."""
    s = st.session_state
    task = text.user_task() if text.own_text_selected(s[TASK]) else load_task(s[TASK])
    base = task.default_model_config()
    arch = dict(n_layers=s[LAYERS], n_heads=s[HEADS], d_model=s[D_MODEL], d_ff=s[D_FF], dropout=s[DROPOUT])
    is_vit = isinstance(base, ViTConfig)
    llama = llama_block(task.family)
    if not is_vit:
        arch.update(norm_position=s[NORM], positional=s[POSITIONAL])
    if llama:
        arch.update(block_fields("llama", s[KV_HEADS]))
    train = default_train_config(
        task, steps=s[STEPS], batch_size=s[BATCH], lr=s[LR], seed=s[SEED], device=s[DEVICE], **cadence(s[STEPS])
    )
    model_a = replace(base, **arch)
    if not s[COMPARE]:
        return task, [RunSpec("A", model_a, train)]
    b_arch = dict(arch, n_layers=s[B_LAYERS], n_heads=s[B_HEADS])
    if llama:  # B keeps A's Llama block; its K/V heads are A's when they divide B's heads
        b_arch.update(n_kv_heads=math.gcd(s[KV_HEADS], s[B_HEADS]))
    elif not is_vit:
        b_arch.update(norm_position=s[B_NORM], positional=s[B_POSITIONAL])
    model_b = replace(base, **b_arch)
    return task, [
        RunSpec(f"A · {describe(model_a)}", model_a, train),
        RunSpec(f"B · {describe(model_b)}", model_b, train),
    ]


def cadence(steps: int) -> dict[str, int]:
    """Snapshot and evaluation intervals for a run of ``steps``.

    About 60 time-lapse frames per run, and an evaluation every 25 steps (every tenth of a short run, but not
    more often than every 5 steps: one evaluation costs about as much as a few training steps).
    """
    return {"snapshot_every": max(1, steps // SNAPSHOTS_PER_RUN), "eval_every": max(5, min(25, steps // 10))}


def describe(config: Any) -> str:
    """A short description of an architecture for legends, e.g. "2 layers, 4 heads, sinusoidal"."""
    words = (
        f"{config.n_layers} layer{'s' if config.n_layers != 1 else ''}, {config.n_heads} "
        f"head{'s' if config.n_heads != 1 else ''}"
    )
    if getattr(config, "norm_type", "layernorm") == "rmsnorm":
        kv = config.n_kv_heads or config.n_heads
        words += f", Llama block ({kv} K/V head{'s' if kv != 1 else ''})"
    elif not isinstance(config, ViTConfig):
        spec = positional_kind(config.positional)
        positions = "no positions" if spec.acts == "nothing" else f"{spec.title} positions"
        words += f", {positions}, {config.norm_position}-norm"
    return words


def guard(task: Task, specs: list[RunSpec]) -> GuardResult:
    """The resource guard's verdict for the largest configuration, counted once per lane."""
    process = default_place().overhead_bytes
    results = [_verdict(task.name, s.model_config, s.train_config, len(specs), process) for s in specs]
    return max(results, key=lambda r: (not r.ok, r.memory_bytes))


@functools.lru_cache(maxsize=256)
def _verdict(task_name: str, model_config: Any, train_config: Any, lanes: int, process_bytes: int = 0) -> GuardResult:
    """check_budget for a built-in task (a pure function of frozen settings, so it is remembered); its trainer
    process, if runs train in one, counts too."""
    # Estimate with the threads the page trains with, not all of the host's.
    return check_budget(
        load_task(task_name), model_config, train_config, lanes=lanes, threads=LIVE_THREADS, process_bytes=process_bytes
    )


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
    """Architecture and training settings: six narrow columns of two controls each."""
    c1, c2, c3, c4, c5, c6 = st.columns(6)
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
    c0, c1, c2, c3, c4 = st.columns([2, 1, 1, 1, 1], vertical_alignment="center")
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
    elif not family(task.family).reads_images:
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
