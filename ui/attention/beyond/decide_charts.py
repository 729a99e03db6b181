"""What *Where does it decide?* draws: the two token lists, the patching heatmaps and the attribution bars, each
with its downloads (files made only when clicked)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import _, num
from explorer.lab.decide import REST, Setup, attribution_csv, attribution_rows
from transformer_core.patching import LogitAttribution, Patching
from ui.common import charts, exports

MARK = "✱"  # marks a position where the two texts differ


def token_table(clean: Sequence[str], corrupt: Sequence[str]) -> None:
    """Both texts' tokens side by side, one row per position, with where they differ (any lengths)."""
    n = max(len(clean), len(corrupt))
    left = [clean[i] if i < len(clean) else "—" for i in range(n)]
    right = [corrupt[i] if i < len(corrupt) else "—" for i in range(n)]
    rows = {_("position"): list(range(n)), _("clean text"): left, _("corrupt text"): right,
            _("differs"): [MARK if a != b else "" for a, b in zip(left, right, strict=True)]}
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=min(400, 38 + 35 * n),
                 key="attn.decide.tokens")


def columns(setup: Setup) -> list[str]:
    """The heatmap's column labels: ``position·token``, with :data:`MARK` where the texts differ."""
    return [f"{i}·{t}" + (f" {MARK}" if i in setup.marked else "") for i, t in enumerate(setup.columns)]


def _grid(z: np.ndarray, rows: list[str], cols: list[str], *, title: str, x_title: str, name: str, key: str,
          projector: bool, marked: Sequence[int] = ()) -> None:
    fig = charts.heatmap(z, x=cols, y=rows, title=title, x_title=x_title, diverging=True, decimals=2,
                         hover_name=_("restored"), numbers=len(cols) <= 16 and len(rows) <= 16)
    step = max(1, -(-len(cols) // (16 if projector else 24)))  # labels that fit; the changed ones always shown
    fig.update_xaxes(tickmode="array", tickvals=[c for i, c in enumerate(cols) if i % step == 0 or i in marked])
    charts.show(fig, key=f"{key}.chart")
    exports.matrix_downloads(z, rows, cols, name=name, key=key, title=title, diverging=True)
    if not projector:
        st.caption(_("The buttons save the grid as a picture (PNG, SVG) or its numbers at full precision (CSV, NPY)."))


def residual_grid(result: Patching, setup: Setup, *, stack_note: str, projector: bool) -> None:
    """Layer × position: how much of the clean answer each patch of the residual stream restores (``stack_note``:
    the encoder–decoder's stack patched, in words, or "")."""
    layers = result.patched.shape[0]
    rows = [_("into layer {layer}").format(layer=i + 1) for i in range(layers)]
    title = (_("Residual stream patched ({stack}): share of the clean answer restored").format(stack=stack_note)
             if stack_note else _("Residual stream patched: share of the clean answer restored"))
    _grid(result.restored, rows, columns(setup), title=title,
          x_title=_("position (clean tokens; {mark} differs)").format(mark=MARK), name="patching_residual",
          key="attn.decide.dl.residual", projector=projector, marked=setup.marked)


def heads_grid(result: Patching, *, stack_note: str, projector: bool) -> None:
    """Layer × head: how much of the clean answer each head's output restores."""
    layers, heads = result.patched.shape
    title = (_("Heads patched ({stack}): share of the clean answer restored").format(stack=stack_note)
             if stack_note else _("Heads patched: share of the clean answer restored"))
    _grid(result.restored, [_("layer {layer}").format(layer=i + 1) for i in range(layers)],
          [f"H{h + 1}" for h in range(heads)], title=title, x_title=_("query head"),
          name="patching_heads", key="attn.decide.dl.heads", projector=projector)


def attribution_bars(dla: LogitAttribution, answer: str, other: str, *, projector: bool) -> None:
    """One bar per head and per MLP (and the rest), in model order, with the CSV of the parts."""
    rows = attribution_rows(dla)
    labels = [_(r[0]) if r[0] == REST else r[0] for r in rows]
    values = [r[3] for r in rows]
    kinds = ["MLP" if r[0].endswith("MLP") else "rest" if r[0] == REST else "head" for r in rows]
    colours = {"head": charts.CATEGORICAL[0], "MLP": charts.CATEGORICAL[1], "rest": charts.CATEGORICAL[2]}
    names = {"head": _("head"), "MLP": "MLP", "rest": _(REST)}
    fig = go.Figure([go.Bar(x=[lab for lab, k in zip(labels, kinds, strict=True) if k == kind],
                            y=[v for v, k in zip(values, kinds, strict=True) if k == kind], name=names[kind],
                            marker_color=colours[kind],
                            hovertemplate="%{x}: %{y:.3f}<extra></extra>") for kind in colours])
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                     showticklabels=len(labels) <= 60)
    fig.update_yaxes(title=_("logit “{answer}” − “{other}”").format(answer=answer, other=other), zeroline=True)
    title = _("Direct logit attribution: the parts add up to {total}").format(total=num(dla.total, 3))
    charts.show(charts.style(fig, title=title, height=300 if projector else 340), key="attn.decide.dla.chart")
    st.download_button(_("CSV (parts)"), lambda: attribution_csv(dla), file_name="logit_attribution.csv",
                       mime="text/csv", key="attn.decide.dl.dla", on_click="ignore", icon=":material/download:",
                       help=_("Every head, every MLP and the rest at full precision, and the total they add up to."))
    top = sorted(rows[:-1], key=lambda r: abs(r[3]), reverse=True)[:3]
    named = ", ".join(f"{r[0]} ({_signed(r[3])})" for r in top)
    st.caption(_("Each bar is what one head or one MLP writes into the stream at the position read, seen through "
                 "the final norm (its scale frozen at this run's value) and the two answers' output rows. Heads "
                 "{heads} + MLPs {mlps} + the rest {rest} (embeddings, biases, the norm's shift) = {total}, the "
                 "model's own logit difference. Largest: {largest}. The camera icon saves the chart as a "
                 "picture.").format(heads=_signed(dla.heads.sum()), mlps=_signed(dla.mlps.sum()),
                                    rest=_signed(dla.rest), total=_signed(dla.total), largest=named))


def _signed(value: float) -> str:
    """``value`` with three decimals and its sign (+0.125, −0.500), as the reader's language writes numbers."""
    return ("+" if float(value) >= 0 else "") + num(float(value), 3)

