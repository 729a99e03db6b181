"""*Watch it write*: a model that writes (GPT-2, the Llama family, a decoder-only model trained in this session;
see :mod:`ui.attention.writers`) continues the Lab's text one token at a time, live, with a Stop button; the
attention heatmap gains a row per token and a chart shows each step's candidates.

:func:`writing_section` draws the settings, the buttons and the places the writing is drawn in, and returns them
as a :class:`WritingView`; the page calls :func:`keep_writing` last, which loops — one token, redraw — while the
session's writing runs. A click (Stop, a layer picker, any widget) makes Streamlit interrupt the loop at its next
redraw and run the page again (``runner.fastReruns = false``): Stop's callback ends the writing first; any other
click lets the next page run take up the same writing where it was, with its key/value cache and its random
numbers (the :class:`~explorer.lab.generation.Writing` lives in ``st.session_state``, per session only).
A writing starts only when :data:`~explorer.lab.writing_limit.WRITINGS` gives it a place (one per browser, a few
per server); otherwise the section says why, as training's line does.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import streamlit as st

from explorer.i18n import N_, _, language, ngettext, num, using_language
from explorer.lab.generation import (
    MAX_NEW_TOKENS,
    Sampling,
    Writing,
    start_writing,
)
from explorer.lab.generation_branch import branch_csv
from explorer.lab.generation_exports import growing_gif, steps_csv
from explorer.lab.why_word import written_token
from explorer.lab.writing_limit import WRITINGS, WritingRefused
from ui.attention.beyond.why_panel import why_panel
from ui.attention.generation_branch import (
    branch_controls,
    branch_text,
    current_branch,
    drop_branch,
    running_writing,
    stop_branch,
)
from ui.attention.generation_charts import candidates_figure, heatmap_figure
from ui.attention.writers import Writer
from ui.common import charts, pace, st_internals
from ui.common.chart_style import strong_colour
from ui.common.theme import projector
from ui.common.ticker import ticks
from ui.training.visitor import visitor

WRITING = "attn.gen.writing"  # (model key, Writing): this session's writing, kept after its loop
NEW_TOKENS = "attn.gen.new"  # how many tokens to write
MODE = "attn.gen.mode"  # "greedy" or "sample"
TEMPERATURE = "attn.gen.temperature"
TOP_K = "attn.gen.top_k"  # 0: no top-k
TOP_P = "attn.gen.top_p"  # 1.0: no top-p
SEED = "attn.gen.seed"
LAYER = "attn.gen.layer"  # 1-based, like the Lab's pickers
HEAD = "attn.gen.head"
STEP = "attn.gen.step"  # which step's candidates a finished writing shows
REFUSED = "attn.gen.refused"  # why the last Write did not start, once
WHY = "attn.gen.why"  # bool: explain the written token the step slider picks (*Why this word?*)
MODES = {"greedy": N_("Greedy"), "sample": N_("Sample")}
BACKLOG_LIMIT = 60  # redraw only while fewer messages than this wait for the browser (see ui.training.run)
LOG = st_internals.logger("transformer_explorer.writing")


@dataclass(frozen=True)
class WritingView:
    """Where a running writing is drawn, and the head its heatmap shows (0-based)."""

    status: object  # st.empty: how far it is
    text: object  # st.empty: the prompt and what was written
    heatmap: object  # st.empty
    candidates: object  # st.empty
    layer: int
    head: int


def current(writer: Writer) -> Writing | None:
    """This session's writing by ``writer``'s model; a writing by another model is let go."""
    held = st.session_state.get(WRITING)
    if held is None:
        return None
    key, writing = held
    if key != writer.key:
        writing.stop()
        del st.session_state[WRITING]
        return None
    return writing


def _init() -> None:
    for key, value in ((NEW_TOKENS, 20), (MODE, "greedy"), (TEMPERATURE, 0.8), (TOP_K, 40), (TOP_P, 0.95),
                       (SEED, 0), (STEP, 1)):
        st.session_state.setdefault(key, value)


def _sampling_controls() -> Sampling:
    """Greedy or sampling, and the sampler's settings; returns the :class:`Sampling` they describe."""
    left, right = st.columns([1, 1])
    with left:
        st.slider(_("New tokens"), 1, MAX_NEW_TOKENS, key=NEW_TOKENS,
                  help=_("How many tokens the model writes after your text (fewer if it writes its end-of-text "
                         "token, reaches its position limit, or you press Stop)."))
    with right:
        mode = st.radio(_("Choosing the next token"), list(MODES), format_func=lambda m: _(MODES[m]), key=MODE,
                        horizontal=True,
                        help=_("Greedy always takes the likeliest token (the same text every time). Sample draws "
                               "each token at random from the model's probabilities, reshaped by temperature, "
                               "top-k and top-p; the seed makes the draw repeatable."))
    if mode == "greedy":
        return Sampling()
    cols = st.columns(4)
    with cols[0]:
        temperature = st.slider(_("Temperature"), 0.1, 2.0, step=0.1, key=TEMPERATURE,
                                help=_("Divides the logits before softmax: below 1 the likeliest tokens get more "
                                       "of the probability (safer text), above 1 less (more surprising text)."))
    with cols[1]:
        top_k = st.number_input(_("Top-k"), 0, 1000, key=TOP_K,
                                help=_("Draw only among the k likeliest tokens; 0 keeps them all."))
    with cols[2]:
        top_p = st.slider(_("Top-p"), 0.05, 1.0, step=0.05, key=TOP_P,
                          help=_("Draw only among the likeliest tokens that together hold this much probability "
                                 "(nucleus sampling); 1 keeps them all."))
    with cols[3]:
        seed = st.number_input(_("Seed"), 0, 9999, key=SEED,
                               help=_("Seed of the random draws: the same seed writes the same text."))
    return Sampling(temperature=float(temperature), top_k=int(top_k) or None,
                    top_p=float(top_p) if top_p < 1.0 else None, seed=int(seed))


def _stop() -> None:
    held = st.session_state.get(WRITING)
    if held is not None:
        held[1].stop()
        WRITINGS.release(held[1])
    stop_branch()


def _start(writer: Writer, sampling: Sampling) -> None:
    """Write's callback: a new writing from the Lab's text (replacing this session's last one), or the reason why
    not, kept for the section to show. It runs before the page does, so the page is drawn as the writing runs."""
    _stop()
    drop_branch()
    st.session_state.pop(WRITING, None)
    try:
        writing = start_writing(writer.model, writer.prompt_ids, writer.vocabulary, sampling,
                                int(st.session_state[NEW_TOKENS]), end_id=writer.end_id, model_name=writer.name)
        WRITINGS.admit(visitor().key, writing)
    except (ValueError, WritingRefused) as err:
        st.session_state[REFUSED] = str(err)
        return
    st.session_state[WRITING] = (writer.key, writing)
    st.session_state[STEP] = MAX_NEW_TOKENS  # the last step, once it has ended


def writing_section(writer: Writer | None) -> WritingView | None:
    """The *Watch it write* section for a model that writes; returns where a running writing is drawn."""
    if writer is None:
        return None
    _init()
    st.subheader(_("Watch it write"))
    if not projector():  # a projector keeps its first screen for the picture
        st.caption(_("The model continues your text one token at a time, reading its own tokens back (with a "
                     "key/value cache: each step computes the newest token's query, key and value only). Each new "
                     "token adds one row to the heatmap: where the token just read looked while the model chose "
                     "the next one."))
    sampling = _sampling_controls()
    writing = current(writer)
    running = writing is not None and not running_writing(writing).finished
    bar = st.container(horizontal=True, vertical_alignment="center")
    with bar:
        st.button(_("Write"), type="primary", icon=":material/edit:", disabled=running, key="attn.gen.start",
                  on_click=_start, args=(writer, sampling),
                  help=_("Continue the text above with up to the chosen number of new tokens, live."))
        st.button(_("Stop"), icon=":material/stop:", disabled=not running, on_click=_stop, key="attn.gen.stop",
                  help=_("Stop writing now; what was written stays."))
        status = st.empty()
    refused = st.session_state.pop(REFUSED, None)
    if refused:
        st.warning(refused, icon="✋")
    if writing is None:
        if not refused:
            st.info(_("Press **Write** to watch the model continue your text."), icon="✍️")
        return None
    n_layers, n_heads = writer.model.config.n_layers, writer.model.config.n_heads
    layer, head = charts.layer_head_picker(n_layers, n_heads, keys=(LAYER, HEAD), helps=(
        _("The layer whose attention the heatmap shows."), _("The head whose attention the heatmap shows.")))
    text_place = st.empty()
    left, right = st.columns([2, 1])
    with left:
        heat = st.empty()
    with right:
        cands = st.empty()
        finished = writing.finished and len(writing.written) > 1
        if finished:
            _step_slider(len(writing.written))
    view = WritingView(status, text_place, heat, cands, layer, head)
    _draw(view, writing)
    if writing.finished and writing.written:
        branch_controls(writer, writing, min(len(writing.written), int(st.session_state[STEP])))
        _downloads(writing, layer, head)
        _why_written(writer, writing, layer, head)
    return view


def _draw(view: WritingView, writing: Writing) -> None:
    """The writing as it stands: status, text, heatmap and the newest (or chosen) step's candidates."""
    _draw_text(view, writing)
    if not writing.written:
        return
    n = len(writing.written)
    view.heatmap.plotly_chart(heatmap_figure(writing, view.layer, view.head), width="stretch",
                              config=charts.chart_config(), key=f"attn.gen.heat.{n}.{writing.status}")
    shown = writing.written[-1] if not writing.finished else writing.written[min(n, int(st.session_state[STEP])) - 1]
    view.candidates.plotly_chart(candidates_figure(shown), width="stretch", config=charts.chart_config(),
                                 key=f"attn.gen.cands.{n}.{writing.status}")


def _draw_text(view: WritingView, writing: Writing) -> None:
    """The status and the text: the writing's, or the writing's and its branch's side by side."""
    view.status.caption(writing.describe())
    branch = current_branch(writing)
    if branch is not None:
        branch_text(view.text, writing, branch)
    else:
        _text(view.text, writing)


def _text(place, writing: Writing) -> None:
    """The prompt and what was written after it, the written part in the strong colour."""
    prompt, written = writing.text
    colour = strong_colour()  # the theme's primary colour, readable on the light and the dark theme
    place.markdown(
        f'<div style="font-size:1.1rem; line-height:1.6; padding:0.5rem 0.8rem; white-space:pre-wrap; '
        f'border-left:4px solid {colour}">{html.escape(prompt)}<b style="color:{colour}">{html.escape(written)}</b>'
        '</div>', unsafe_allow_html=True)


def _step_slider(n: int) -> None:
    """Which step's candidates the chart shows, once the writing has ended."""
    st.session_state[STEP] = max(1, min(n, int(st.session_state[STEP])))
    st.slider(_("Candidates of step"), 1, n, key=STEP,
              help=_("Which step's candidates the bar chart shows: the likeliest tokens and the one written."))


def _downloads(writing: Writing, layer: int, head: int) -> None:
    """Below a finished writing: the GIF of the growing heatmap and the steps as CSV."""
    name = f"writing_L{layer + 1}_H{head + 1}"
    branch = current_branch(writing)
    lang = language()  # the files are made when clicked, perhaps outside this run: in the page's language
    scale, stretch = charts.colorscale(), charts.stretch_attention()

    def gif() -> bytes:
        with using_language(lang):
            return growing_gif(writing, layer, head, scale=scale, stretch=stretch)

    def csv() -> str:
        with using_language(lang):
            return steps_csv(writing) if branch is None else branch_csv(writing, branch)

    with st.container(horizontal=True):
        st.download_button(_("GIF (heatmap growing)"), gif,
                           file_name=f"{name}.gif", mime="image/gif", key="attn.gen.dl.gif", on_click="ignore",
                           icon=":material/download:",
                           help=_("The heatmap of this layer and head growing one row per step."))
        st.download_button(_("CSV (steps)"), csv, file_name="writing_steps.csv",
                           mime="text/csv", key="attn.gen.dl.csv", on_click="ignore", icon=":material/download:",
                           help=_("One row per new token: step, position, token, its probability and the top "
                                  "candidates with theirs (and the branch's rows after the first writing's)."))


def _why_written(writer: Writer, writing: Writing, layer: int, head: int) -> None:
    """*Why this word?* for the written token the step slider picks: its logit traced back to the text before it,
    beside the attention row the heatmap shows for that step."""
    token = writing.written[min(len(writing.written), int(st.session_state[STEP])) - 1]
    if not st.toggle(_("Why this word? Explain “{token}”").format(token=token.token), key=WHY,
                     help=_("Which tokens before it moved the model towards the token written at the chosen step "
                            "(gradient × input, or integrated gradients on a button), beside where it looked.")):
        return
    tokens = (*writing.prompt_tokens, *(t.token for t in writing.written))
    explained = written_token(writing.ids, token.position, token.token_id, token.token, tokens, token.attention)
    why_panel(writer.model, explained, layer, head, key=WHY, model_key=writer.key, method_key=f"{WHY}.method",
              steps_key=f"{WHY}.steps", heads_key=f"{WHY}.heads")


def keep_writing(view: WritingView | None) -> None:
    """While this session's writing runs: one token, redraw, repeat; then run the page again to show the end.

    Called last on the page, so every other section is drawn while the model writes.
    """
    held = st.session_state.get(WRITING)
    if view is None or held is None:
        return
    first = held[1]
    writing = running_writing(first)  # the first writing, or its branch while that one writes
    if writing.finished:
        return
    try:
        for _tick in ticks(lambda: pace.WRITING_TICK_S):  # each token stays on screen at least a tick
            if writing.advance() is None:
                break
            if st_internals.send_backlog() < BACKLOG_LIMIT or st_internals.click_pending():
                # where Streamlit stops or reruns the page after a click; a branch changes only the text
                (_draw if writing is first else _draw_text)(view, first)
    except (st_internals.RerunException, st_internals.StopException):
        raise
    except Exception as err:  # a bug must never leave a page that says "writing…" with nobody writing
        LOG.exception("writing failed at step %d", len(writing.written))
        writing.stop()
        st.error(ngettext("Writing stopped after {n} token: {error}", "Writing stopped after {n} tokens: {error}",
                          len(writing.written)).format(n=num(len(writing.written)),
                                                       error=f"{type(err).__name__}: {err}"))
        return
    finally:
        if writing.finished:  # a click's rerun takes the same writing up again: it keeps its place
            WRITINGS.release(writing)
    st.rerun()
