"""ViT Patching: a picture becomes a sequence of patch tokens, and the CLS token decides where to look."""

import streamlit as st

from explorer.i18n import _, num
from explorer.lab.vit_walkthrough import attention_scores, num_patches
from ui.common import theme
from ui.common.charts import show
from ui.common.exports import tensor_downloads
from ui.pages import close_page, open_page, settings_panel, share_page
from ui.vit import controls, pictures, views
from ui.vit.pretrained import pretrained_section
from ui.vit.why_label import trained_label_section

info = open_page("vit", kept=controls.KEPT, caption=_(
    "A Vision Transformer (Dosovitskiy et al., 2020) reads a picture the way a text model reads words: "
    "it cuts the picture into square patches, flattens each one, projects it to a token, and lets the tokens attend."
))
share_page(info)
projector = theme.projector()

trained = controls.trained_vit()
with settings_panel():
    c_pic, c_geo, c_model = theme.wrapping_columns([1.1, 1, 1], key="vit-settings", per_row=2, gap="large")
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
        with c_model, st.expander(_("Model settings"), expanded=fixed is None):
            config = controls.model_controls(fixed, size, patch, projector)

pixels = controls.fitted_pixels(picture.pixels, size, fit)
n = num_patches(size, patch)
channels = config.in_channels

m1, m2, m3, m4 = theme.wrapping_columns(4, key="vit-figures", per_row=2)
m1.metric(_("Patches N = (H/P)·(W/P)"), f"{size // patch}·{size // patch} = {num(n)}",
          help=_("The length of the token sequence."))
m2.metric(_("Tokens with CLS"), num(n + 1), help=_("One extra learned token whose final state is classified."))
m3.metric(_("Numbers per patch C·P·P"), f"{channels}·{patch}·{patch} = {num(channels * patch * patch)}",
          help=_("A flattened patch before the projection."))
m4.metric(_("Scores per head (N+1)²"), num(attention_scores(n)),
          help=_("Attention scores each head computes. Every token scores every token: halving P multiplies N by 4 "
                 "and the attention cost by about 16."))
if not projector:
    with st.expander(_("How N and the attention cost change with the patch size")):
        show(views.patch_count_figure(size, controls.patch_choices(size, fixed), patch), key="vit.count_chart")

st.subheader(_("1 · Cut the picture into patches"))
left, right = st.columns(2, gap="large")
grid_caption = (_("{picture}, {fit} to {size}×{size}, {patch}-pixel grid — numbers give each patch's token position")
                if n <= pictures.MAX_NUMBERED else _("{picture}, {fit} to {size}×{size}, {patch}-pixel grid"))
pictures.show(left, "grid", pixels, patch=patch, caption=grid_caption.format(
    picture=picture.label, fit=_(controls.FIT_LABELS.get(fit, fit)), size=size, patch=patch))
pictures.show(right, "mosaic", pixels, patch=patch,
              caption=_("The {n} patches pulled apart: the model sees separate tiles.").format(n=num(n)))

st.subheader(_("2 · Flatten in reading order"))
st.markdown(_("Patches are read **left to right, then top to bottom**, and each is unrolled into one row of numbers. "
              "Token 0 is the learned **CLS** token that is put in front."))
pictures.show(st, "strip", pixels, patch=patch,
              caption=_("The sequence the transformer reads (long ones shortened with …)."))
walk = controls.run_walkthrough(config, fixed, pixels, task)
show(views.patch_matrix_figure(walk.patches.numpy(), channels=channels, patch=patch), key="vit.patch_matrix")

st.subheader(_("3 · Project to tokens, add CLS and positions"))
st.markdown(
    _("One linear layer $E$ ({inputs} → {d_model}) maps every flattened patch to a d_model = {d_model} token: "
      "{formula}. Without the position embeddings the model could not tell the patches' places apart.").format(
        inputs=num(channels * patch * patch), d_model=config.d_model,
        formula="$z_0 = [x_{cls};\\, x^1 E;\\, \\dots;\\, x^N E] + E_{pos}$")
)
show(views.token_figure(walk.embedded.numpy(), walk.positions.numpy(), walk.tokens.numpy()), key="vit.tokens")

st.subheader(_("4 · Where does the CLS token look?"))
from_task = st.session_state.get(controls.SOURCE) == "task"
st.markdown(controls.prediction_text(walk, task, fixed is not None, from_task=from_task))
layer, head = controls.layer_head_controls(walk.num_layers, walk.num_heads)
views.attention_section(pixels, walk, layer, head)
trained_label_section(trained if fixed is not None else None, task, pixels, walk)
if not projector:
    with st.expander(_("Download layer {layer}'s attention weights").format(layer=layer + 1)):
        tensor_downloads(views.attention_array(walk, layer), [_("head"), _("query"), _("key")],
                         name=f"vit_attention_layer{layer + 1}", key="vit.download")
pretrained_section(picture.pixels, picture.label)
close_page(info)
