"""ViT Patching: a picture becomes a sequence of patch tokens, and the CLS token decides where to look."""

import streamlit as st

from explorer.lab.vit_walkthrough import attention_scores, num_patches
from ui.common import theme
from ui.common.charts import show
from ui.common.exports import tensor_downloads
from ui.pages import close_page, open_page, settings_panel, share_page
from ui.vit import controls, views
from ui.vit.pretrained import pretrained_section
from ui.vit.why_label import trained_label_section

info = open_page("vit", kept=controls.KEPT, caption=(
    "A Vision Transformer (Dosovitskiy et al., 2020) reads a picture the way a text model reads words: "
    "it cuts the picture into square patches, flattens each one, projects it to a token, and lets the tokens attend."
))
share_page(info)
projector = theme.projector()

trained = controls.trained_vit()
with settings_panel():
    c_pic, c_geo, c_model = st.columns([1.1, 1, 1], gap="large")
    with c_model:
        use_trained = controls.weights_control(trained)
    fixed = trained.config if use_trained and trained is not None else None
    task = controls.trained_task(trained) if fixed is not None else None
    with c_pic:
        picture = controls.picture_controls(task)
    with c_geo:
        size, patch, fit = controls.geometry_controls(fixed, projector)
    if projector:
        config = controls.model_controls(fixed, size, patch, projector)
    else:
        with c_model, st.expander("Model settings", expanded=fixed is None):
            config = controls.model_controls(fixed, size, patch, projector)

pixels = controls.fitted_pixels(picture.pixels, size, fit)
n = num_patches(size, patch)
channels = config.in_channels

m1, m2, m3, m4 = st.columns(4)
m1.metric("Patches N = (H/P)·(W/P)", f"{size // patch}·{size // patch} = {n}", help="The length of the token sequence.")
m2.metric("Tokens with CLS", n + 1, help="One extra learned token whose final state is classified.")
m3.metric("Numbers per patch C·P·P", f"{channels}·{patch}·{patch} = {channels * patch * patch}",
          help="A flattened patch before the projection.")
m4.metric("Scores per head (N+1)²", f"{attention_scores(n):,}",
          help="Attention scores each head computes. Every token scores every token: halving P multiplies N by 4 "
               "and the attention cost by about 16.")
if not projector:
    with st.expander("How N and the attention cost change with the patch size"):
        show(views.patch_count_figure(size, controls.patch_choices(size, fixed), patch), key="vit.count_chart")

st.subheader("1 · Cut the picture into patches")
left, right = st.columns(2, gap="large")
left.image(views.grid_overlay(pixels, patch), caption=f"{picture.label}, {fit} to {size}×{size}, {patch}-pixel grid"
           + (" — numbers give each patch's token position" if n <= views.MAX_NUMBERED else ""))
right.image(views.patch_mosaic(pixels, patch), caption=f"The {n} patches pulled apart: the model sees separate tiles.")

st.subheader("2 · Flatten in reading order")
st.markdown("Patches are read **left to right, then top to bottom**, and each is unrolled into one row of numbers. "
            "Token 0 is the learned **CLS** token that is put in front.")
st.image(views.sequence_strip(pixels, patch),
         caption="The sequence the transformer reads (long ones shortened with …).")
walk = controls.run_walkthrough(config, fixed, pixels, task)
show(views.patch_matrix_figure(walk.patches.numpy(), channels=channels, patch=patch), key="vit.patch_matrix")

st.subheader("3 · Project to tokens, add CLS and positions")
st.markdown(
    f"One linear layer $E$ ({channels * patch * patch} → {config.d_model}) maps every flattened patch to a "
    f"d_model = {config.d_model} token: $z_0 = [x_{{cls}};\\, x^1 E;\\, \\dots;\\, x^N E] + E_{{pos}}$. "
    "Without the position embeddings the model could not tell the patches' places apart."
)
show(views.token_figure(walk.embedded.numpy(), walk.positions.numpy(), walk.tokens.numpy()), key="vit.tokens")

st.subheader("4 · Where does the CLS token look?")
from_task = st.session_state.get(controls.SOURCE) == "task"
st.markdown(controls.prediction_text(walk, task, fixed is not None, from_task=from_task))
layer, head = controls.layer_head_controls(walk.num_layers, walk.num_heads)
views.attention_section(pixels, walk, layer, head)
trained_label_section(trained if fixed is not None else None, task, pixels, walk)
if not projector:
    with st.expander(f"Download layer {layer + 1}'s attention weights"):
        tensor_downloads(views.attention_array(walk, layer), ["head", "query", "key"],
                         name=f"vit_attention_layer{layer + 1}", key="vit.download")
pretrained_section(picture.pixels, picture.label)
close_page(info)
