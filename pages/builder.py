"""Model Builder: configure a transformer and see its parameters, FLOPs, memory and architecture."""

import streamlit as st

from ui.builder import controls, views
from ui.builder.blocks import block_comparison
from ui.builder.diagram import architecture_svg
from ui.builder.pretrained import loaded_model_sizes
from ui.common import theme
from ui.common.charts import show
from ui.pages import close_page, open_page, settings_panel, share_page

info = open_page("builder", kept=controls.KEPT, caption=(
    "Pick a family and its sizes: the page counts every parameter, estimates the cost of a training step, and "
    "draws the architecture — next to famous models counted the same way."
))
share_page(info)

projector = theme.projector()
# In projector mode the settings fold away above the results; otherwise they stand beside them.
settings_area, results = (settings_panel(), st.container()) if projector else st.columns([1, 1.6], gap="large")
with settings_area:
    settings = controls.builder_controls(projector)
try:
    breakdown, est = views.sizes(settings)
except ValueError as err:
    results.error(f"This combination cannot be built: {err}", icon="🧱")
    close_page(info)
    st.stop()

with results:
    # Beside the settings two metrics a row, so that "22.9 MB" is not cut short on a 1024-pixel screen.
    m1, m2, m3, m4 = st.columns(4) if projector else [*st.columns(2), *st.columns(2)]
    m1.metric("Parameters", views.human(sum(breakdown.values())), help=f"{sum(breakdown.values()):,} exactly.")
    m2.metric("FLOPs per token", views.human(est.flops_per_token_forward),
              help="Forward pass, matrix multiplications only (2 per multiply-add).")
    m3.metric("FLOPs per step", views.human(est.flops_per_step),
              help=f"Forward + backward (≈ 3 × forward) for a batch of {settings.batch_size}.")
    m4.metric("Training memory", views.human_bytes(est.total_bytes),
              help="float32 weights, gradients, two AdamW states and the activations kept for backward.")
    if settings.preset:
        st.success(f"These are **{settings.preset}**'s published sizes, counted with its own extras: "
                   f"{sum(breakdown.values()):,} parameters. Change any control to build your own model.", icon="📐")
    note = views.too_big_note(est)
    if note:
        st.info(note, icon="📐")
    show(views.breakdown_figure(breakdown), key="mb.breakdown")
    show(views.memory_figure(est, settings.batch_size), key="mb.memory")
    views.step_time_section(settings, est)

st.subheader("Architecture")
st.caption("Drawn from your settings; read from the bottom (input) to the top (output), like the paper's figure.")
svg = architecture_svg(settings)
st.image(svg, width="content")
st.download_button("Download the diagram (SVG)", svg, file_name=f"architecture_{settings.kind}.svg",
                   mime="image/svg+xml", key="mb.svg", help="The diagram as a vector file for slides or handouts.")

st.subheader("Compared with famous models")
st.caption(
    "BERT-base, GPT-2 small, the 2017 Transformer base, ViT-B/16 and SmolLM2-135M rebuilt from this app's blocks "
    f"and counted the same way; memory is for training at your batch size ({settings.batch_size}) and their own "
    "lengths."
)
loaded = loaded_model_sizes(settings.batch_size)
st.table(views.comparison_table(settings, breakdown, est, loaded))  # a static table wraps its cells to fit any width
st.caption(views.COMPARISON_HELP)
show(views.share_figure(settings, breakdown, loaded), key="mb.share")
block_comparison(settings)
close_page(info)
