"""The Attention Lab's step-by-step view: X → Q, K, V → QKᵀ → ÷√d_k → mask → softmax → ×V → concat → W_O, then
the block's MLP half (:mod:`ui.attention.mlp_steps`) up to the layer's output.

Each step is one row: the formula and a worked example on the left, the matrix on the right.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from explorer.i18n import _, num
from explorer.lab.kv_groups import heads_text, kv_groups, kv_head_of
from explorer.render import heatmap as hm
from ui.attention.charts import dot_example, head_blocks, masked_matrix, matrix, matrix_row, softmax_example
from ui.attention.keys import NUMBERS
from ui.attention.lab_run import LabRun
from ui.attention.labels import shown_mask
from ui.attention.mlp_steps import mlp_caption, mlp_half
from ui.common import charts, exports
from ui.common.chart_style import image_format
from ui.common.theme import wrapping_columns

SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")  # "k₁": a caption is plain text, not a formula
Numbers = dict[str, tuple[np.ndarray, Sequence[str], Sequence[str]]]  # name -> (matrix, row and column labels)


def _row(number: int, title: str, formula: str, caption: str, draw: Callable[[], None], numbers: Numbers) -> Numbers:
    """One step: title, formula and caption on the left, the chart on the right; returns its matrices, named
    "3. S", for the numbers panel under the steps (one panel, not a table per matrix: each table is a browser
    element to send and draw on every change)."""
    left, right = wrapping_columns([1, 2], key=f"attention-step-{number}", per_row=1, vertical_alignment="center")
    with left:
        st.markdown(f"**{number}. {title}**")
        st.latex(formula)
        st.caption(caption)
    with right:
        draw()
    st.divider()
    return {f"{number}. {name}": matrix for name, matrix in numbers.items()}


def _numbers_panel(tables: Numbers) -> None:
    """Every matrix of the steps as a table with a CSV download, one chosen at a time, in a popover (the browser
    draws its table only when it is opened)."""
    names = list(tables)
    if st.session_state.get(NUMBERS) not in names:
        st.session_state[NUMBERS] = names[0]
    with st.popover(_("The numbers of every step"), icon=":material/table:",
                    help=_("Any step's matrix as a table with its row and column labels, and as a CSV file.")):
        name = st.selectbox(_("Matrix"), names, key=NUMBERS, help=_("Which step's matrix to show as a table, with "
                            "its row and column labels, and to download as CSV."))
        z, rows, cols = tables[name]
        file_name = "attention_step_" + re.sub(r"\W+", "_", name).strip("_")  # "6. A" -> attention_step_6_A
        exports.matrix_table(z, rows, cols, name=file_name, key="attn.num")
        exports.picture_download(step_spec(name, z, rows, cols), name=file_name, key="attn.num",
                                 image_format=image_format())


def step_spec(name: str, z: np.ndarray, rows: Sequence[str], cols: Sequence[str]) -> hm.HeatmapSpec:
    """The heatmap of step ``name`` as on screen: weights (A) on the attention scale, masked scores (-∞) grey."""
    if name.endswith(". A"):
        return charts.attention_spec(z, cols, rows, title=name)
    hidden = np.isneginf(z)
    text = np.where(hidden, "-∞", hm.cell_texts(z)).astype(object)
    return hm.matrix_spec(np.where(hidden, np.nan, z), rows, cols, diverging=True, title=name, text=text)


def _input_formula(run: LabRun, layer: int) -> str:
    source = (run.embedding or r"E\sqrt{d_{model}} + PE") if layer == 0 else rf"h_{{{layer}}}"
    if run.rotary and layer == 0 and not run.embedding:
        source = r"E\sqrt{d_{model}}"
    norm = r"\mathrm{RMSNorm}" if run.rms_norm else r"\mathrm{LN}"
    return rf"X = {norm}({source})" if run.norm_first else rf"X = {source}"


def _mask_caption(run: LabRun, mask: np.ndarray | None) -> str:
    if mask is None or mask.all():
        return _("No mask: every query may see every key, so this step changes nothing.")
    hidden = int((~mask).sum())
    return _("Mask: {mask}. {hidden} of {cells} cells are set to -∞, so softmax gives them weight 0 (grey "
             "cells).").format(mask=shown_mask(run.mask), hidden=num(hidden), cells=num(mask.size))


def _weight_matrices(s: dict, head: int, run: LabRun, layer: int) -> None:
    if not st.toggle(_("Show this head's weight matrices"), key="attn.show_w",
                     help=_("W^Q, W^K, W^V of this head (d_model × d_k) and their biases, to check Q, K, V by "
                            "hand.")):
        return
    dims, hdims = [str(i) for i in range(run.d_model)], [str(i) for i in range(run.head_dim)]
    matrix_row([s[f"w_{n}"][head] for n in "qkv"], [f"W^{n.upper()}" for n in "qkv"], dims, hdims,
               key="attn.step.w")
    for name in "qkv":
        bias = s[f"b_{name}"]
        if bias is not None:
            st.caption(f"b^{name.upper()}: " + ", ".join(f"{v:.2f}" for v in bias[head]))


def step_by_step(run: LabRun, layer: int, head: int) -> None:
    """Draw the nine steps of attention for ``layer`` and ``head`` (both 0-based), the MLP half of the block, then
    the numbers of any of them."""
    found = _projections(run, layer, head) | _scores(run, layer, head) | _mixing(run, layer, head)
    mlp = mlp_half(run, layer, _row)
    if mlp:
        mlp_caption()
    _numbers_panel(found | mlp)


def _labels(run: LabRun) -> tuple[list[str], list[str], list[str]]:
    return list(run.tokens), [str(i) for i in range(run.d_model)], [str(i) for i in range(run.head_dim)]


def _projections(run: LabRun, layer: int, head: int) -> Numbers:
    """Steps 1 and 2: the input X and the per-head Q, K, V."""
    found: Numbers = {}
    s, (tok, dims, hdims), key = run.steps[layer], _labels(run), "attn.step.{}"
    first = _(run.embedding_note) if run.embedding_note else _("E = token embeddings, PE = positions")
    where = first if layer == 0 else _("h_{layer} = output of layer {layer}").format(layer=layer)
    norm = (_("RMSNorm: x / √(mean(x²) + ε) × g, no mean taken away and no bias (pre-norm block);") + " "
            if run.rms_norm else _("LN = LayerNorm (pre-norm block);") + " ") if run.norm_first else ""
    found |= _row(1, _("Input X"), _input_formula(run, layer),
         _("{n} tokens × d_model {d_model}: one row per token. {norm}{where}.").format(
             n=num(len(tok)), d_model=run.d_model, norm=norm, where=where),
         lambda: matrix(s["x"], tok, dims, key=key.format("x")), {"X": (s["x"], tok, dims)})

    def qkv() -> None:
        matrix_row([s[n][head] for n in "qkv"], [_("{name} (head {head})").format(name=n.upper(), head=head + 1)
                                                 for n in "qkv"], tok, hdims, key=key.format("qkv"))
        _weight_matrices(s, head, run, layer)

    rot = " " + _("Then each pair of numbers in Q and K is rotated by its position (RoPE).") if run.rotary else ""
    if 0 < run.kv_heads < run.n_heads:
        group = kv_groups(run.n_heads, run.kv_heads)[kv_head_of(head, run.n_heads, run.kv_heads)]
        rot += " " + _("K and V come from K/V head {kv}, which {heads} share (grouped-query attention): one W^K, "
                       "W^V for the group.").format(kv=kv_head_of(head, run.n_heads, run.kv_heads) + 1,
                                                    heads=heads_text(group))
    found |= _row(2, _("Queries, keys, values"),
         r"\begin{aligned}Q_h &= X W^Q_h + b^Q_h\\ K_h &= X W^K_h + b^K_h\\ V_h &= X W^V_h + b^V_h\end{aligned}",
         _("Each {t} × {d} (d_k = d_model / heads = {d_model} / {heads}).").format(
             t=num(len(tok)), d=run.head_dim, d_model=run.d_model, heads=run.n_heads) + rot, qkv,
         {n.upper(): (s[n][head], tok, hdims) for n in "qkv"})
    return found


def _scores(run: LabRun, layer: int, head: int) -> Numbers:
    """Steps 3 to 6: Q Kᵀ, scaling, mask and softmax."""
    found: Numbers = {}
    s, (tok, _dims, _hdims), key = run.steps[layer], _labels(run), "attn.step.{}"
    t, d, j = len(tok), run.head_dim, min(1, len(tok) - 1)
    example = dot_example(s["q"][head][0], s["k"][head][j])
    found |= _row(3, _("Scores"), r"S = Q_h K_h^{\top}",
         _("Query × key for every pair, {t} × {t}.").format(t=num(t))
         + f" S[{tok[0]}, {tok[j]}] = q₀ · k{str(j).translate(SUBSCRIPTS)} = {example}",
         lambda: matrix(s["scores"][head], tok, tok, key=key.format("scores")), {"S": (s["scores"][head], tok, tok)})
    found |= _row(4, _("Scale"), rf"S / \sqrt{{d_k}} = S / \sqrt{{{d}}} = S / {np.sqrt(d):.3f}",
         _("Keeps the scores from growing with d_k, so softmax does not saturate."),
         lambda: matrix(s["scaled"][head], tok, tok, key=key.format("scaled")),
         {"S/√d_k": (s["scaled"][head], tok, tok)})
    mask = None if s["mask"] is None else s["mask"][head]
    may_see = _("if {i} may see {j}").format(i="$i$", j="$j$")
    found |= _row(5, _("Mask"),
         r"S'_{ij} = \begin{cases} S_{ij} & \text{" + may_see + r"}\\ -\infty & \text{" + _("otherwise")
         + r"}\end{cases}",
         _mask_caption(run, mask), lambda: masked_matrix(s["scaled"][head], mask, tok, key=key.format("masked")),
         {"S'": (s["masked"][head], tok, tok)})
    last = t - 1  # the last query sees every key under each mask, so its row makes the fullest example
    allowed = np.ones(t, dtype=bool) if mask is None else mask[last]
    first = tok[int(np.flatnonzero(allowed)[0])] if allowed.any() else tok[0]
    weights = s["weights"][head]
    note = charts.uniform_note(weights)
    found |= _row(6, _("Softmax (row by row)"), r"A_{ij} = \frac{e^{S'_{ij}}}{\sum_k e^{S'_{ik}}}",
         _("Each row sums to 1: how query i shares its attention.")
         + f" A[{tok[last]}, {first}] = {softmax_example(s['scaled'][head][last], allowed)}"
         + (" " + _("This head is **{note}**.").format(note=note) if note else ""),
         lambda: matrix(weights, tok, tok, key=key.format("weights"), diverging=False, hover="weight"),
         {"A": (weights, tok, tok)})
    return found


def _mixing(run: LabRun, layer: int, head: int) -> Numbers:
    """Steps 7 to 9: weighted values, concatenation of the heads and the output projection."""
    found: Numbers = {}
    s, (tok, dims, hdims), key = run.steps[layer], _labels(run), "attn.step.{}"
    found |= _row(7, _("Weighted values"), r"Z_h = A\,V_h",
         _("{t} × {d}: each row mixes the value rows by the weights of A.").format(t=num(len(tok)), d=run.head_dim),
         lambda: matrix(s["head_out"][head], tok, hdims, key=key.format("head_out")),
         {"Z": (s["head_out"][head], tok, hdims)})

    def concat() -> None:
        matrix(s["concat"], tok, dims, key=key.format("concat"), extra=head_blocks(run.n_heads, run.head_dim, head))

    found |= _row(8, _("Concatenate heads"), r"\mathrm{Concat}(Z_1, \dots, Z_H)",
         _("{t} × {d}: the {heads} heads side by side (head {head} boxed in red).").format(
             t=num(len(tok)), d=run.d_model, heads=run.n_heads, head=head + 1), concat,
         {"Concat": (s["concat"], tok, dims)})

    def output() -> None:
        matrix(s["output"], tok, dims, key=key.format("output"))
        if st.toggle(_("Show $W^O$"), key="attn.show_wo", help=_("The output weights (d_model × d_model) that mix the "
                     "concatenated heads.")):
            matrix(s["w_o"], dims, dims, key=key.format("w_o"))

    found |= _row(9, _("Output projection"), r"\mathrm{out} = \mathrm{Concat}\,W^O + b^O",
         _("{t} × {d}: mixes the heads; this is added to the residual stream.").format(t=num(len(tok)),
                                                                                      d=run.d_model), output,
         {"out": (s["output"], tok, dims), "W^O": (s["w_o"], dims, dims)})
    return found
