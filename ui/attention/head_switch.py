"""The Attention Lab's *Switch heads off* section: head buttons, the output before → after, and the logit lens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import _, ngettext, num, pgettext
from explorer.lab.head_switch import (
    Comparison,
    Outcome,
    Pair,
    Ranked,
    Subject,
    compare,
    describe_change,
    format_heads,
    metric_name,
    parse_heads,
    score_heads,
    switched_off,
)
from explorer.lab.kv_groups import groups_caption, kv_heads_of
from explorer.lab.lens_grid import LensGrid, lens_grid
from explorer.lab.subjects import pretrained_subject, random_lab, random_subject, token_labeller, trained_subject
from explorer.lab.text_input import MAX_TOKENS
from explorer.pretrained.lab import CAUSAL_FAMILIES, encode, shown_token
from transformer_core.models import CausalLM
from transformer_core.pretrained import Pretrained
from ui.attention.controls import LabSettings
from ui.attention.keys import HEAD_SCORES, LENS, OFF, OFF_MODE, OFF_MODES, OFF_PICK, OFF_SYNCED, TEMPERATURE, TOP_K
from ui.attention.kv_heads import groups_off_note, layer_buttons
from ui.attention.lab_run import trained_input
from ui.common import charts, state, tables
from ui.common.pretrained import probability_table
from ui.common.urlstate import add_link_notice

LENS_TEXT_MAX = 16  # with more positions the lens prints no tokens in its cells (hover shows them)


@dataclass(frozen=True)
class Shown:
    """The model the Lab shows, bound to the text, and what its logit lens needs."""

    subject: Subject
    ids: tuple[int, ...]  # the text's token ids
    tokens: tuple[str, ...]  # their labels
    label: Callable[[int], str] | None  # names a predicted id (decoder-only models: the lens is offered)


def shown_model(pre: Pretrained | None, trained: state.TrainedModel | None, text: str,
                s: LabSettings) -> Shown | None:
    """The pretrained, trained or random model the page shows; ``None`` when the text gives no token."""
    if pre is not None:
        inp = encode(pre, text, MAX_TOKENS)
        if inp.empty:
            return None
        subject = pretrained_subject(pre, inp, k=int(st.session_state.get(TOP_K, 10)),
                                     temperature=float(st.session_state.get(TEMPERATURE, 1.0)))
        label = _token_label(pre) if pre.family in CAUSAL_FAMILIES else None
        return Shown(subject, inp.ids, inp.tokens, label)
    if trained is not None:
        try:
            lab, task, vocab = trained_input(trained, text)
        except ValueError:
            return None
        if lab.empty:
            return None
        label = token_labeller(vocab) if isinstance(trained.model, CausalLM) else None
        return Shown(trained_subject(trained.model, task, lab.ids, vocab), lab.ids, lab.tokens, label)
    lab, _task, model = random_lab(s.text, s.kind, d_model=s.d_model, heads=s.heads, layers=s.layers, mask=s.mask,
                               seed=s.seed)
    return None if model is None else Shown(random_subject(model, lab, s.mask), lab.ids, lab.tokens, None)


def _token_label(pre: Pretrained) -> Callable[[int], str]:
    return lambda i: shown_token(pre.tokenizer.id_to_token(i) or f"#{i}")


def _reset() -> None:
    for key in [k for k in st.session_state if str(k).startswith(OFF_PICK)]:
        st.session_state[key] = []
    st.session_state[OFF] = st.session_state[OFF_SYNCED] = ""


def _sync_from_text(layers: int, heads: int) -> None:
    """Set the head buttons from the URL text when it changed outside them (a link) or they were forgotten."""
    text = st.session_state.get(OFF, "")
    missing = any(f"{OFF_PICK}{layer}" not in st.session_state for layer in range(layers))
    if not missing and text == st.session_state.get(OFF_SYNCED):
        for layer in range(layers):  # a model with fewer heads than before: drop the heads it lacks
            key = f"{OFF_PICK}{layer}"
            st.session_state[key] = [h for h in st.session_state[key] if h < heads]
        return
    pairs, bad = parse_heads(text, layers, heads)
    for layer in range(layers):
        st.session_state[f"{OFF_PICK}{layer}"] = [h for lay, h in pairs if lay == layer]
    if bad:
        named = ", ".join(repr(item[:20]) for item in bad[:5])
        if len(bad) > 5:
            named = _("{items} and {n} more").format(items=named, n=num(len(bad) - 5))
        why = ngettext("{items} is not a head of this model ({layers} layers × {heads} heads)",
                       "{items} are not heads of this model ({layers} layers × {heads} heads)",
                       len(bad)).format(items=named, layers=num(layers), heads=num(heads))
        now = format_heads(pairs) or pgettext("switched-off heads", "none")
        if not add_link_notice(OFF, _("was changed to {heads}: {why}.").format(heads=now, why=why)):
            st.info(_("Switched-off heads changed to {heads}: {why}.").format(heads=now, why=why), icon="🔗")


def head_buttons(layers: int, heads: int, kv: int | None = None) -> tuple[list[Pair], str]:
    """One row of head buttons per layer (and of K/V heads, when ``kv`` of them are shared by the ``heads`` query
    heads) and the replacement mode; returns the switched-off heads (0-based)."""
    kv = heads if kv is None or kv >= heads else kv
    _sync_from_text(layers, heads)
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        mode = st.radio(_("A switched-off head outputs"), list(OFF_MODES), format_func=lambda m: _(OFF_MODES[m]),
                        key=OFF_MODE, horizontal=True,
                        help=_("Zero: the head's slice of the concatenated heads (before W_O) becomes 0. Its mean: "
                               "it becomes the head's average output over the tokens of your text, which keeps the "
                               "size of its signal but removes what depends on the token."))
    with right:
        st.button(_("Switch every head back on"), on_click=_reset, width="stretch",
                  help=_("Clears every switched-off head."))
    if kv < heads:
        st.caption(groups_caption(heads, kv) + " " + _("The K/V buttons switch a whole group off at once."))
    width = heads + (kv + 2 if kv < heads else 0)  # buttons in a layer's row
    per_row = 3 if width <= 4 else 2 if width <= 6 else 1  # layers side by side while their buttons fit
    columns = st.columns(max(1, min(per_row, layers)))
    for layer in range(layers):
        with columns[layer % len(columns)]:
            layer_buttons(layer, heads, kv)
    if kv < heads:
        groups_off_note(layers, heads, kv)
    pairs = [(layer, h) for layer in range(layers) for h in sorted(st.session_state[f"{OFF_PICK}{layer}"])]
    st.session_state[OFF] = st.session_state[OFF_SYNCED] = format_heads(pairs)
    return pairs, mode


def _heads_title(pairs: Sequence[Pair]) -> str:
    named = ", ".join(f"L{layer + 1} H{head + 1}" for layer, head in pairs[:6])
    if len(pairs) > 6:
        return _("{items} and {n} more").format(items=named, n=num(len(pairs) - 6))
    return named


def _ranked(r: Ranked, key: str) -> None:
    st.caption(r.title)
    if r.probability:
        probability_table(list(r.labels), list(r.values), label=_("Token"), help=_("␣ marks a leading space."))
    else:
        tables.dataframe({"output": list(r.labels), "value": [round(v, 4) for v in r.values]}, hide_index=True,
                     width="stretch", key=key, column_config={"output": st.column_config.TextColumn(_("output")),
                                                              "value": st.column_config.NumberColumn(_("value"))})


def _outcome(o: Outcome, title: str, key: str) -> None:
    st.markdown(f"**{title}**")
    if o.answer:
        st.markdown(_("Answer on your text: `{answer}`").format(answer=o.answer))
    if o.metric:
        st.markdown(_("Held-out {metric}: **{value}**").format(metric=metric_name(o.metric[0]),
                                                               value=num(o.metric[1], 3)))
    for i, r in enumerate(o.ranked):
        _ranked(r, f"{key}.{i}")


def _vector_change(result: Comparison, tokens: Sequence[str]) -> None:
    change = result.vector_change()
    fig = go.Figure(go.Bar(x=[f"{i}·{t}" for i, t in enumerate(tokens)], y=change * 100,
                           hovertemplate=_("%{x}: moved %{y:.1f}%") + "<extra></extra>"))
    fig.update_yaxes(title=_("moved (%)"), rangemode="tozero")
    charts.show(charts.style(fig, title=_("How far each token's output vector moved"), height=300),
                key="attn.off.vectors")


def comparison_view(result: Comparison, tokens: Sequence[str]) -> None:
    """The summary sentences, then the output with every head on beside the output with the heads off."""
    lines = describe_change(result, tokens)
    for line in lines:
        st.markdown(f"- {line}")
    if not result.heads:
        return
    if not lines:
        st.info(_("This model gives nothing to compare on this text: BERT's output here is its fill-ins for "
                  "[MASK], so put [MASK] in your text."), icon="🕳️")
        return
    if result.before.vectors is not None:
        _vector_change(result, tokens)
        st.caption(_("Random weights predict nothing, so this shows how much each token's final vector changed: "
                     "‖after − before‖ / ‖before‖."))
        return
    left, right = st.columns(2)
    with left:
        _outcome(result.before, _("Every head on"), "attn.off.before")
    with right:
        _outcome(result.after, _("Switched off: {heads}").format(heads=_heads_title(result.heads)), "attn.off.after")


def _lens_figure(grid: LensGrid) -> go.Figure:
    rows = [_("after layer {layer}").format(layer=i + 1) for i in range(len(grid.top))]
    cols = [f"{i}·{t}" for i, t in enumerate(grid.tokens)]
    text = np.array(grid.top, dtype=object)
    custom = np.stack([text, np.broadcast_to(np.array(grid.final, dtype=object), text.shape),
                       np.round(grid.final_probs * 100, 1)], axis=-1)
    printed = len(grid.tokens) <= LENS_TEXT_MAX
    fig = go.Figure(go.Heatmap(
        z=grid.top_probs, x=cols, y=rows, zmin=0.0, zmax=1.0, colorscale=charts.plotly_scale(charts.colorscale()),
        text=text if printed else None, texttemplate="%{text}" if printed else None, customdata=custom,
        colorbar=dict(title=_("probability")),  # cell text in Plotly's size that fits the cell
        hovertemplate=_("%{y}, position %{x}<br>top token “%{customdata[0]}” %{z:.1%}<br>the model's final "
                        "prediction “%{customdata[1]}” gets %{customdata[2]}%") + "<extra></extra>"))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", title=_("position (the token after it is predicted)"))
    return charts.style(fig, title=_("Logit lens: the likeliest next token after each layer"),
                        height=max(300, 150 + 44 * len(rows)))


def lens_section(shown: Shown, pairs: Sequence[Pair], mode: str) -> None:
    """A toggle and, when on, the logit lens of the decoder-only model, with the switched-off heads off."""
    if shown.label is None:
        return
    if not st.toggle(_("Logit lens: what would the model say after layer 1, 2, …?"), key=LENS,
                     help=_("Reads the running vector of every token after each layer through the model's final "
                            "norm and its output layer, as if the model stopped there (nostalgebraist 2020).")):
        return
    with switched_off(shown.subject, pairs, mode):
        grid = lens_grid(shown.subject.model, shown.ids, shown.tokens, shown.label)
    charts.show(_lens_figure(grid), key="attn.lens_chart")
    agree = grid.agreement()
    counts = ", ".join(f"{a}/{len(grid.tokens)}" for a in agree)
    if pairs:
        st.caption(_("Each cell: the token the model would predict next if it stopped after that layer with {heads} "
                     "switched off, coloured by its probability. The last row is the model's own prediction. "
                     "Positions whose top token already equals it, per layer: {counts}.").format(
                         heads=_heads_title(pairs), counts=counts))
    else:
        st.caption(_("Each cell: the token the model would predict next if it stopped after that layer, coloured "
                     "by its probability. The last row is the model's own prediction. Positions whose top token "
                     "already equals it, per layer: {counts}.").format(counts=counts))


def _scored_key(shown: Shown, mode: str) -> tuple:
    """What a head scoring depends on: the model (the shared object), its stack, the text and the mode."""
    return id(shown.subject.model), shown.subject.stack, shown.ids, mode


def _run_scores(shown: Shown, mode: str) -> None:
    bar = st.progress(0.0, text=_("Switching each head off in turn…"))
    step = _("Head {done} of {total}…")  # translated here: the progress may be reported from another thread
    scores = score_heads(shown.subject, shown.ids, mode,
                         progress=lambda done, total: bar.progress(done / total,
                                                                   text=step.format(done=num(done), total=num(total))))
    bar.empty()
    st.session_state[HEAD_SCORES] = (_scored_key(shown, mode), scores)


def score_section(shown: Shown, mode: str) -> None:
    """*Score every head* (decoder-only models): the loss on the text gained by switching each head off alone."""
    if shown.label is None or len(shown.ids) < 2:
        return
    layers, heads = shown.subject.shape
    if st.button(_("Score every head"), key="attn.score_heads", icon=":material/grid_view:",
                 help=_("Switches each of the {n} heads off alone ({mode}) and measures how much worse the model "
                        "predicts your text: one run per head, so about 15 s for GPT-2 small (144 heads) on a CPU, "
                        "with a progress bar.").format(n=num(layers * heads), mode=_(OFF_MODES[mode]).lower())):
        _run_scores(shown, mode)
    stored = st.session_state.get(HEAD_SCORES)
    if not stored or stored[0] != _scored_key(shown, mode):
        return
    scores = stored[1]
    fig = charts.heatmap(scores, x=[f"H{h + 1}" for h in range(heads)], y=[f"L{i + 1}" for i in range(layers)],
                         diverging=True, decimals=3, hover_name=_("loss gained (nats)"),
                         title=_("Loss on your text gained when each head is switched off alone (nats)"),
                         numbers=heads <= 12 and layers <= 12)
    charts.show(fig, key="attn.head_scores_chart")
    order = np.argsort(scores, axis=None)[::-1][:3]
    top = ", ".join(f"L{i // heads + 1} H{i % heads + 1} (+{num(scores.flat[i], 3)})" for i in order)
    st.caption(_("Red: the model predicts your text worse without the head (its mean next-token loss rises); blue: "
                 "better. Most needed here: {top}. Each cell is one run with only that head off; the buttons above "
                 "switch heads off together.").format(top=top))


def switch_off_section(shown: Shown) -> None:
    """Switch heads off and watch the output change; the logit lens for decoder-only models."""
    st.subheader(_("Switch heads off"))
    st.caption(_("A heatmap shows where a head looks, not whether the model needs it. Switch heads off and the model "
                 "runs again without them: each switched-off head's output (its slice of the heads before W_O) is "
                 "replaced, and nothing else changes."))
    layers, heads = shown.subject.shape
    config = getattr(shown.subject.model, "config", None)
    pairs, mode = head_buttons(layers, heads, kv_heads_of(config) if config is not None else None)
    comparison_view(compare(shown.subject, pairs, mode), shown.tokens)
    lens_section(shown, pairs, mode)
    score_section(shown, mode)
