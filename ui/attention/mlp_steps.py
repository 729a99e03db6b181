"""The step-by-step view's second half: residual add → norm → up projection → activation → down projection →
residual add, with the shown layer's own numbers (SwiGLU's gate and up for the Llama family; post-norm models in
their order: add & norm, MLP, add & norm).

The rows continue the attention's numbering and use its row layout (``row``, from :mod:`ui.attention.steps`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from explorer.i18n import _, num
from explorer.lab.block_steps import ACTIVATIONS
from ui.attention.charts import matrix, matrix_row
from ui.attention.lab_run import LabRun

SHOWN_NEURONS = 64  # neuron columns a heatmap shows (every one is in the numbers panel)
Row = Callable[..., dict]  # steps._row: (number, title, formula, caption, draw, numbers) -> its named matrices


def _norm_formula(rms: bool) -> str:
    if rms:
        return r"\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\mathrm{mean}(x^2) + \epsilon}} \odot g"
    return r"\mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} \odot g + b"


def _norm_example(m: dict, tok: Sequence[str]) -> str:
    """The first token's statistics, to check its row by hand."""
    x = np.asarray(m["added"][0], dtype=float)
    if m["rms_norm"]:
        return _("For “{token}”: √mean(x²) = {rms}.").format(token=tok[0], rms=num(np.sqrt((x ** 2).mean()), 3))
    return _("For “{token}”: μ = {mean}, σ = {std}.").format(token=tok[0], mean=num(x.mean(), 3), std=num(x.std(), 3))


def _activation_formula(kind: str) -> str:
    if kind == "swiglu":
        return r"N = \mathrm{SiLU}(G) \odot U,\quad \mathrm{SiLU}(g) = g\,\sigma(g)"
    if kind == "relu":
        return r"N = \mathrm{ReLU}(U) = \max(0, U)"
    return r"N = \mathrm{GELU}(U) = U\,\Phi(U)"


def _activation_example(m: dict, tok: Sequence[str]) -> str:
    """The strongest neuron of the first token, worked out."""
    n = int(np.argmax(np.abs(m["hidden"][0])))
    u, h = float(m["up"][0, n]), float(m["hidden"][0, n])
    if m["activation"] == "swiglu":
        g = float(m["gate"][0, n])
        worked = (f"SiLU({num(g, 2)}) × {num(u, 2)} = {num(g / (1 + np.exp(-g)), 3)} × {num(u, 2)} "
                  f"= {num(h, 3)}")
        return _("Neuron {n} on “{token}”: {worked}. The gate decides, neuron by neuron, how much of U "
                 "passes.").format(n=n, token=tok[0], worked=worked)
    worked = f"{_(ACTIVATIONS[m['activation']])}({num(u, 2)}) = {num(h, 3)}"
    return _("Neuron {n} on “{token}”: {worked}.").format(n=n, token=tok[0], worked=worked)


def _wide(z: np.ndarray) -> tuple[np.ndarray, list[str], str]:
    """At most :data:`SHOWN_NEURONS` neuron columns, their labels and a note when some are left out."""
    n = z.shape[-1]
    shown = min(n, SHOWN_NEURONS)
    note = (" " + _("Neurons 0–{last} of {n} shown; all of them are in the numbers below.").format(
        last=shown - 1, n=num(n))) if n > shown else ""
    return z[..., :shown], [str(i) for i in range(shown)], note


def mlp_half(run: LabRun, layer: int, row: Row, first: int = 10) -> dict:
    """Draw the MLP half of ``layer`` (0-based) as rows numbered from ``first``; returns their named matrices."""
    if layer >= len(run.mlp) or not run.mlp[layer]:
        return {}
    m, tok = run.mlp[layer], list(run.tokens)
    dims = [str(i) for i in range(run.d_model)]
    ff = m["hidden"].shape[-1]
    neurons = [str(i) for i in range(ff)]
    key = "attn.step.mlp_{}"
    h_in = rf"h_{{{layer}}}" if layer else "h"
    h_out = rf"h_{{{layer + 1}}}"
    norm = "RMSNorm" if m["rms_norm"] else "LN"
    found: dict = {}
    n = first
    if m["norm_first"]:
        found |= row(n, _("Residual add"), rf"h' = {h_in} + \mathrm{{out}}",
                     _("{t} × {d}: the attention's output is added to the block's input (the residual stream), so "
                       "nothing the stream held is lost.").format(t=num(len(tok)), d=run.d_model),
                     lambda: matrix(m["added"], tok, dims, key=key.format("added")), {"h'": (m["added"], tok, dims)})
        found |= row(n + 1, _("Norm ({norm})").format(norm=norm), rf"X_2 = \mathrm{{{norm}}}(h')",
                     _norm_example(m, tok) + " " + _("Every token's vector rescaled before the MLP reads it."),
                     lambda: matrix(m["normed"], tok, dims, key=key.format("normed")),
                     {"X2": (m["normed"], tok, dims)})
        n += 2
    else:
        found |= row(n, _("Residual add & norm ({norm})").format(norm=norm),
                     rf"X_2 = \mathrm{{{norm}}}({h_in} + \mathrm{{out}})",
                     _("Post-norm block: the attention's output is added to the input, then normalised.") + " "
                     + _norm_example(m, tok),
                     lambda: matrix(m["normed"], tok, dims, key=key.format("normed")),
                     {"h+out": (m["added"], tok, dims), "X2": (m["normed"], tok, dims)})
        n += 1
    found |= _up(m, tok, neurons, n, row, key)
    shown, cols, note = _wide(m["hidden"])
    found |= row(n + 1, _("Activation ({name})").format(name=_(ACTIVATIONS[m["activation"]])),
                 _activation_formula(m["activation"]),
                 _("{t} × {ff}: one column per neuron, its activation on each token.").format(t=num(len(tok)), ff=ff)
                 + " " + _activation_example(m, tok) + note,
                 lambda: matrix(shown, tok, cols, key=key.format("hidden")), {"N": (m["hidden"], tok, neurons)})
    found |= row(n + 2, _("Down projection"), r"M = N\,W_{down} + b_{down}",
                 _("{t} × {d}: each neuron adds its row of W_down, scaled by its activation, back into the model's "
                   "width.").format(t=num(len(tok)), d=run.d_model),
                 lambda: matrix(m["down"], tok, dims, key=key.format("down")), {"M": (m["down"], tok, dims)})
    if m["norm_first"]:
        formula = rf"{h_out} = h' + M"
        caption = _("{t} × {d}: the MLP's output is added to the residual stream.")
    else:
        formula = rf"{h_out} = \mathrm{{{norm}}}(X_2 + M)"
        caption = _("{t} × {d}: added to its input, then normalised.")
    last = layer + 1 == len(run.mlp)
    found |= row(n + 3, _("Residual add: the layer's output"), formula,
                 caption.format(t=num(len(tok)), d=run.d_model) + " "
                 + (_("This is the last layer's output (the model's final norm and head come next).") if last else
                    _("This is layer {layer}'s input X before its norm.").format(layer=layer + 2)),
                 lambda: matrix(m["output"], tok, dims, key=key.format("output")),
                 {"h_out": (m["output"], tok, dims)})
    return found


def _up(m: dict, tok: list[str], neurons: list[str], n: int, row: Row, key: str) -> dict:
    """The up projection (SwiGLU: the gate and the up projection side by side)."""
    if m["activation"] == "swiglu":
        gate, cols, note = _wide(m["gate"])
        up = _wide(m["up"])[0]
        return row(n, _("Gate and up projections"),
                   r"\begin{aligned}G &= X_2 W_{gate}\\ U &= X_2 W_{up}\end{aligned}",
                   _("{t} × {ff} each: SwiGLU has two projections up, one to gate the other.").format(
                       t=num(len(tok)), ff=m["up"].shape[-1]) + note,
                   lambda: matrix_row([gate, up], [_("G (gate)"), _("U (up)")], tok, cols, key=key.format("gate_up")),
                   {"G": (m["gate"], tok, neurons), "U": (m["up"], tok, neurons)})
    shown, cols, note = _wide(m["up"])
    return row(n, _("Up projection"), r"U = X_2 W_{up} + b_{up}",
               _("{t} × {ff}: the MLP widens each token's vector ({times}× d_model here).").format(
                   t=num(len(tok)), ff=m["up"].shape[-1], times=m["up"].shape[-1] // max(m["normed"].shape[-1], 1))
               + note,
               lambda: matrix(shown, tok, cols, key=key.format("up")), {"U": (m["up"], tok, neurons)})


def mlp_caption() -> None:
    """One line under the steps: what the MLP half does and does not show."""
    st.caption(_("The MLP reads each token on its own (no token looks at another here); what it adds to the stream "
                 "depends on which neurons fire. *Beyond attention → The MLP half* shows what excites a neuron."))
