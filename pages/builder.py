"""Model Builder: configure a transformer and see its parameters, FLOPs, memory and architecture."""

import streamlit as st

from explorer.i18n import _, num
from ui.builder import controls, views, widgets
from ui.builder.blocks import block_comparison
from ui.builder.diagram import architecture_svg
from ui.builder.pretrained import loaded_model_sizes
from ui.common import theme
from ui.common.charts import show
from ui.pages import close_page, open_page, settings_panel, share_page

info = open_page(
    "builder",
    kept=controls.KEPT,
    caption=_(
        "Pick a family and its sizes: the page counts every parameter, estimates the cost of a training step, and "
        "draws the architecture — next to famous models counted the same way."
    ),
)
share_page(info)

projector = theme.projector()
# In projector mode the settings fold away above the results; otherwise they stand beside them.
settings_area, results = (settings_panel(), st.container()) if projector else st.columns([1, 1.6], gap="large")
with settings_area:
    settings = widgets.builder_controls(projector)
try:
    breakdown, est = views.sizes(settings)
except ValueError as err:
    results.error(_("This combination cannot be built: {error}").format(error=err), icon="🧱")
    close_page(info)
    st.stop()

with results:
    # Beside the settings two metrics a row, so that "22.9 MB" is not cut short on a 1024-pixel screen.
    m1, m2, m3, m4 = st.columns(4) if projector else [*st.columns(2), *st.columns(2)]
    total = sum(breakdown.values())
    m1.metric(_("Parameters"), views.human(total), help=_("{count} exactly.").format(count=num(total)))
    m2.metric(
        _("FLOPs per token"),
        views.human(est.flops_per_token_forward),
        help=_("Forward pass, matrix multiplications only (2 per multiply-add)."),
    )
    m3.metric(
        _("FLOPs per step"),
        views.human(est.flops_per_step),
        help=_("Forward + backward (≈ 3 × forward) for a batch of {batch}.").format(batch=num(settings.batch_size)),
    )
    m4.metric(
        _("Training memory"),
        views.human_bytes(est.total_bytes),
        help=_("float32 weights, gradients, two AdamW states and the activations kept for backward."),
    )
    if settings.preset:
        st.success(
            _(
                "These are **{model}**'s published sizes, counted with its own extras: {count} parameters. "
                "Change any control to build your own model."
            ).format(model=settings.preset, count=num(total)),
            icon="📐",
        )
    note = views.too_big_note(est)
    if note:
        st.info(note, icon="📐")
    show(views.breakdown_figure(breakdown), key="mb.breakdown")
    show(views.memory_figure(est, settings.batch_size), key="mb.memory")
    views.step_time_section(settings, est)

st.subheader(_("Architecture"))
st.caption(_("Drawn from your settings; read from the bottom (input) to the top (output), like the paper's figure."))
svg = architecture_svg(settings)
st.image(svg, width="content")
st.download_button(
    _("Download the diagram (SVG)"),
    svg,
    file_name=f"architecture_{settings.kind}.svg",
    mime="image/svg+xml",
    key="mb.svg",
    help=_("The diagram as a vector file for slides or handouts."),
)

st.subheader(_("Compared with famous models"))
st.caption(
    _(
        "BERT-base, GPT-2 small, the 2017 Transformer base, ViT-B/16 and SmolLM2-135M rebuilt from this app's blocks "
        "and counted the same way; memory is for training at your batch size ({batch}) and their own lengths."
    ).format(batch=num(settings.batch_size))
)
loaded = loaded_model_sizes(settings.batch_size)
st.table(views.comparison_table(settings, breakdown, est, loaded))  # a static table wraps its cells to fit any width
st.caption(_(views.COMPARISON_HELP))
show(views.share_figure(settings, breakdown, loaded), key="mb.share")
block_comparison(settings)
close_page(info)
