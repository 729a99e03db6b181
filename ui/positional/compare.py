"""Positional Encodings page: every registered encoding side by side, and the shuffle test."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from explorer.i18n import _, num
from explorer.i18n.quantities import three_digits
from explorer.lab.positional import (
    ShuffleResult,
    learned_table,
    length_error,
    position_views,
    run_past_max_len,
    score_bias,
    shuffle_permutation,
    shuffle_test,
)
from explorer.lab.text_input import tokenize
from transformer_core import positional
from ui.common import charts, exports, state, tables
from ui.common.theme import wrapping_columns
from ui.positional import labels
from ui.positional.views import EXTRA, LEARNED_SOURCE, SHUFFLE_MAX_CHARS, SHUFFLE_SEED, SHUFFLE_TEXT

SHUFFLE_MAX_TOKENS = 16
LEARNED_STD = 0.02  # the spread of a learned table's random start (transformer_core.positional.learned)
BIAS_HEADS = 8  # heads drawn for encodings that bias the scores: the first and the last slope


def learned_tables() -> dict[str, tuple[torch.Tensor, str]]:
    """The learned position tables of the models trained in this session: family -> (table, whose it is)."""
    tables = {}
    for entry in state.trained_models():
        table = learned_table(entry.model)
        if table is not None:
            tables[entry.family] = (table, _("{task} model (step {step})").format(task=_(entry.task_title),
                                                                                 step=num(entry.step)))
    return tables


def learned_choice() -> tuple[torch.Tensor | None, str]:
    """The learned table the Learned panel shows: a trained model's (a choice when there are several) or a
    random start; returns (table or None, whose it is)."""
    tables = learned_tables()
    options = ["random", *tables]
    if st.session_state.get(LEARNED_SOURCE) not in options:
        st.session_state[LEARNED_SOURCE] = options[-1]  # a trained table is the more telling default
    if tables:
        st.radio(_("Learned table"), options, key=LEARNED_SOURCE, horizontal=True,
                 format_func=lambda f: _("Random start") if f == "random" else _("Trained: {model}").format(
                     model=tables[f][1]),
                 help=_("Which learned position table the Learned panels show: a random start (std {std}, as before "
                        "training, sized by max_len and d_model) or the table of a model trained on Live Training.")
                 .format(std=num(LEARNED_STD, 2)))
    if st.session_state[LEARNED_SOURCE] == "random":
        return None, _("a random start (std {std}), as before training").format(std=num(LEARNED_STD, 2))
    table, whose = tables[st.session_state[LEARNED_SOURCE]]
    return table, _("the learned table of the {model}: {positions} positions × {dims} dimensions").format(
        model=whose, positions=num(table.shape[0]), dims=num(table.shape[1]))


def _row(mats: list[np.ndarray], titles: list[str], *, zmin: float, zmax: float, diverging: bool, height: int,
         x_title: str, y_title: str):
    """One panel per encoding, without numbers in the cells (the tables are too big to read them)."""
    return charts.heatmap_row(mats, titles, zmin=zmin, zmax=zmax, diverging=diverging, numbers=False,
                              height=height, x_title=x_title, y_title=y_title, y_ticks="all", spacing=0.05,
                              categories=False)


def compare_section(max_len: int, d_model: int, base: float) -> None:
    """The same token vector at every position under each encoding, and how alike positions then look."""
    table, source = learned_choice()
    views = {}
    for kind in positional.kinds():
        if kind == "learned" and table is not None:
            views[kind] = position_views(kind, table.shape[0], table.shape[1], base, learned_table=table)
        else:
            views[kind] = position_views(kind, max_len, d_model, base)
    st.markdown(_("One token vector **u** placed at every position.") + " " + " ".join(
        _("**{encoding}** {summary}.").format(encoding=labels.short(k), summary=labels.summary(k)) for k in views))
    if table is not None:
        learned = _("The **Learned** panels show {source}. That table has its own size: the max_len and d_model "
                    "controls above do not change it.").format(source=source)
    else:
        learned = _("The **Learned** panels show {source}.").format(source=source)
    st.info(learned, icon="📋")
    titles = [labels.short(k) if k != "learned" or table is None
              else _("Learned (trained, {positions} positions)").format(positions=num(table.shape[0]))
              for k in views]
    height = min(520, 140 + 4 * max_len)
    vectors = [v[0].numpy() for v in views.values()]
    bound = max(float(np.abs(v).max()) for v in vectors)
    charts.show(_row(vectors, titles, zmin=-bound, zmax=bound, diverging=True, height=height,
                      x_title=_("dimension"), y_title=_("position")), key="pe.compare.vectors")
    st.markdown(_("**How alike two positions look** — cosine similarity of the vectors at positions a and b. "
                  "All ones (one flat colour) means the model cannot tell positions apart."))
    sims = [v[1].numpy() for v in views.values()]
    low = min(float(s.min()) for s in sims)
    charts.show(_row(sims, titles, zmin=min(low, 0.99), zmax=1, diverging=False, height=height,
                      x_title=_("position b"), y_title=_("position a")), key="pe.compare.sims")
    cols = wrapping_columns(len(views), key="pe-compare-numbers")  # "Sinusförmig: Ähnlichkeit" whole at 1024 pixels
    for col, (kind, (vec, sim)) in zip(cols, views.items(), strict=True):
        with col:
            exports.numbers_popover(vec.numpy(), None, None, name=f"{kind}_vectors", key=f"pe.num.vec.{kind}",
                                    label=_("{encoding}: vectors").format(encoding=labels.short(kind)))
            exports.numbers_popover(sim.numpy(), None, None, name=f"{kind}_similarity", key=f"pe.num.sim.{kind}",
                                    label=_("{encoding}: similarity").format(encoding=labels.short(kind)))
    for kind in _bias_kinds():
        st.markdown(_("**{encoding} leaves the vectors alone** — its positions live in the attention scores "
                      "instead:").format(encoding=labels.short(kind)))
        _bias_panels(kind, max_len, key=f"pe.compare.bias.{kind}")
    encoding, neighbours = _("encoding"), _("similarity of neighbours (a, a+1)")
    apart, lowest = _("similarity 8 apart"), _("lowest similarity")
    rows = [{encoding: labels.short(k), neighbours: round(float(np.diag(s, 1).mean()), 4),
             apart: round(float(np.diag(s, 8).mean()), 4) if len(s) > 8 else None,
             lowest: round(float(s.min()), 4)} for k, s in zip(views, sims, strict=True)]
    tables.dataframe(rows, hide_index=True, width="stretch")


def every_encoding_past_max_len(max_len: int, d_model: int, base: float) -> None:
    """One small random model per encoding, built for max_len and fed a longer sequence; score biases drawn."""
    extra = int(st.session_state[EXTRA])
    runs = run_past_max_len(max_len, d_model, base, extra=extra)
    st.markdown(_("**Every encoding, for real** — a small random encoder per encoding, built with "
                  "max_len={max_len}, is fed {tokens} tokens:").format(max_len=max_len, tokens=num(max_len + extra)))
    encoding, happens = _("encoding"), _("what happens")
    finite, not_finite = _("outputs are finite numbers"), _("outputs are not finite")
    tables.dataframe([{encoding: labels.title(r.kind),
                   _("runs on {tokens} tokens").format(tokens=num(r.length)): _("no") if r.error else _("yes"),
                   happens: length_error(r.error) or (finite if r.finite else not_finite)}
                  for r in runs], hide_index=True, width="stretch")
    for kind in _bias_kinds():
        _bias_panels(kind, max_len + extra, key=f"pe.beyond.bias.{kind}")
        st.caption(_("The bias is a formula of the distance, so positions past max_len={max_len} get one too: "
                     "nothing was learned per position.").format(max_len=max_len))


def _bias_kinds() -> list[str]:
    return [k for k in positional.kinds() if positional.get(k).acts == "bias"]


def _bias_panels(kind: str, length: int, *, key: str) -> None:
    """The score bias of the first and the last head of an encoding that acts on the attention scores."""
    name, bias = labels.short(kind), score_bias(kind, BIAS_HEADS, length)  # (H, L, L)
    head = _("{encoding}: head {head} of {heads}")
    fig = _row([bias[0].numpy(), bias[-1].numpy()], [head.format(encoding=name, head=1, heads=BIAS_HEADS),
                                                    head.format(encoding=name, head=BIAS_HEADS, heads=BIAS_HEADS)],
               zmin=float(bias.min()), zmax=0.0, diverging=False, height=min(560, 160 + 10 * length),
               x_title=_("key position"), y_title=_("query position"))
    charts.show(fig, key=key)
    st.caption(_("{encoding} {summary}. Bias added to the score of query a for key b (0 = no change, more negative "
                 "= less attention).").format(encoding=name, summary=labels.summary(kind)))


@st.cache_data(max_entries=32, show_spinner=False)
def _shuffle(ids: tuple[int, ...], perm: tuple[int, ...], positional: str) -> ShuffleResult:
    """The shuffle test (a pure function of its arguments, so cached)."""
    return shuffle_test(ids, perm, positional=positional)


def shuffle_section() -> None:
    """A real forward pass on a sentence and on a shuffled copy, without and with positional encoding."""
    left, right = st.columns([3, 1])
    with left:
        text = st.text_input(_("Sentence"), key=SHUFFLE_TEXT, max_chars=SHUFFLE_MAX_CHARS,
                             help=_("The tokens fed to a small random 2-layer encoder (at most {most} words).").format(
                                 most=SHUFFLE_MAX_TOKENS))
    with right:
        seed = st.number_input(_("Shuffle seed"), 0, 9999, key=SHUFFLE_SEED,
                               help=_("Picks the permutation of the tokens."))
    lab = tokenize(text, "sentence", max_tokens=SHUFFLE_MAX_TOKENS)
    for notice in lab.notices():
        st.info(notice, icon="✂️")
    if len(lab.tokens) < 2:
        st.info(_("Type at least two words to shuffle."), icon="⌨️")
        return
    perm = shuffle_permutation(len(lab.tokens), int(seed))
    shuffled = [lab.tokens[i] for i in perm]
    st.markdown(_("Original: {original}  \nShuffled: {shuffled}").format(
        original=f"`{' '.join(lab.tokens)}`", shuffled=f"`{' '.join(shuffled)}`"))
    cols = wrapping_columns(2, key="pe-shuffle", per_row=1)  # two maps a side need the width of a page
    for col, kind in zip(cols, ("none", "sinusoidal"), strict=True):
        result = _shuffle(tuple(lab.ids), tuple(perm), kind)
        with col:
            st.markdown("**" + (_("No positional encoding") if kind == "none" else _("Sinusoidal positional encoding"))
                        + "**")
            same = result.max_diff < 1e-4
            st.metric(_("max |f(shuffled) − shuffled f(original)|"), three_digits(result.max_diff),
                      help=_("0 (up to rounding) means the outputs were merely permuted."))
            st.caption(_("Outputs are the same rows, just reordered: the model cannot see word order.") if same else
                       _("Outputs change, not just their order: the model sees where each word is."))
            permuted, outputs = result.outputs.numpy()[perm], result.shuffled_outputs.numpy()
            dims = [str(i) for i in range(outputs.shape[1])]
            charts.side_by_side([permuted, outputs], [_("f(original), rows shuffled"), _("f(shuffled)")], shuffled,
                                dims, key=f"pe.shuffle.{kind}", numbers=False)
            left, right = st.columns(2)
            with left:
                exports.numbers_popover(permuted, shuffled, dims, name=f"{kind}_original_shuffled",
                                        key=f"pe.num.orig.{kind}", label=_("f(original), shuffled"))
            with right:
                exports.numbers_popover(outputs, shuffled, dims, name=f"{kind}_shuffled", key=f"pe.num.shuf.{kind}",
                                        label=_("f(shuffled)"))
