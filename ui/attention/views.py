"""The Attention Lab's views below the controls: tokens, layer/head choice, one head, all heads, token lines."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st

from explorer.i18n import N_, _, ngettext, num
from explorer.lab.internals import head_summary
from explorer.lab.kv_groups import groups_caption, kv_head_of
from explorer.lab.text_input import PAD_TOKEN
from ui.attention.charts import (
    GRID_LONG_TITLES,
    MIN_LINE_WEIGHT,
    grid_figure,
    grid_label_step,
    lines_figure,
    numbers_table,
)
from ui.attention.keys import HEAD, JUMP_TO_HEAD, LAYER, LINES_FOCUS, LINES_SCOPE, VIEW, VIEWS
from ui.attention.lab_run import LabRun
from ui.common import charts, exports, tables

LRI, PDI = "\u2066", "\u2069"  # Unicode's left-to-right isolate and its end
LINES_SCOPES = (N_("this head"), N_("all heads of this layer"))  # the lines view's choices (English values)


def token_strip(tokens: Sequence[str]) -> None:
    """The tokens in order, with their positions.

    Each chip is a left-to-right isolate: right-to-left words (Arabic, Hebrew) otherwise pull the numbers of
    their neighbours into their run, and "3·على" shows beside the wrong word.
    """
    chips = " ".join(f"`{LRI}{i}·{t.replace('`', 'ˋ')}{PDI}`" for i, t in enumerate(tokens))
    st.markdown(_("**Tokens ({n}):** {chips}").format(n=num(len(tokens)), chips=chips))


def view_controls(run: LabRun, *, projector: bool = False) -> tuple[int, int, str]:
    """Layer, head (0-based) and view; in projector mode all three share one row, so the chart starts on the
    first screen of a 1024 × 768 projector."""
    columns = st.columns([1, 1, 3], vertical_alignment="bottom") if projector else None
    layer, head = layer_head_controls(run, columns=columns[:2] if columns else None)
    with columns[2] if columns else st.container():
        view = st.radio(_("View"), list(VIEWS), format_func=lambda v: _(VIEWS[v]), key=VIEW, horizontal=True,
                        label_visibility="collapsed", help=_("Which picture of the attention to draw."))
    return layer, head, view


def layer_head_controls(run: LabRun, columns: Sequence | None = None) -> tuple[int, int]:
    """Which layer and head the step-by-step, one-head and lines views show; returns 0-based indices.

    In the given ``columns`` (a row shared with other controls) they are drop-downs, which take one line.
    """
    shared = 0 < run.kv_heads < run.n_heads
    names = (lambda h: f"{h} · K/V {kv_head_of(h - 1, run.n_heads, run.kv_heads) + 1}") if shared else None
    return charts.layer_head_picker(len(run.steps), run.n_heads, keys=(LAYER, HEAD), columns=columns,
                                    radio_max=0 if columns else charts.RADIO_MAX, head_names=names, helps=(
        _("The block to take apart. Layer 1 reads the token embeddings; later layers read the output of the layer "
          "before."),
        _("The head to take apart. Every head has its own W^Q, W^K, W^V, so each attends in its own way.")
        + (" " + _("Heads marked with the same K/V head share one W^K and W^V (grouped-query attention) but have "
                   "their own W^Q.") if shared else "")))


def _padding_note(run: LabRun, weights: np.ndarray) -> None:
    if run.valid is None or all(run.valid):
        return
    pads = [j for j, ok in enumerate(run.valid) if not ok]
    received = float(weights[:, pads].sum())
    st.success(ngettext("The {n} `{pad}` column receives a total attention weight of {weight}: the padding mask "
                        "hides it from every query, so it changes nothing.",
                        "The {n} `{pad}` columns receive a total attention weight of {weight}: the padding mask "
                        "hides them from every query, so they change nothing.", len(pads))
               .format(n=num(len(pads)), pad=PAD_TOKEN, weight=num(received, 3)), icon="🧱")


HEAD_ANCHOR = "attn-one-head"  # the id of the One head view's place on the page
# Scrolls the One head view into sight once the page has drawn it (the chart arrives a moment after the anchor).
_JUMP_SCRIPT = """<div id="%(id)s" style="scroll-margin-top: 5rem"></div><script>
setTimeout(() => { const a = document.getElementById('%(id)s');
  if (a) a.scrollIntoView({behavior: 'smooth', block: 'start'}); }, 400);
</script>"""


def _jump_here(layer: int, head: int) -> None:
    """After a *Find the heads* button: scroll to this view and say what changed (once)."""
    if not st.session_state.pop(JUMP_TO_HEAD, False):
        return
    st.html(_JUMP_SCRIPT % {"id": HEAD_ANCHOR}, unsafe_allow_javascript=True)
    st.toast(_("Layer {layer}, head {head} is now in the One head view.").format(layer=layer + 1, head=head + 1),
             icon="🔍")


def one_head(run: LabRun, layer: int, head: int) -> None:
    """The chosen head's attention heatmap, its numbers as a table, and downloads."""
    _jump_here(layer, head)
    w, tok = run.steps[layer]["weights"][head], list(run.tokens)
    spec = charts.attention_spec(w, tok, tok, title=_("Layer {layer} · head {head} — each row sums to 1").format(
        layer=layer + 1, head=head + 1))
    fig = charts.spec_figure(spec, x_title=_("key (attended to)"), y_title=_("query (attending)"),
                             height=min(720, 120 + 44 * len(tok)))
    charts.show(fig, key="attn.one_head")
    _padding_note(run, w)
    st.caption(_("The camera icon above the chart saves it as PNG or SVG (*Chart downloads* in the sidebar); the "
                 "buttons save this matrix as a PNG picture, an SVG drawing, a CSV table or a NumPy array."))
    exports.spec_downloads(spec, name=f"attention_L{layer + 1}_H{head + 1}", key="attn.dl.head")
    with st.expander(_("The numbers (rows: queries, columns: keys)")):
        numbers_table(w, tok, tok)


def all_heads(run: LabRun) -> None:
    """Layers x heads grid of every attention map, and the whole tensor as downloads."""
    scale = (_("stretched to the lowest and highest weight") if charts.stretch_attention() else _("from 0 to 1"))
    text = (_("Every layer (rows) and head (columns, H1 = head 1) at once, on one colour scale {scale}.")
            if run.n_heads > GRID_LONG_TITLES else
            _("Every layer (rows) and head (columns) at once, on one colour scale {scale}.")).format(scale=scale)
    st.caption(text + " " + _("Hover a cell for its query, key and weight. “{mark}” marks a map whose rows barely "
                              "vary (max − min < {limit}).").format(mark=_(charts.UNIFORM_MARK),
                                                                     limit=num(charts.NEAR_UNIFORM, 2))
               + _grid_labels_note(run))
    if 0 < run.kv_heads < run.n_heads:
        st.caption(groups_caption(run.n_heads, run.kv_heads) + " " + _("Columns are titled with their K/V head."))
    charts.show(grid_figure(run), key="attn.grid")
    weights = run.weights()
    tok = list(run.tokens)
    st.markdown(_("**Download all attention weights** (layer × head × query × key)"))
    exports.tensor_downloads(weights, ("layer", "head", "query", "key"), name="attention_all", key="attn.dl.all",
                             labels={"query": tok, "key": tok}, value_name=_("weight"))
    with st.expander(_("Summary per head (numbers)")):
        summary = head_summary(weights)
        kv = run.kv_heads or run.n_heads
        tables.dataframe({_("layer"): np.repeat(np.arange(1, len(weights) + 1), run.n_heads),
                      _("head"): np.tile(np.arange(1, run.n_heads + 1), len(weights)),
                      **({_("K/V head"): np.tile(np.arange(run.n_heads) // (run.n_heads // kv) + 1, len(weights))}
                         if kv < run.n_heads else {}),
                      _("mean weight on itself"): np.round(summary.self_weight.numpy().ravel(), 3),
                      _("mean entropy (nats)"): np.round(summary.entropy.numpy().ravel(), 3)},
                     width="stretch", hide_index=True)


def _every(k: int, second: str, third: str, nth: str) -> str:
    """The words for labelling every ``k``-th token ("" when every one is labelled)."""
    return "" if k <= 1 else second if k == 2 else third if k == 3 else nth.format(n=k)


def _grid_labels_note(run: LabRun) -> str:
    """Why the grid labels only every k-th key or query, when it does."""
    _cell, x_step, y_step = grid_label_step(run)
    keys = _every(x_step, _("every second key along the bottom"), _("every third key along the bottom"),
                  _("every {n}th key along the bottom"))
    queries = _every(y_step, _("every second query down the side"), _("every third query down the side"),
                     _("every {n}th query down the side"))
    if not keys and not queries:
        return ""
    parts = _("{keys} and {queries}").format(keys=keys, queries=queries) if keys and queries else keys or queries
    return " " + _("Labelled: {parts}, since {n} labels do not fit beside maps this small (hover a cell, or use the "
                   "One head view, for every token).").format(parts=parts, n=num(len(run.tokens)))


def token_lines(run: LabRun, layer: int, head: int) -> None:
    """Queries on the left, keys on the right, lines as thick and dark as the weight (BertViz head view)."""
    tok = list(run.tokens)
    left, right = st.columns(2)
    with left:
        scope = st.radio(_("Heads"), list(LINES_SCOPES), key=LINES_SCOPE, horizontal=True,
                         format_func=_,
                         help=_("Draw the chosen head only, or every head of the layer in its own colour."))
    with right:
        if st.session_state.get(LINES_FOCUS) not in range(-1, len(tok)):
            st.session_state[LINES_FOCUS] = -1
        focus = st.selectbox(_("Query token"), list(range(-1, len(tok))), key=LINES_FOCUS,
                             format_func=lambda i: _("all tokens") if i < 0 else f"{i}·{tok[i]}",
                             help=_("Show only the lines leaving one query token."))
    weights = run.steps[layer]["weights"]
    heads = {head: weights[head]} if scope == "this head" else dict(enumerate(weights))
    charts.show(lines_figure(heads, tok, focus=None if focus < 0 else focus), key="attn.lines")
    dashed = len(heads) > len(charts.CATEGORICAL)
    st.caption(_("Lines lighter than {limit} are not drawn. Hover a token to read its strongest links; the One head "
                 "view has every number.").format(limit=num(MIN_LINE_WEIGHT, 2))
               + (" " + _("Heads {first} to {last} reuse the colours of heads 1 to {reused} with dashed lines.")
                  .format(first=len(charts.CATEGORICAL) + 1, last=len(heads),
                          reused=len(heads) - len(charts.CATEGORICAL)) if dashed else ""))
