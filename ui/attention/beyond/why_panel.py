"""The *Why this word?* panel: one output's token attributions beside its attention row, with integrated gradients
on a button (progress bar, Stop), one sentence on where the two disagree, a caption, and CSV and PNG downloads.

Drawn by the Lab's lens (:mod:`ui.attention.beyond.why_word`) and under a finished writing of *Watch it write*.
Results live in ``st.session_state`` (this browser session only), keyed by the model, the input and the settings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from plotly.subplots import make_subplots

from explorer.i18n import N_, _, num, percent
from explorer.lab.why_reading import as_rows, disagreement, sig, why_csv, why_png
from explorer.lab.why_word import Explained, explain
from explorer.render import heatmap as hm
from transformer_core.attribution import Attribution
from ui.common import charts
from ui.common.theme import projector

METHODS = {"grad_x_input": N_("Gradient × input"), "integrated_gradients": N_("Integrated gradients")}  # shown: _()
STEP_CHOICES = (16, 32, 64, 128)  # integrated gradients' points along the path
PROGRESS_UPDATES = 8  # the path is run in at least this many batches, each a place where Stop lands...
ROWS_PER_BATCH = 64  # ...and in batches of at most this many token rows (points × tokens), so a Stop lands soon
KEPT_RESULTS = 8  # attributions kept per session (the newest)
GAP_OK = 0.05  # a completeness gap under this share of f(x) - f(0) counts as small



def caption(text: str = "text", part: str = "token", baseline: str = "every token's embedding row") -> str:
    """What attribution shows and cannot show, for a text read as tokens or (``caption("picture", "patch", …)``) a
    picture read as patches, as one whole sentence in the reader's language (``baseline`` is then implied)."""
    if (text, part) == ("picture", "patch"):
        return _("Attribution is a local, linear reading of the model around your picture, not a proof of cause: a "
                 "patch whose effect has saturated can get a small gradient although it matters, and integrated "
                 "gradients depend on the baseline they start from (here every patch's embedding set to zero). "
                 "Attention shows where the model looked; attribution estimates what moved the answer.")
    return _("Attribution is a local, linear reading of the model around your text, not a proof of cause: a token "
             "whose effect has saturated can get a small gradient although it matters, and integrated gradients "
             "depend on the baseline they start from (here every token's embedding row set to zero). Attention shows "
             "where the model looked; attribution estimates what moved the answer.")


def _results(key: str) -> dict:
    return st.session_state.setdefault(f"{key}.results", {})


def _keep(key: str, what: Hashable, result: Attribution) -> None:
    results = _results(key)
    results[what] = result
    for old in list(results)[:-KEPT_RESULTS]:
        del results[old]


def _stop(key: str) -> None:
    done = st.session_state.pop(f"{key}.done", None)
    if done is not None:
        st.session_state[f"{key}.stopped"] = done


def _integrated(model, e: Explained, steps: int, key: str, what: Hashable) -> None:
    """Integrated gradients with a progress bar; a click anywhere (Stop included) interrupts it at the next batch."""
    said = _("Integrated gradients: {done} of {total} points…")
    bar = st.progress(0.0, text=said.format(done=num(0), total=num(steps)))
    st.session_state[f"{key}.done"] = (0, steps)

    def progress(done: int, total: int) -> None:
        st.session_state[f"{key}.done"] = (done, total)
        bar.progress(done / total, text=said.format(done=num(done), total=num(total)))

    rows = len(e.tokens)  # token rows per point: every attributed token (source and target, or every patch)
    points = max(1, min(-(-steps // PROGRESS_UPDATES), ROWS_PER_BATCH // max(1, rows)))
    result = explain(model, e, method="integrated_gradients", steps=steps, progress=progress, batch_points=points)
    bar.empty()
    st.session_state.pop(f"{key}.done", None)
    _keep(key, what, result)


def gap_sentence(result: Attribution) -> str:
    """The completeness gap of integrated gradients, in words."""
    moved = result.output - (result.baseline_output or 0.0)
    total, gap = float(result.values.sum()), float(result.gap or 0.0)
    share = abs(gap) / max(abs(moved), 1e-12)
    fill = dict(total=sig(total, 4), moved=sig(moved, 4), gap=sig(gap), share=percent(share, 1), steps=result.steps)
    if share <= GAP_OK:
        return _("The attributions add up to {total}; from the all-zero baseline to your text the output moved by "
                 "{moved}, so the completeness gap is {gap} ({share} of it). {steps} points follow the path closely "
                 "enough.").format(**fill)
    return _("The attributions add up to {total}; from the all-zero baseline to your text the output moved by "
             "{moved}, so the completeness gap is {gap} ({share} of it). That is large: the gradient changes faster "
             "along the path than {steps} points can follow (Llama-family models, whose first RMSNorm switches on "
             "abruptly near zero, do this). Try more points, and read the values as rough.").format(**fill)


def _attention_range(w: np.ndarray) -> tuple[float, float]:
    """The attention colours as the sidebar asks: fixed 0 to 1, or stretched to the row's own range."""
    return hm.attention_range(w, stretch=charts.stretch_attention())


def _figure(e: Explained, values: np.ndarray, row: np.ndarray, which: str, method: str) -> go.Figure:
    z, text, names = as_rows(values, e.tokens, e.n_source)
    w, _t, _n = as_rows(row, e.tokens, e.n_source)
    cols = [str(i) for i in range(z.shape[1])]
    bound = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() and np.nanmax(np.abs(z)) > 0 else 1.0
    low, high = _attention_range(w)
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.3, subplot_titles=(
        _("{method}: what moved “{token}”").format(method=_(METHODS[method]), token=e.token),
        _("Attention row, {which}").format(which=which)))
    hover = _("%{customdata} (position %{x})<br>{name} %{z:.4f}")
    for r, (m, scale, lo, hi, name, bar_y) in enumerate(((z, hm.DIVERGING, -bound, bound, _("attribution"), 0.84),
                                                         (w, charts.colorscale(), low, high, _("weight"), 0.16)), 1):
        fig.add_trace(go.Heatmap(
            z=m, x=cols, y=names, zmin=lo, zmax=hi, colorscale=charts.plotly_scale(scale), text=text,
            texttemplate="%{text}", customdata=text, xgap=2, ygap=2,
            colorbar=dict(len=0.36, y=bar_y, thickness=14, title=dict(text=name, side="right")),
            hovertemplate=hover.replace("{name}", name) + "<extra></extra>"), row=r, col=1)
        fig.update_yaxes(autorange="reversed", type="category", row=r, col=1)
        fig.update_xaxes(type="category", showticklabels=False, row=r, col=1)
    return charts.style(fig, height=330 + 90 * (len(names) - 1))


def _method_controls(key: str, method_key: str, steps_key: str) -> tuple[str, int]:
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    with left:
        method = st.radio(
            _("Attribution"), list(METHODS), format_func=lambda m: _(METHODS[m]), key=method_key, horizontal=True,
            help=_("Gradient × input: the output's gradient with respect to each token's embedding row, times the "
                   "row, summed (one backward pass, at once). Integrated gradients: the same, with the gradient "
                   "averaged along the straight path from all-zero rows to your text (Sundararajan et al. 2017); "
                   "its values add up to the output's change along that path."))
    with right:
        steps = st.selectbox(_("Points on the path"), STEP_CHOICES, key=steps_key,
                             disabled=method != "integrated_gradients",
                             help=_("How many points of the path integrated gradients evaluates: more follow the "
                                    "gradient more closely (a smaller completeness gap) and take longer."))
    return method, int(steps)


def _ig_buttons(model, e: Explained, steps: int, key: str, what: Hashable) -> None:
    """The button that runs integrated gradients and the Stop that ends it (and what a stop left)."""
    row = st.container(horizontal=True, vertical_alignment="center")
    with row:
        run = st.button(_("Compute integrated gradients ({steps} points)").format(steps=steps), key=f"{key}.run",
                        type="primary", icon=":material/play_arrow:",
                        help=_("Runs the model at every point of the path, in batches, with a progress bar."))
        st.button(_("Stop"), key=f"{key}.stop", icon=":material/stop:", on_click=_stop, args=(key,), disabled=not run,
                  help=_("Stops integrated gradients; nothing is kept, and gradient × input stays shown."))
    stopped = st.session_state.pop(f"{key}.stopped", None)
    if stopped and not run:
        st.info(_("Stopped after {done} of {total} points; press the button to start again.").format(
            done=num(stopped[0]), total=num(stopped[1])), icon="⏹️")
    if run:
        _integrated(model, e, steps, key, what)


def _input_key(ids) -> Hashable:
    """``ids`` as part of a dictionary key: token ids as they are, a picture by its bytes."""
    if isinstance(ids, torch.Tensor):
        return hashlib.sha1(ids.detach().cpu().numpy().tobytes()).hexdigest()
    return ids


def attribution(model, e: Explained, *, key: str, model_key: Hashable, method_key: str,
                steps_key: str) -> Attribution | None:
    """The method picker, and ``e``'s attribution by it: gradient × input at once, integrated gradients once its
    button has run (with its progress bar and Stop); results kept in this session, keyed by what they depend on.
    ``None``, with the reason shown, when the model cannot read the input."""
    for k, default in ((method_key, "grad_x_input"), (steps_key, 32)):
        st.session_state.setdefault(k, default)
    method, steps = _method_controls(key, method_key, steps_key)
    base = (model_key, _input_key(e.ids), e.target, e.position)
    quick = (*base, "grad_x_input", 1)
    try:
        if quick not in _results(key):
            _keep(key, quick, explain(model, e))
        if method == "integrated_gradients":
            what = (*base, method, steps)
            _ig_buttons(model, e, steps, key, what)
            if what in _results(key):
                return _results(key)[what]
            st.caption(_("Showing gradient × input until integrated gradients are computed."))
    except ValueError as err:  # an input the model cannot read (e.g. longer than its positions)
        st.warning(_("No attribution here: {error}").format(error=err), icon="⚠️")
        return None
    return _results(key)[quick]


def why_panel(model, e: Explained, layer: int, head: int, *, key: str, model_key: Hashable, method_key: str,
              steps_key: str, heads_key: str) -> Attribution | None:
    """The attribution of ``e`` (:func:`attribution`) beside the attention row at ``layer`` and ``head`` (or
    averaged over heads), the sentence on where they disagree, the caption and the downloads; returns the
    attribution shown (None when there is none)."""
    picture = st.container() if projector() else None  # a projector shows the picture before the controls
    shown = attribution(model, e, key=key, model_key=model_key, method_key=method_key, steps_key=steps_key)
    if shown is None:
        return None
    st.session_state.setdefault(heads_key, False)
    average = st.toggle(_("Average the attention over heads"), key=heads_key,
                        help=_("Off: the attention row of the layer and head the page shows. On: that layer's heads "
                               "averaged, one number per token."))
    row, which = e.row(layer, None if average else head)
    with picture or st.container():
        charts.show(_figure(e, shown.values, row, which, shown.method), key=f"{key}.chart")
        st.markdown(disagreement(shown.values, row, e.tokens))
    if shown.gap is not None:
        st.caption(gap_sentence(shown))
    st.caption(_("Red: the token raised the logit of “{token}”; blue: it lowered it (hover a cell for its number). "
                 "Below: the attention row of {reader} at {which}.").format(token=e.token, reader=e.reader,
                                                                             which=which) + " " + caption())
    _downloads(e, shown, row, which, key)
    return shown


def _downloads(e: Explained, shown: Attribution, row: np.ndarray, which: str, key: str) -> None:
    name = f"why_{shown.method}"
    titles = (_("{method}: what moved “{token}”").format(method=_(METHODS[shown.method]), token=e.token),
              _("Attention, {which}").format(which=which))
    with st.container(horizontal=True):
        st.download_button("CSV", lambda: why_csv(e.tokens, shown.values, row, e.n_source), file_name=f"{name}.csv",
                           mime="text/csv", key=f"{key}.csv", on_click="ignore", icon=":material/download:",
                           help=_("One line per token: position, part, token, attribution and attention weight."))
        st.download_button("PNG", lambda: why_png(e.tokens, shown.values, row, e.n_source, titles=titles,
                                                  attention_scale=charts.colorscale(),
                                                  attention_range=_attention_range(np.asarray(row))),
                           file_name=f"{name}.png", mime="image/png", key=f"{key}.png", on_click="ignore",
                           icon=":material/download:",
                           help=_("Both rows as a picture, each cell labelled with its token."))

