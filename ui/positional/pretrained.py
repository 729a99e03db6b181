"""Positional Encodings page, Real models: a pretrained GPT-2's or BERT's learned positions beside the sinusoidal
table — the table, how alike its positions are, and its first principal components."""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.i18n import _, num, percent
from explorer.pretrained.positions import TEXT_FAMILIES, PositionPCA, PositionTables, position_tables
from ui.common import charts, exports
from ui.common.pretrained import load_shared, models_on_offer, pick_model
from ui.positional.views import PRETRAINED_MODEL, PRETRAINED_SHOWN

SHOWN_RANGE = (8, 256)  # positions drawn in the tables and similarity maps (GPT-2 has 1,024: too many to see)
SHOWN_DEFAULT = 64


def pretrained_section() -> None:
    """Pick a pretrained GPT-2 or BERT and draw its learned position table beside the sinusoidal one."""
    st.markdown(_("GPT-2 and BERT do not use the sinusoidal formula: they **learn** one vector per position during "
                  "pre-training. Here is what a published model learned, next to the sinusoidal table of the same "
                  "size."))
    offer = pick_model(PRETRAINED_MODEL, TEXT_FAMILIES)
    pretrained = load_shared(offer, models_on_offer().budget_bytes) if offer else None
    if pretrained is None:
        return
    tables = position_tables(pretrained, _positions_shown(pretrained.config.max_len))
    n, width = tables.shown.shape
    st.info(_("Showing the learned position table of **{model}**: {positions} positions × {dims} dimensions (the "
              "first {n} drawn), beside the sinusoidal table of {n} × {dims} (base {base}). The controls at the top "
              "of the page do not change either.").format(model=tables.whose, positions=num(tables.table.shape[0]),
                                                          dims=num(width), n=num(n), base=num(10000)), icon="📋")
    _tables(tables)
    _pca(tables.pca, tables.whose)


def _positions_shown(length: int) -> int:
    """The "Positions shown" slider, bounded by the model's own number of positions."""
    high = min(SHOWN_RANGE[1], length)
    low = min(SHOWN_RANGE[0], high - 1)
    value = st.session_state.get(PRETRAINED_SHOWN, SHOWN_DEFAULT)
    st.session_state[PRETRAINED_SHOWN] = max(low, min(high, int(value)))
    return int(st.slider(_("Positions shown"), low, high, key=PRETRAINED_SHOWN,
                         help=_("How many of the model's first positions the tables and similarity maps draw; the "
                                "principal components below always use the whole table.")))


def _tables(tables: PositionTables) -> None:
    n = tables.shown.shape[0]
    height = min(560, 160 + 3 * n)
    titles = [_("Learned: {model}").format(model=tables.whose), _("Sinusoidal, same size")]
    learned, sinusoidal = tables.shown.numpy(), tables.sinusoidal.numpy()
    st.markdown(_("**The tables** — one row per position, one column per dimension. Each panel has its own colour "
                  "range: learned values are much smaller than the sinusoids' ±1."))
    cols = st.columns(2)
    for col, mat, title, key in zip(cols, (learned, sinusoidal), titles, ("learned", "sinusoidal"), strict=True):
        bound = float(np.abs(mat).max()) or 1.0
        with col:
            charts.show(charts.heatmap(mat, title=title, x_title=_("dimension"), y_title=_("position"),
                                       diverging=True, zmin=-bound, zmax=bound, height=height,
                                       hover_name=_("value"), numbers=False),
                        key=f"pe.pre.table.{key}")
    st.markdown(_("**How alike two positions look** — cosine similarity of the vectors at positions a and b. A "
                  "bright band along the diagonal means neighbouring positions look alike."))
    sims = [tables.similarity.numpy(), tables.sinusoidal_similarity.numpy()]
    charts.show(charts.heatmap_row(sims, titles, zmin=min(float(s.min()) for s in sims), zmax=1.0, diverging=False,
                                   numbers=False, height=height, x_title=_("position b"), y_title=_("position a"),
                                   y_ticks="all", spacing=0.06, categories=False), key="pe.pre.sims")
    left, right = st.columns(2)
    with left:
        exports.numbers_popover(learned, None, None, name="learned_positions", key="pe.pre.num.table",
                                label=_("Learned table: numbers"))
    with right:
        exports.numbers_popover(sims[0], None, None, name="learned_position_similarity", key="pe.pre.num.sim",
                                label=_("Learned similarity: numbers"))


def _pca(pca: PositionPCA, whose: str) -> None:
    st.markdown(_("**Its first principal components** — the directions along which the positions differ most. "
                  "Each curve is one direction: where every position of the whole table lies along it."))
    positions = list(range(pca.scores.shape[0]))
    series = {_("PC{n} ({share} of the variance)").format(n=j + 1, share=percent(pca.explained[j].item())):
              (positions, pca.scores[:, j].numpy()) for j in range(pca.scores.shape[1])}
    charts.show(charts.line_chart(series, x_title=_("position"), y_title=_("coordinate"), height=320,
                                  title=_("Principal components of {model}'s positions").format(model=whose)),
                key="pe.pre.pca")
    if pca.scores.shape[1] >= 2:
        path = {_("positions in order"): (pca.scores[:, 0].numpy(), pca.scores[:, 1].numpy())}
        charts.show(charts.line_chart(path, x_title="PC1", y_title="PC2", height=360,
                                      title=_("PC2 against PC1: the path the positions trace")), key="pe.pre.path")
        st.caption(_("Smooth curves mean the model learned that nearby positions are alike, much as the sinusoids "
                     "build it in; a random table would give jagged noise here."))
