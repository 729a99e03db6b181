"""*The MLP half*: the neurons that fire most on each token of the text at the shown layer, and, for a chosen
neuron, the sentences of the built-in corpus that excite it most.

The corpus is read once per model (a button, a progress bar and Stop) and its results are kept read-only: shared by
every user for the published models and the Lab's random weights (which depend only on their settings), per session
for a model trained in it. The text's own neurons are computed on each run (one forward pass) and never stored.
"""

from __future__ import annotations

import html
import re
import threading

import numpy as np
import pandas as pd
import streamlit as st

from explorer.i18n import N_, _, num
from explorer.lab.neuron_corpus import (
    MIN_COVERAGE,
    CorpusNeurons,
    Example,
    Reader,
    corpus_sentences,
    coverage,
    neurons_of,
    scan_corpus,
    stream_labels,
    top_neurons,
)
from explorer.lab.text_input import MAX_TOKENS, tokenize
from explorer.pretrained.lab import encode
from explorer.render import heatmap as hm
from transformer_core.tasks.base import evaluating
from ui.attention.beyond.context import LensContext
from ui.attention.charts import matrix
from ui.attention.controls import settings
from ui.attention.keys import MLP_NEURON
from ui.attention.lab_run import trained_input
from ui.attention.pretrained import cache_key
from ui.common import exports
from ui.common.chart_style import image_format
from ui.common.urlstate import add_link_notice

PICK = "attn.mlp.pick"  # the top-neuron buttons (a click copies the neuron into MLP_NEURON)
SCANS = "attn.mlp.scans"  # this session's corpus results for models trained in it, by model
SHOWN, SHOWN_PROJECTOR = 12, 8  # top neurons in the table
EXAMPLES = 8  # top sentences listed
SHARED_SCANS = 4  # models whose corpus results the server keeps at once
MARKDOWN = re.compile(r"[\\`*_\[\]<>#|~$]")  # characters a token must not use as Markdown

CAPTION = N_("Each column is one neuron of this layer's MLP (the input of its down projection); a cell is how "
             "strongly it fires on that token. A neuron's top sentences show what excites it most in a small corpus "
             "— not everything it does: many neurons are polysemantic (they fire for several unrelated things), a "
             "few hundred sentences miss most of language, and a neuron that fires does not prove the model needed "
             "it.")


def offered(ctx: LensContext) -> str | None:
    """Every text model the Lab shows has MLPs, so the view always applies (the corpus part may not)."""
    return None


@st.cache_resource(show_spinner=False)
def _shared() -> tuple[dict[str, CorpusNeurons], threading.Lock]:
    """The server's corpus results by model: each entry is written once, when its scan completes, then only read
    (the oldest is dropped beyond :data:`SHARED_SCANS`)."""
    return {}, threading.Lock()


def _corpus_reader(ctx: LensContext) -> tuple[Reader | None, str, bool]:
    """How this model reads a corpus sentence, the key its results are kept under and whether they are shared; or
    ``(None, reason, False)`` when it cannot read English sentences."""
    if ctx.pre is not None:
        def read_pretrained(text: str):
            inp = encode(ctx.pre, text, MAX_TOKENS)
            return None if inp.empty else (inp.ids, inp.tokens)
        return read_pretrained, cache_key(ctx.pre), True
    if ctx.trained is not None:
        entry = ctx.trained
        try:
            vocab = trained_input(entry, "")[2]
        except ValueError as err:
            return None, str(err), False
        if coverage(list(vocab)) < MIN_COVERAGE:
            return None, _("The {task} model reads only its task's characters, so it cannot read the corpus of "
                           "English sentences. Train a *Character LM* to find its neurons' top sentences.").format(
                task=_(entry.task_title)), False

        def read_trained(text: str):
            lab = trained_input(entry, text)[0]
            return None if lab.empty else (lab.ids, lab.tokens)
        return read_trained, f"trained/{id(entry.model)}/{entry.step}", False
    s = settings()
    if s.kind != "sentence":
        return None, _("The random model reads amino acids or digits here, not English sentences: choose the "
                       "*Sentence* input to find its neurons' top sentences."), False

    def read_random(text: str):
        lab = tokenize(text, "sentence")
        return None if lab.empty else (lab.ids, lab.tokens)
    return read_random, f"random/{s.d_model}/{s.heads}/{s.layers}/{s.seed}", True


def _stored(key: str, shared: bool) -> CorpusNeurons | None:
    if shared:
        scans, lock = _shared()
        with lock:
            return scans.get(key)
    return st.session_state.get(SCANS, {}).get(key)


def _store(key: str, shared: bool, scan: CorpusNeurons) -> None:
    if shared:
        scans, lock = _shared()
        with lock:
            scans.setdefault(key, scan)
            while len(scans) > SHARED_SCANS:
                scans.pop(next(iter(scans)))
    else:  # one trained model per session at a time: its latest results only
        st.session_state[SCANS] = {key: scan}


def draw(ctx: LensContext) -> None:
    """The token × top-neuron table of the shown layer, the chosen neuron, and its top sentences in the corpus."""
    with evaluating(ctx.model):
        acts = neurons_of(ctx.model, ctx.shown.ids).float().cpu()  # (L, T, F)
    tops = top_neurons(acts[max(0, min(ctx.layer, acts.shape[0] - 1))], SHOWN_PROJECTOR if ctx.projector else SHOWN)
    acts = acts.numpy()
    layer = max(0, min(ctx.layer, acts.shape[0] - 1))
    tokens = list(stream_labels(ctx.shown.tokens, acts.shape[1]))
    here = acts[layer]  # (T, F)
    neuron = _neuron(tops, here.shape[1])
    cols = [f"n{i}" for i in tops]
    spec = hm.matrix_spec(here[:, tops], tokens, cols, diverging=True,
                          title=_("Layer {layer}: top neurons").format(layer=layer + 1))
    st.markdown(_("**Layer {layer}: the {n} neurons that fire most on your text** (of {width}; the layer picker "
                  "above chooses the layer)").format(layer=layer + 1, n=len(tops), width=num(here.shape[1])))
    matrix(here[:, tops], tokens, cols, key="attn.mlp.map")
    left, right = st.columns(2)
    with left:
        exports.picture_download(spec, name=f"neurons_layer{layer + 1}", key="attn.mlp.map",
                                 image_format=image_format())
    with right:
        st.download_button(_("CSV (every neuron × token)"), lambda: exports.matrix_csv(
            here, tokens, [str(i) for i in range(here.shape[1])]), file_name=f"neurons_layer{layer + 1}.csv",
            mime="text/csv", key="attn.mlp.csv", on_click="ignore",
            help=_("All {width} neurons of layer {layer} on every token of your text.").format(
                width=num(here.shape[1]), layer=layer + 1))
    _pick(tops, here.shape[1])
    peak = int(np.argmax(here[:, neuron]))
    st.markdown(_("Neuron **{neuron}** of layer {layer} fires most on “{token}” in your text ({value}).").format(
        neuron=neuron, layer=layer + 1, token=html.escape(tokens[peak]), value=num(float(here[peak, neuron]), 3)))
    _corpus(ctx, layer, neuron)
    st.caption(_(CAPTION))


def _neuron(tops: list[int], width: int) -> int:
    """The chosen neuron: the link's or typed one, else the text's top neuron."""
    chosen = st.session_state.get(MLP_NEURON, -1)
    if not isinstance(chosen, int) or not 0 <= chosen < width:
        st.session_state[MLP_NEURON] = tops[0]
        add_link_notice(MLP_NEURON, _("was changed to {value}: this layer's neurons are 0 to {last}.").format(
            value=tops[0], last=num(width - 1)))
        chosen = tops[0]
    return chosen


def _copy_pick() -> None:
    picked = st.session_state.get(PICK)
    if picked is not None:
        st.session_state[MLP_NEURON] = int(picked)


def _pick(tops: list[int], width: int) -> None:
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        st.pills(_("Pick a top neuron"), tops, key=PICK, on_change=_copy_pick, format_func=lambda i: f"n{i}",
                 help=_("Shows this neuron's top sentences in the corpus below."))
    with right:
        st.number_input(_("Or type a neuron"), min_value=0, max_value=width - 1, step=1, key=MLP_NEURON,
                        help=_("Any neuron of this layer, 0 to {last}.").format(last=width - 1))


def _corpus(ctx: LensContext, layer: int, neuron: int) -> None:
    read, key, shared = _corpus_reader(ctx)
    if read is None:
        st.info(key, icon="ℹ️")
        return
    scan = _stored(key, shared)
    if scan is None:
        scan = _scan_on_button(ctx, read, key, shared)
        if scan is None:
            return
    examples = scan.top(layer, neuron, EXAMPLES)
    fill = dict(neuron=neuron, read=num(scan.read), skipped=num(scan.skipped))
    st.markdown(_("**Sentences of the corpus that excite neuron {neuron} most** (its highest activation in each; the "
                  "token where it fires in bold; {read} sentences read, {skipped} with no token this model knows "
                  "skipped)").format(**fill) if scan.skipped else
                _("**Sentences of the corpus that excite neuron {neuron} most** (its highest activation in each; the "
                  "token where it fires in bold; {read} sentences read)").format(**fill))
    st.markdown("\n".join(f"{i + 1}. `{num(e.value, 3)}` " + _highlight(e) for i, e in enumerate(examples)))
    st.download_button(_("CSV (top sentences)"), lambda: _examples_csv(examples, layer, neuron),
                       file_name=f"neuron_{layer + 1}_{neuron}_sentences.csv", mime="text/csv",
                       key="attn.mlp.top_csv", on_click="ignore",
                       help=_("The top sentences with the neuron's activation and the token where it fires."))


def _highlight(e: Example) -> str:
    """The sentence as the model's tokens, the one where the neuron peaked in bold."""
    parts = [MARKDOWN.sub(r"\\\g<0>", html.escape(t)) for t in e.tokens]
    parts[e.position] = f"**[{parts[e.position]}]**"
    return " ".join(parts) if any(len(t) > 1 for t in e.tokens) else "".join(parts)


def _examples_csv(examples: list[Example], layer: int, neuron: int) -> str:
    return pd.DataFrame({_("layer"): layer + 1, _("neuron"): neuron, _("rank"): range(1, len(examples) + 1),
                         _("activation"): [e.value for e in examples],
                         _("token"): [e.tokens[e.position] for e in examples],
                         _("position"): [e.position for e in examples],
                         _("sentence"): [e.sentence for e in examples]}).to_csv(index=False)


def _scan_on_button(ctx: LensContext, read: Reader, key: str, shared: bool) -> CorpusNeurons | None:
    """The button that reads the corpus, its progress bar and Stop (all gone once it completes); the results."""
    n = len(corpus_sentences())
    box = st.empty()
    with box.container():
        if not st.button(_("Find its top sentences (reads {n} sentences once for this model)").format(n=num(n)),
                         key="attn.mlp.scan", icon=":material/search:",
                         help=_("Runs the model on every sentence of a small built-in corpus and keeps each neuron's "
                                "top sentences; later neurons and layers are then instant.")):
            return None
        st.button(_("Stop"), key="attn.mlp.stop", icon=":material/stop:", help=_("Stops reading the corpus."))
        said = _("Reading the corpus: {done} of {total} sentences")
        bar = st.progress(0.0, text=said.format(done=num(0), total=num(n)))

    def report(done: int, total: int) -> None:
        bar.progress(done / total, text=said.format(done=num(done), total=num(total)))


    try:
        with evaluating(ctx.model):  # a trained model as the Lab reads it (no dropout), its mode put back
            scan = scan_corpus(ctx.model, read, progress=report)
    except ValueError as err:
        box.warning(str(err), icon="⚠️")
        return None
    box.empty()
    _store(key, shared, scan)
    return scan
