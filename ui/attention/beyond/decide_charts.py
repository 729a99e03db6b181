"""What *Where does it decide?* draws: the two token lists, the patching heatmaps and the attribution bars, each
with its downloads (files made only when clicked)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.lab.decide import Setup, attribution_csv, attribution_rows
from transformer_core.patching import LogitAttribution, Patching
from ui.common import charts, exports

MARK = "✱"  # marks a position where the two texts differ


def token_table(clean: Sequence[str], corrupt: Sequence[str]) -> None:
    """Both texts' tokens side by side, one row per position, with where they differ (any lengths)."""
    n = max(len(clean), len(corrupt))
    rows = {"position": list(range(n)),
            "clean text": [clean[i] if i < len(clean) else "—" for i in range(n)],
            "corrupt text": [corrupt[i] if i < len(corrupt) else "—" for i in range(n)]}
    rows["differs"] = [MARK if a != b else "" for a, b in zip(rows["clean text"], rows["corrupt text"], strict=True)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=min(400, 38 + 35 * n),
                 key="attn.decide.tokens")


def columns(setup: Setup) -> list[str]:
    """The heatmap's column labels: ``position·token``, with :data:`MARK` where the texts differ."""
    return [f"{i}·{t}" + (f" {MARK}" if i in setup.marked else "") for i, t in enumerate(setup.columns)]


def _grid(z: np.ndarray, rows: list[str], cols: list[str], *, title: str, x_title: str, name: str, key: str,
          projector: bool, marked: Sequence[int] = ()) -> None:
    fig = charts.heatmap(z, x=cols, y=rows, title=title, x_title=x_title, diverging=True, decimals=2,
                         hover_name="restored", numbers=len(cols) <= 16 and len(rows) <= 16)
    step = max(1, -(-len(cols) // (16 if projector else 24)))  # labels that fit; the changed ones always shown
    fig.update_xaxes(tickmode="array", tickvals=[c for i, c in enumerate(cols) if i % step == 0 or i in marked])
    charts.show(fig, key=f"{key}.chart")
    exports.matrix_downloads(z, rows, cols, name=name, key=key, title=title, diverging=True)
    if not projector:
        st.caption("The buttons save the grid as a picture (PNG, SVG) or its numbers at full precision (CSV, NPY).")


def residual_grid(result: Patching, setup: Setup, *, stack_note: str, projector: bool) -> None:
    """Layer × position: how much of the clean answer each patch of the residual stream restores."""
    layers = result.patched.shape[0]
    rows = [f"into layer {i + 1}" for i in range(layers)]
    _grid(result.restored, rows, columns(setup), title=f"Residual stream patched{stack_note}: share of the clean "
          "answer restored", x_title=f"position (clean tokens; {MARK} differs)", name="patching_residual",
          key="attn.decide.dl.residual", projector=projector, marked=setup.marked)


def heads_grid(result: Patching, *, stack_note: str, projector: bool) -> None:
    """Layer × head: how much of the clean answer each head's output restores."""
    layers, heads = result.patched.shape
    _grid(result.restored, [f"layer {i + 1}" for i in range(layers)], [f"H{h + 1}" for h in range(heads)],
          title=f"Heads patched{stack_note}: share of the clean answer restored", x_title="query head",
          name="patching_heads", key="attn.decide.dl.heads", projector=projector)


def attribution_bars(dla: LogitAttribution, answer: str, other: str, *, projector: bool) -> None:
    """One bar per head and per MLP (and the rest), in model order, with the CSV of the parts."""
    rows = attribution_rows(dla)
    labels, values = [r[0] for r in rows], [r[3] for r in rows]
    kinds = ["MLP" if lab.endswith("MLP") else "rest" if lab == "rest" else "head" for lab in labels]
    colours = {"head": charts.CATEGORICAL[0], "MLP": charts.CATEGORICAL[1], "rest": charts.CATEGORICAL[2]}
    fig = go.Figure([go.Bar(x=[lab for lab, k in zip(labels, kinds, strict=True) if k == kind],
                            y=[v for v, k in zip(values, kinds, strict=True) if k == kind], name=kind,
                            marker_color=colours[kind],
                            hovertemplate="%{x}: %{y:.3f}<extra></extra>") for kind in colours])
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                     showticklabels=len(labels) <= 60)
    fig.update_yaxes(title=f"logit “{answer}” − “{other}”", zeroline=True)
    title = f"Direct logit attribution: the parts add up to {dla.total:.3f}"
    charts.show(charts.style(fig, title=title, height=300 if projector else 340), key="attn.decide.dla.chart")
    st.download_button("CSV (parts)", lambda: attribution_csv(dla), file_name="logit_attribution.csv",
                       mime="text/csv", key="attn.decide.dl.dla", on_click="ignore", icon=":material/download:",
                       help="Every head, every MLP and the rest at full precision, and the total they add up to.")
    top = sorted(rows[:-1], key=lambda r: abs(r[3]), reverse=True)[:3]
    named = ", ".join(f"{r[0]} ({r[3]:+.3f})" for r in top)
    st.caption(f"Each bar is what one head or one MLP writes into the stream at the position read, seen through "
               f"the final norm (its scale frozen at this run's value) and the two answers' output rows. Heads "
               f"{dla.heads.sum():+.3f} + MLPs {dla.mlps.sum():+.3f} + the rest {dla.rest:+.3f} (embeddings, "
               f"biases, the norm's shift) = {dla.total:+.3f}, the model's own logit difference. Largest: {named}. "
               "The camera icon saves the chart as a picture.")
