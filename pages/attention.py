"""Attention Lab: take multi-head attention apart on real numbers, step by step, for any layer and head."""

import streamlit as st

from explorer.i18n import _, ngettext, num
from ui.attention import controls, keys, lab_run, labels
from ui.attention import pretrained as lab_pretrained
from ui.attention.beyond.context import LensContext
from ui.attention.beyond.section import beyond_section
from ui.attention.find_heads import find_heads_section
from ui.attention.generation import keep_writing, writing_section
from ui.attention.head_switch import shown_model, switch_off_section
from ui.attention.steps import step_by_step
from ui.attention.views import all_heads, one_head, token_lines, token_strip, view_controls
from ui.attention.writers import lab_writer
from ui.common import state, theme
from ui.pages import close_page, open_page, settings_panel, share_page

info = open_page("attention", init=keys.init_page_state, kept=keys.KEPT,
                 caption=_("Type a short sequence and watch one attention layer work, from the token vectors X to "
                           "the output, with the real numbers of a small transformer."))
share_page(info)
projector = theme.projector()

trained = state.trained_models(*keys.LAB_FAMILIES)
entry = controls.trained_entry(trained)
use_pretrained = st.session_state.get(keys.SOURCE) == "pretrained"
pre = None
with settings_panel():
    text, kind = controls.input_controls(entry, pretrained=use_pretrained)
    controls.source_control(trained)
    if use_pretrained:
        pre = lab_pretrained.pretrained_model()
    else:
        if not trained and not projector:
            st.page_link("pages/training.py", icon="📈",
                         label=_("Train a model on the Live Training page to see the patterns it learned here."))
        controls.model_controls(projector=projector, trained=entry)

s = controls.settings()
run = shown_trained = None
about = ""  # which weights run, said above the chart (below it in projector mode: the chart comes first)
if pre is not None:
    with st.spinner(_("Running the model…")):
        run = lab_pretrained.run_pretrained(pre, lab_pretrained.cache_key(pre), text, lab_pretrained.chosen_layer())
    about = lab_pretrained.describe(pre)
elif use_pretrained:
    st.warning(_("No pretrained model is loaded; showing random weights instead."), icon="⚠️")
if entry is not None:
    try:
        run, shown_trained = lab_run.run_trained(entry, text), entry
        heads = ngettext("{n} head", "{n} heads", run.n_heads).format(n=num(run.n_heads))
        if 0 < run.kv_heads < run.n_heads:
            heads = _("{heads} sharing {kv} K/V heads").format(heads=heads, kv=num(run.kv_heads))
        layers = ngettext("{n} layer", "{n} layers", len(run.steps)).format(n=num(len(run.steps)))
        about = _("Weights of **{title}**: d_model {d_model}, {heads}, {layers}, mask {mask}. Your text is read "
                  "character by character in its task's vocabulary.").format(
            title=run.title, d_model=run.d_model, heads=heads, layers=layers, mask=labels.shown_mask(run.mask))
    except ValueError as err:
        st.warning(_("{error} Showing random weights instead.").format(error=err), icon="⚠️")
if run is None:
    run = lab_run.run_random(text, kind, s.d_model, s.heads, s.layers, s.mask, s.seed)
if about and not projector:
    st.caption(about)
for notice in run.notices:
    st.info(notice, icon="✂️")
if not run.tokens:
    st.info(_("Type a few words (or amino acids, or digits) in the box above to see attention at work."), icon="⌨️")
    close_page(info)
    st.stop()

token_strip(run.tokens)
layer, head, view = view_controls(run, projector=projector)
if view == "steps":
    step_by_step(run, layer, head)
elif view == "head":
    one_head(run, layer, head)
elif view == "grid":
    all_heads(run)
else:
    token_lines(run, layer, head)
if about and projector:
    st.caption(about)
if pre is not None:
    lab_pretrained.predictions(pre, text)
writing = writing_section(lab_writer(pre, shown_trained, text))
shown = shown_model(pre, shown_trained, text, s)
if shown is not None:
    switch_off_section(shown)
if pre is not None:
    find_heads_section(pre)
beyond_section(None if shown is None else LensContext(shown, pre, shown_trained, run, text, layer, head, projector))
keep_writing(writing)  # last: every section is drawn while the model writes
close_page(info)
