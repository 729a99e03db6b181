"""Attention Lab: take multi-head attention apart on real numbers, step by step, for any layer and head."""

import streamlit as st

from ui import attention_views as av
from ui import state
from ui.attn_steps import step_by_step
from ui.attn_tabs import all_heads, layer_head_controls, one_head, token_lines, token_strip
from ui.charts import colorscale
from ui.router import ensure_router
from ui.urlstate import bind_url, push_url, share_link

ensure_router()  # a deep link on a fresh server must still go through app.py

st.title("🔍 Attention Lab")
st.caption("Type a short sequence and watch one attention layer work, from the token vectors X to the output, "
           "with the real numbers of a small transformer.")
av.init_page_state()
bind_url(av.URL_PARAMS, page="attention")
state.save_settings(av.KEPT)
share_link(av.URL_PARAMS, url_path="attention")
projector = st.session_state.get(state.PRESENTATION, False)

trained = state.trained_models("causal_lm", "seq2seq", "regression")
entry = av.trained_entry(trained)
text, kind = av.input_controls(entry)
if trained:
    av.source_control(trained)
elif not projector:
    st.page_link("pages/training.py", icon="📈",
                 label="Train a model on the Live Training page to see the patterns it learned here.")
av.model_controls(projector=projector, trained=entry)

s = av.settings()
run = None
if entry is not None:
    try:
        run = av.run_trained(entry, text)
        st.caption(f"Weights of **{run.title}**: d_model {run.d_model}, {run.n_heads} heads, {len(run.steps)} "
                   f"layers, mask {run.mask}. Your text is read character by character in its task's vocabulary.")
    except ValueError as err:
        st.warning(f"{err} Showing random weights instead.", icon="⚠️")
if run is None:
    run = av.run_random(text, kind, s.d_model, s.heads, s.layers, s.mask, s.seed)
for notice in run.notices:
    st.info(notice, icon="✂️")
if not run.tokens:
    st.info("Type a few words (or amino acids, or digits) in the box above to see attention at work.", icon="⌨️")
    push_url(av.URL_PARAMS)
    st.stop()

token_strip(run.tokens)
layer, head = layer_head_controls(run)
view = st.radio("View", list(av.VIEWS), format_func=av.VIEWS.get, key=av.VIEW, horizontal=True,
                label_visibility="collapsed", help="Which picture of the attention to draw.")
if view == "steps":
    step_by_step(run, layer, head)
elif view == "head":
    one_head(run, layer, head, colorscale=colorscale())
elif view == "grid":
    all_heads(run)
else:
    token_lines(run, layer, head)
push_url(av.URL_PARAMS)
