"""Numbers, charts and the comparison table of the Model Builder page.

Every count comes from a model built on the meta device (no memory is allocated), the famous models included:
they are counted from ``transformer_core.sizing`` presets, not typed in.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.host import limits
from explorer.i18n import N_, _, num, percent
from explorer.i18n.quantities import duration as duration
from explorer.i18n.quantities import human as human
from explorer.i18n.quantities import human_bytes as human_bytes
from explorer.lab.builder import EFFICIENCY, BuilderSettings, build, estimate, matmul_rate, measure, measure_plan
from explorer.pretrained.sizes import LoadedSizes
from transformer_core.device import pick_device
from transformer_core.families import by_kind
from transformer_core.sizing import (
    COMPONENTS,
    PRESETS,
    StepEstimate,
    build_preset,
    estimate_preset,
    parameter_breakdown,
    preset_info,
)
from ui.builder.controls import TIMINGS, library_text
from ui.common import state
from ui.common.chart_style import LEGEND_PLACES, half_title_chars, style_layout
from ui.common.figure_dict import figure, shows_legend

COMPONENT_TITLES = {
    "embeddings": N_("Embeddings"),
    "attention": N_("Attention"),
    "feed_forward": N_("Feed-forward"),
    "norms": N_("Norms"),
    "head": N_("Output head"),
}
COMPONENT_COLOURS = {
    "embeddings": "#CC79A7",
    "attention": "#D55E00",
    "feed_forward": "#0072B2",
    "norms": "#E6C200",
    "head": "#6A4C9C",
}  # the diagram's colours
MEMORY_PARTS = (
    ("weights_bytes", N_("Weights")),
    ("grads_bytes", N_("Gradients")),
    ("optimizer_bytes", N_("AdamW states")),
    ("activations_bytes", N_("Activations")),
)
# Short enough for a narrow table column; the family radio spells them out.


@st.cache_data(max_entries=64, show_spinner=False)
def sizes(settings: BuilderSettings) -> tuple[dict[str, int], StepEstimate]:
    """Parameter breakdown and step estimate of the configured model (built on the meta device)."""
    model = build(settings, "meta")
    return parameter_breakdown(model), estimate(settings, model)


@st.cache_data(show_spinner=False)
def preset_sizes(name: str, batch_size: int) -> tuple[dict, dict[str, int], StepEstimate]:
    """A famous model's summary, parameter breakdown and step estimate at ``batch_size``."""
    model = build_preset(name)  # once, on the meta device: GPT-2 XL's 48 blocks take a while to build
    return preset_info(name), parameter_breakdown(model), estimate_preset(name, batch_size=batch_size, model=model)


@st.cache_data(ttl=600, show_spinner=False)
def device_speed(device: str) -> float:
    """Measured matrix-multiply speed of ``device`` in FLOP/s (measured again every ten minutes)."""
    return matmul_rate(device)


def breakdown_figure(breakdown: dict[str, int]) -> go.Figure:
    """Parameters per component as horizontal bars, with count and share printed."""
    total = max(sum(breakdown.values()), 1)
    names = [_(COMPONENT_TITLES[c]) for c in COMPONENTS]
    values = [breakdown[c] for c in COMPONENTS]
    bars = dict(
        type="bar",
        x=values,
        y=names,
        orientation="h",
        marker=dict(color=[COMPONENT_COLOURS[c] for c in COMPONENTS]),
        text=[f"{human(v)} ({percent(v / total)})" for v in values],
        textposition="auto",
        hovertemplate=_("%{y}: %{x:,} parameters") + "<extra></extra>",
    )
    title = _("Parameters by component — {total} in total").format(total=human(total))
    layout = style_layout(title=title, height=280, legend=shows_legend([bars])) | dict(
        yaxis=dict(autorange="reversed"),
        xaxis=dict(title=dict(text=_("parameters")), exponentformat="SI"),  # "50G" as the bars say, not "50B"
    )
    return figure([bars], layout)


def memory_figure(est: StepEstimate, batch_size: int) -> go.Figure:
    """Training memory split into weights, gradients, optimizer states and activations."""
    colours = ("#56B4E9", "#009E73", "#E69F00", "#CC79A7")
    data = []
    for (field, name), colour in zip(MEMORY_PARTS, colours, strict=True):
        value = getattr(est, field)
        data.append(
            dict(
                type="bar",
                x=[value],
                y=["memory"],
                orientation="h",
                name=_(name),
                marker=dict(color=colour),
                hovertemplate=f"{_(name)}: {human_bytes(value)}<extra></extra>",
            )
        )
    title = _("Training memory at batch {batch}: {memory}").format(
        batch=num(batch_size), memory=human_bytes(est.total_bytes)
    )
    # The legend stands beside the bar, one part a line: above it, four parts wrapped onto the title in the page's
    # narrow right column (1024 pixels wide and less). The title wraps there too.
    layout = style_layout(title=title, height=250, title_chars=half_title_chars()) | dict(
        barmode="stack",
        showlegend=True,
        legend=LEGEND_PLACES["right"],
        yaxis=dict(showticklabels=False),
        xaxis=dict(title=dict(text=_("bytes (float32 + AdamW)")), exponentformat="SI"),
    )
    return figure(data, layout)


def comparison_table(
    settings: BuilderSettings, breakdown: dict[str, int], est: StepEstimate, loaded: LoadedSizes | None = None
) -> pd.DataFrame:
    """The configured model, a loaded pretrained one (when given) and the famous ones side by side: one row per
    property, one column per model.

    Models are columns so that the table fits a narrow window: five models, not twelve properties, go across.
    """
    yours = _("Your model") if not settings.preset else _("Your model ({name})").format(name=settings.preset)
    models = {yours: _column(settings.kind, dataclasses.asdict(settings), sum(breakdown.values()), "", est)}
    if loaded is not None:
        models[loaded.title] = _column(loaded.kind, loaded.shape, sum(loaded.breakdown.values()), "", loaded.estimate)
    for name in PRESETS:
        info, _breakdown, p_est = preset_sizes(name, settings.batch_size)
        shape = {
            "n_layers": info["layers"],
            "d_model": info["d_model"],
            "n_heads": info["heads"],
            "d_ff": info["d_ff"],
            "vocab_size": info["vocab"],
            "seq_len": info["seq_len"],
        }
        models[name] = _column(info["kind"], shape, info["params"], info["reported_params"], p_est)
    table = pd.DataFrame(models, index=list(COMPARED))
    table.index = [_(row) for row in COMPARED]
    return table


COMPARED = (
    N_("Family"),
    N_("Layers"),
    "d_model",
    N_("Heads"),
    "d_ff",
    N_("Vocabulary"),
    N_("Tokens"),
    N_("Parameters"),
    N_("Exact count"),
    N_("Reported"),
    N_("FLOPs / token"),
    N_("Training memory"),
)  # the table's rows


def _column(kind: str, shape: dict, params: int, reported: str, est: StepEstimate) -> dict[str, str]:
    tokens = shape.get("seq_len")
    images = by_kind(kind).reads_images
    if images and "image_size" in shape:
        tokens = (shape["image_size"] // shape["patch_size"]) ** 2 + 1
    return {
        "Family": library_text(by_kind(kind).short),
        "Layers": num(shape["n_layers"]),
        "d_model": num(shape["d_model"]),
        "Heads": num(shape["n_heads"]),
        "d_ff": num(shape["d_ff"]),
        "Vocabulary": num(shape["vocab_size"]) if not images else "—",
        "Tokens": num(tokens),
        "Parameters": human(params),
        "Exact count": num(params),
        "Reported": reported or "—",
        "FLOPs / token": human(est.flops_per_token_forward),
        "Training memory": human_bytes(est.total_bytes),
    }


def share_figure(settings: BuilderSettings, breakdown: dict[str, int], loaded: LoadedSizes | None = None) -> go.Figure:
    """Each model's parameters split by component, as shares of its own total (so sizes can differ)."""
    models = {_("Your model"): breakdown}
    if loaded is not None:
        models[loaded.title] = loaded.breakdown
    models.update({name: preset_sizes(name, settings.batch_size)[1] for name in PRESETS})
    data = []
    for comp in COMPONENTS:
        shares = [m[comp] / max(sum(m.values()), 1) for m in models.values()]
        data.append(
            dict(
                type="bar",
                y=list(models),
                x=shares,
                name=_(COMPONENT_TITLES[comp]),
                orientation="h",
                marker=dict(color=COMPONENT_COLOURS[comp]),
                customdata=[m[comp] for m in models.values()],
                hovertemplate="%{y}<br>" + _(COMPONENT_TITLES[comp]) + ": %{x:.1%} (%{customdata:,})<extra></extra>",
            )
        )
    totals = [human(sum(m.values())) for m in models.values()]
    height = max(330, 110 + 45 * len(models))
    layout = style_layout(title=_("Where the parameters are"), height=height, legend=shows_legend(data)) | dict(
        barmode="stack",
        yaxis=dict(
            autorange="reversed",
            ticktext=[f"{n} · {t}" for n, t in zip(models, totals, strict=True)],
            tickvals=list(models),
        ),
        xaxis=dict(tickformat=".0%", title=dict(text=_("share of the model's parameters"))),
    )
    return figure(data, layout)


def step_time_section(settings: BuilderSettings, est: StepEstimate) -> None:
    """Estimated step time, and a measured one when it is safe to run a real step on this machine."""
    device = pick_device(st.session_state.get(state.DEVICE))
    speed = device_speed(device.type)
    host = limits()
    plan = measure_plan(
        est,
        flops_per_second=speed,
        memory_budget_bytes=host.memory_budget_bytes,
        time_budget_seconds=host.measure_time_budget_s,
    )
    st.markdown(_("**Training step on this {device}**").format(device=device.type.upper()))
    st.caption(
        _(
            "Estimate: about {time} per step — {flops} at {rate}, {share} of the measured "
            "matrix-multiply speed of {speed} (a whole step also runs softmax, norms and the optimizer, "
            "which are slower)."
        ).format(
            time=duration(plan.estimated_seconds),
            flops=human(est.flops_per_step, "FLOP"),
            rate=human(speed * EFFICIENCY, "FLOP/s"),
            share=percent(EFFICIENCY),
            speed=human(speed, "FLOP/s"),
        )
    )
    if not plan.allowed:
        st.warning(
            _("{reason} Shown as an estimate only; nothing was allocated.").format(reason=plan.reason), icon="🚫"
        )
        return
    timings = st.session_state.setdefault(TIMINGS, {})
    key = (settings, device.type)
    if st.button(
        _("⏱ Measure a real training step"),
        key="mb.measure",
        help=_(
            "Builds the model, runs one warm-up step, then times three forward + backward + AdamW "
            "steps on random data and reports the median."
        ),
    ):
        with st.spinner(_("Timing three training steps…")):
            timings[key] = measure(settings, device)
    if key in timings:
        st.metric(
            _("Measured time per step"),
            duration(timings[key]),
            help=_("Median of three steps after a warm-up, on random inputs."),
        )


def too_big_note(est: StepEstimate) -> str | None:
    """A remark when even the weights exceed the memory of this machine."""
    if est.weights_bytes > limits().memory_budget_bytes:
        return _(
            "The weights alone take {memory}: this model is far too big to build here, so every number on "
            "this page comes from shapes on the meta device."
        ).format(memory=human_bytes(est.weights_bytes))
    return None


COMPARISON_HELP = N_(
    "Tokens: per sequence (CLS + patches for a ViT). Parameters: counted from the model built here. "
    "Reported: the size the authors state (GPT-2's paper says 117M; the released weights have 124M). "
    "FLOPs / token: forward pass. Training memory: at your batch size."
)
