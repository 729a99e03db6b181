"""Positional Encodings page: keys, URL settings, controls and the table, rotation and max_len sections."""

from __future__ import annotations

import itertools

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import N_, _, ngettext, num, vector
from explorer.i18n.quantities import three_digits
from explorer.lab.positional import (
    beyond_max_len,
    length_error,
    rotation_check,
    shifted_dot_product,
    similarity_matrix,
)
from explorer.lab.text_input import MAX_TEXT_CHARS
from explorer.render import heatmap as hm
from transformer_core.positional import sinusoidal_encoding
from ui.common import charts, exports, tables
from ui.common.theme import phone
from ui.common.urlstate import UrlParam, add_link_notice, settle_choice
from ui.common.vega_heatmap import show_vega, vega_heatmap

MAX_LEN = "pe.max_len"
D_MODEL = "pe.d_model"
BASE = "pe.base"
DIMS = "pe.dims"  # comma-separated dimensions (the URL form of DIMS_PICK)
DIMS_PICK = "pe.dims_pick"  # the multiselect's own key
DIMS_SYNCED = "pe.dims_synced"  # DIMS as last written from the multiselect
SECTION = "pe.section"
POS = "pe.pos"  # starting position of the rotation check
SHIFT = "pe.k"  # how many positions further it looks
PAIR = "pe.pair"  # frequency pair drawn on the unit circle
EXTRA = "pe.extra"  # positions past max_len
SHUFFLE_TEXT = "pe.shuffle_text"  # sentence of the shuffle test
SHUFFLE_SEED = "pe.shuffle_seed"  # seed of its permutation
PRETRAINED_MODEL = "pe.pretrained"  # the pretrained model whose position table Real models shows (menu label)
PRETRAINED_SHOWN = "pe.pretrained_shown"  # how many of its first positions the tables and similarity show
LEARNED_SOURCE = "pe.learned_source"  # whose learned table Compare encodings shows: "random" or a trained family

MAX_LEN_RANGE = (8, 256)
D_MODELS = (8, 16, 32, 64, 128, 256)
BASES = (10.0, 100.0, 1000.0, 10000.0, 100000.0)
MAX_DIMS = 8  # curves drawn at most
EXTRA_RANGE = (4, 128)
SHUFFLE_MAX_CHARS = MAX_TEXT_CHARS  # a pasted paragraph is taken and cut to its first words
SECTIONS = {"table": N_("The table"), "relative": N_("Relative positions"), "beyond": N_("Beyond max_len"),
            "compare": N_("Compare encodings"), "pretrained": N_("Real models"), "shuffle": N_("Shuffle test")}

URL_PARAMS = (
    UrlParam(MAX_LEN, 64, lo=MAX_LEN_RANGE[0], hi=MAX_LEN_RANGE[1]),
    UrlParam(D_MODEL, 32, choices=D_MODELS),
    UrlParam(BASE, 10000.0, choices=BASES),
    UrlParam(DIMS, "0,1,10,20", max_chars=200),
    UrlParam(SECTION, "table", choices=tuple(SECTIONS)),
    UrlParam(POS, 3, lo=0, hi=MAX_LEN_RANGE[1] - 3),
    UrlParam(SHIFT, 2, lo=1, hi=MAX_LEN_RANGE[1] - 1),
    UrlParam(PAIR, 0, lo=0, hi=max(D_MODELS) // 2 - 1),
    UrlParam(EXTRA, 32, lo=EXTRA_RANGE[0], hi=EXTRA_RANGE[1]),
    UrlParam(SHUFFLE_TEXT, "the cat sat on the mat", max_chars=SHUFFLE_MAX_CHARS),
    UrlParam(SHUFFLE_SEED, 1, lo=0, hi=9999),
)


# Settings kept for the whole session.
KEPT = (*(p.key for p in URL_PARAMS), LEARNED_SOURCE, PRETRAINED_MODEL, PRETRAINED_SHOWN)


def init_page_state() -> None:
    """Set the page's defaults (after ``open_page`` has put back the settings of an earlier visit)."""
    for p in URL_PARAMS:
        st.session_state[p.key] = st.session_state.get(p.key, p.default)


def parse_dims(text: str, d_model: int) -> tuple[list[int], list[str]]:
    """Dimensions from ``"0,1,10"``; returns the valid ones (each once) and the rejected pieces."""
    dims, bad = [], []
    for piece in str(text).split(","):
        piece = piece.strip()
        if not piece:
            continue
        if piece.isdigit() and int(piece) < d_model:
            if int(piece) not in dims:
                dims.append(int(piece))
        else:
            bad.append(piece)
    return dims, bad


def table_controls(*, projector: bool) -> tuple[int, int, float]:
    """max_len, d_model and base; returns them."""
    cols = st.columns(3 if not projector else 2)
    with cols[0]:
        max_len = st.slider("max_len", 8, 256, key=MAX_LEN,
                            help=_("Number of positions in the table: the longest sequence a model with this table "
                                   "can read."))
    with cols[1]:
        d_model = st.select_slider("d_model", D_MODELS, key=D_MODEL,
                                   help=_("Width of each position vector: d_model / 2 sine-cosine pairs, each at its "
                                          "own frequency."))
    if not projector:
        with cols[2]:
            st.select_slider("base", BASES, key=BASE, format_func=lambda b: num(b, 0),
                             help=_("Sets the slowest frequency: pair i turns at 1 / base^(2i/d_model) radians per "
                                    "position. A larger base gives longer wavelengths (the paper uses {base}).").format(
                                 base=num(10000)))
    return max_len, d_model, float(st.session_state[BASE])


def dims_control(d_model: int) -> list[int]:
    """The dimensions whose curves are drawn (kept in the URL as ``pe.dims``)."""
    text = st.session_state.get(DIMS, "")
    dims, bad = parse_dims(text, d_model)
    current = st.session_state.get(DIMS_PICK)
    # Take the text form when it changed outside the widget (a link) or the widget state was dropped.
    if current is None or text != st.session_state.get(DIMS_SYNCED):
        st.session_state[DIMS_PICK] = dims[:MAX_DIMS]
        _dims_notice(dims, bad, d_model)
    picked = st.multiselect(_("Dimensions to plot"), list(range(d_model)), key=DIMS_PICK, max_selections=MAX_DIMS,
                            help=_("Columns of the table drawn as curves over the positions. Even columns are "
                                   "sines, odd columns cosines; higher columns turn more slowly."))
    st.session_state[DIMS] = st.session_state[DIMS_SYNCED] = ",".join(map(str, picked))
    return picked


def _dims_notice(dims: list[int], bad: list[str], d_model: int) -> None:
    """Say which of the text's dimensions are not drawn: under the title for a link, else here."""
    reasons = []
    if bad:
        reasons.append(ngettext("{pieces} is not among d_model {d_model}'s dimensions 0 to {last}",
                                "{pieces} are not among d_model {d_model}'s dimensions 0 to {last}", len(bad)).format(
            pieces=", ".join(bad), d_model=d_model, last=d_model - 1))
    if len(dims) > MAX_DIMS:
        reasons.append(_("the chart draws at most {most} curves").format(most=MAX_DIMS))
    if not reasons:
        return
    kept = ",".join(map(str, dims[:MAX_DIMS])) or _("none")
    why = "; ".join(reasons)
    if not add_link_notice(DIMS, _("was changed to {kept}: {why}.").format(kept=kept, why=why)):
        st.info(_("Dimensions changed to {kept}: {why}.").format(kept=kept, why=why), icon="🔗")


VEGA_TABLE_CELLS = 16_384  # up to this many cells the table is a Vega-Lite chart: it draws with the page, where
# Plotly's library loads first (a grey box for a second); beyond, Plotly's one-image heatmap draws them faster


def centred_ticks(count: int, most: int = 12) -> list[float]:
    """Ticks at the middles of cells 0, k, 2k, … of ``count`` cells (cell ``i`` spans ``i`` to ``i + 1`` on the
    axis), ``k`` the smallest of 1, 2, 5, 10, 20, 50, … that makes at most ``most`` of them."""
    step = next(m * 10**k for k in itertools.count() for m in (1, 2, 5) if count / (m * 10**k) <= most)
    return [k + 0.5 for k in range(0, count, step)]


def _table_chart(table: np.ndarray) -> None:
    """The sinusoidal table as a heatmap, positions down and dimensions across, the value on hover."""
    max_len, d_model = table.shape
    title = _("Sinusoidal table: {positions} positions × {dims} dimensions").format(positions=num(max_len),
                                                                                   dims=num(d_model))
    height = min(640, 120 + 6 * max_len)
    if table.size > VEGA_TABLE_CELLS:
        charts.show(charts.heatmap(table, None, None, diverging=True, x_title=_("dimension"), y_title=_("position"),
                                   title=title, height=height, hover_name="PE"), key="pe.table")
        return
    spec = hm.matrix_spec(table, diverging=True, title=title, hover_name="PE")
    data, chart = vega_heatmap(spec, height=height - 80, x_title=_("dimension"), y_title=_("position"),
                               projector=charts.projector())
    # numbers on the axes, not one label per cell: each under the middle of its cell (cell k spans k to k + 1)
    for axis, title_text, count in (("x", _("dimension"), d_model), ("y", _("position"), max_len)):
        chart["layer"][0]["encoding"][axis]["axis"] = {
            "title": title_text, "grid": False, "values": centred_ticks(count), "labelExpr": "datum.value - 0.5",
            "labelColor": charts.label_colour(), "labelFontSize": max(11, charts.font_size() - 2),
            "titleColor": charts.label_colour()}
    show_vega((data, chart), key="pe.table")


def table_section(max_len: int, d_model: int, base: float) -> None:
    """The table as a heatmap, curves of chosen dimensions and the position-to-position dot products."""
    table = sinusoidal_encoding(max_len, d_model, base).numpy()
    sine = r"PE_{pos,\,2i} = \sin\!\left(\frac{pos}{base^{2i/d_{model}}}\right)"
    cosine = r"PE_{pos,\,2i+1} = \cos\!\left(\frac{pos}{base^{2i/d_{model}}}\right)"
    for formula in (sine, cosine) if phone() else (sine + r" \qquad " + cosine,):  # a phone cut the second off
        st.latex(formula)
    _table_chart(table)
    with st.expander(_("The numbers and downloads")):
        exports.matrix_downloads(table, None, None, name=f"sinusoidal_{max_len}x{d_model}", key="pe.dl.table",
                                 title=_("Sinusoidal positional encoding"), diverging=True)
        tables.dataframe(np.round(table, 4), width="stretch")
    dims = dims_control(d_model)
    if dims:
        pos = list(range(max_len))
        series = {_("dim {dim} ({function})").format(dim=d, function="sin" if d % 2 == 0 else "cos"): (pos, table[:, d])
                  for d in dims}
        charts.show(charts.line_chart(series, x_title=_("position"), y_title=_("PE value"), height=300),
                    key="pe.curves")
    sim = similarity_matrix(sinusoidal_encoding(max_len, d_model, base)).numpy()
    st.markdown(_("**Position-to-position similarity** — dot product PE(a) · PE(b). It depends only on the "
                  "distance b − a, so every diagonal is constant."))
    charts.show(charts.heatmap(sim, None, None, x_title=_("position b"), y_title=_("position a"),
                               hover_name=_("dot product"), height=min(640, 120 + 6 * max_len)), key="pe.similarity")
    with st.expander(_("Similarity downloads")):
        exports.matrix_downloads(sim, None, None, name=f"pe_similarity_{max_len}", key="pe.dl.sim",
                                 title="PE(a) · PE(b)")


def _circle_figure(table_pair: np.ndarray, pos: int, k: int, pair: int) -> go.Figure:
    """All positions of one frequency pair on the unit circle, with pos and pos + k marked."""
    fig = go.Figure(go.Scatter(x=table_pair[:, 1], y=table_pair[:, 0], mode="markers+lines", name=_("positions"),
                               marker=dict(size=5, color="#888"), line=dict(color="#ccc"),
                               hovertext=[_("pos {pos}").format(pos=p) for p in range(len(table_pair))],
                               hoverinfo="text"))
    for p, colour in ((pos, "#1f77b4"), (pos + k, "#d62728")):
        name = _("pos {pos}").format(pos=p)
        fig.add_trace(go.Scatter(x=[0, table_pair[p, 1]], y=[0, table_pair[p, 0]], mode="lines+markers",
                                 name=name, line=dict(color=colour, width=3), marker=dict(size=[0, 12])))
    fig.update_xaxes(title=_("cos (dim {dim})").format(dim=2 * pair + 1), range=[-1.2, 1.2], scaleanchor="y")
    fig.update_yaxes(title=_("sin (dim {dim})").format(dim=2 * pair), range=[-1.2, 1.2])
    charts.style(fig, title=_("Pair {pair}: every position on the unit circle").format(pair=pair), height=400)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0))
    return fig


def relative_section(max_len: int, d_model: int, base: float) -> None:
    """PE(pos + k) = R_k · PE(pos): one 2×2 rotation per frequency pair, the same for every pos."""
    cols = st.columns(3)
    # pos stops at max_len - 3 so that k still has two values to slide between.
    settle_choice(POS, range(max_len - 2),
                  why=_("with max_len {max_len}, pos goes from 0 to {last}").format(max_len=max_len, last=max_len - 3))
    with cols[0]:
        pos = st.slider("pos", 0, max_len - 3, key=POS, help=_("The starting position."))
    settle_choice(SHIFT, range(1, max_len - pos),
                  why=_("pos {pos} + k must stay below max_len {max_len}, so k goes from 1 to {last}").format(
                      pos=pos, max_len=max_len, last=max_len - 1 - pos))
    with cols[1]:
        k = st.slider(_("shift k"), 1, max_len - 1 - pos, key=SHIFT, help=_("How many positions further to look."))
    settle_choice(PAIR, range(d_model // 2),
                  why=_("d_model {d_model} has pairs 0 to {last}").format(d_model=d_model, last=d_model // 2 - 1))
    with cols[2]:
        pair = st.slider(_("frequency pair i"), 0, d_model // 2 - 1, key=PAIR,
                         help=_("Which (sin, cos) pair to draw: columns 2i and 2i+1."))
    check = rotation_check(max_len, d_model, base, pos=pos, k=k)
    no_p = _("no {p} inside").format(p=r"}p\text{")  # p in the formula's italics, the words upright
    st.latex(r"\begin{pmatrix}\sin\omega_i(p+k)\\ \cos\omega_i(p+k)\end{pmatrix} = "
             r"\underbrace{\begin{pmatrix}\cos k\omega_i & \sin k\omega_i\\ -\sin k\omega_i & \cos k\omega_i"
             r"\end{pmatrix}}_{R_k \text{ (" + no_p + r")}}\begin{pmatrix}\sin\omega_i p\\ \cos\omega_i p"
             r"\end{pmatrix}")
    pair_i, angle = _("pair i"), _("angle kω_i (rad)")
    from_table = _("PE({position}) from the table").format(position=pos + k)
    rows = [{pair_i: i, "ω_i": num(float(check.omegas[i]), 5), angle: num(k * float(check.omegas[i]), 4),
             "R_k": vector(check.rotations[i].tolist(), 3), f"PE({pos})": vector(check.pe_pos[i].tolist(), 4),
             f"R_k·PE({pos})": vector(check.predicted[i].tolist(), 4),
             from_table: vector(check.pe_shifted[i].tolist(), 4)}
            for i in range(d_model // 2)]
    st.dataframe(rows, hide_index=True, width="stretch", height=min(400, 38 + 35 * len(rows)))
    left, right = st.columns([2, 3], vertical_alignment="center")
    with left:
        st.metric(_("max |R_k·PE(p) − PE(p+{k})| over all p").format(k=k), three_digits(check.max_error),
                  help=_("Over every position p and every frequency pair. Rounding error only: the same rotation "
                         "works at every position."))
        st.markdown(_("The dot product PE(p) · PE(p + {k}) = Σᵢ cos({k}·ωᵢ) = **{value}** for every p: similarity "
                      "depends on the distance only.").format(k=k, value=num(shifted_dot_product(d_model, k, base), 3)))
    with right:
        table = sinusoidal_encoding(max_len, d_model, base).numpy()
        charts.show(_circle_figure(table[:, 2 * pair: 2 * pair + 2], pos, k, pair), key="pe.circle")
    st.caption(_("Because R_k does not depend on the position, a linear map in attention can turn 'the token k "
                 "places back' into a fixed query direction: relative positions are learnable."))


def beyond_section(max_len: int, d_model: int, base: float) -> None:
    """The formula past max_len, how new positions resemble old ones, and a learned table's error."""
    extra = st.slider(_("Positions past max_len"), *EXTRA_RANGE, key=EXTRA,
                      help=_("How far past max_len to evaluate the formula."))
    info = beyond_max_len(max_len, d_model, base, extra=extra)
    fig = charts.heatmap(info.table.numpy(), None, None, diverging=True, x_title=_("dimension"),
                         y_title=_("position"),
                         title=_("Sinusoidal table to position {last}; the line marks max_len").format(
                             last=max_len + extra - 1),
                         height=min(640, 120 + 5 * (max_len + extra)), hover_name="PE")
    fig.add_hline(y=max_len - 0.5, line=dict(color="black", width=3, dash="dash"))
    charts.show(fig, key="pe.beyond")
    exports.numbers_popover(info.table.numpy(), None, None, name=f"sinusoidal_{max_len + extra}x{d_model}",
                            key="pe.num.beyond", label=_("Numbers of this table"))
    positions = list(range(max_len, max_len + extra))
    charts.show(charts.line_chart({_("closest seen position"): (positions, info.nearest_seen.numpy())},
                                  x_title=_("new position"), y_title=_("cosine similarity"), height=260,
                                  title=_("How much each new position looks like one the model has seen")),
                key="pe.nearest")
    slowest = float(info.wavelengths[-1])
    st.markdown(_("- **Sinusoidal:** the formula gives every position a vector, so nothing breaks — but a model "
                  "trained up to {max_len} never saw these vectors. The slowest pair repeats only every "
                  "{wavelength} positions, so new positions stay distinct.\n"
                  "- **Learned:** the table has exactly {max_len} rows. One position more and the model stops:").format(
        max_len=max_len, wavelength=num(slowest, 0)))
    st.code(length_error(info.learned_error) or _("(no error)"), language=None)
