"""The steps of the lesson "Attention is not explanation": guess, then see the model's answer, its attention, the
attribution of each word and what changing (and patching) one word does.

Every step asks for the student's guess first and reveals on a button. The model and the measurements come from
:mod:`explorer.lessons.not_explanation`; it is tiny, so each is computed when its step is revealed.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import N_, _, num, percent
from explorer.i18n.quantities import three_digits
from explorer.lessons import not_explanation as ne
from ui.common import charts
from ui.common.theme import projector
from ui.lessons.frame import key_of, step_intro
from ui.lessons.lesson import Lesson

WORDS = ne.SENTENCE.split()
LABELS = [f"{w} ({i + 1})" if WORDS.count(w) > 1 else w for i, w in enumerate(WORDS)]  # the two "the"s apart
CHANGE_LABELS = [
    f"{WORDS[p]} ({p + 1}) → {w}" if WORDS.count(WORDS[p]) > 1 else f"{WORDS[p]} → {w}" for p, w in ne.CHANGES
]
ATTENTION_COLOUR, GRAD_COLOUR, IG_COLOUR = "#0072B2", "#E69F00", "#D55E00"
BAR_NAMES = (N_("attention"), N_("gradient × input"), N_("integrated gradients"))  # English: the traces' names


def _guess(lesson: Lesson, step: int, prompt: str, options: list[str], button: str) -> int | None:
    """The student's guess and a button that reveals the answer: the guess's index once revealed, else None."""
    shown = key_of(lesson, f"shown{step}")
    guess = st.radio(
        f"🤔 {prompt}",
        range(len(options)),
        index=None,
        horizontal=True,
        format_func=options.__getitem__,
        key=key_of(lesson, f"guess{step}"),
        help=_("Guess before you look: the button shows what the model does."),
    )
    if st.button(
        button,
        key=key_of(lesson, f"show{step}"),
        type="primary",
        disabled=guess is None,
        help=_("Runs the model on the sentence and shows the result."),
    ):
        st.session_state[shown] = True
    if guess is None:
        st.caption(_("Make your guess first."))
        return None
    return guess if st.session_state.get(shown) else None


def _verdict(right: bool, text: str) -> None:
    said = _("You guessed right. {verdict}") if right else _("Not what you guessed. {verdict}")
    (st.success if right else st.info)(said.format(verdict=text), icon="✅" if right else "💡")


def _answer_step(lesson: Lesson, model) -> None:
    st.markdown(f"### {ne.SENTENCE} …")
    options = [ne.ANSWER, ne.OTHER]
    guess = _guess(lesson, 1, _("Which word comes next?"), options, _("Ask the model"))
    if guess is None:
        return
    probs = ne.next_word(model)
    cols = st.columns(3)
    for col, word in zip(cols, list(probs)[:3], strict=True):
        col.metric(f"“{word}”", percent(probs[word], 1), help=_("The model's probability for this next word."))
    said = next(iter(probs))
    _verdict(
        options[guess] == said,
        _("The model says “{word}”: the verb agrees with “key”, not “cabinets”.").format(word=said),
    )


def _heatmap_height() -> int:
    return 300 if projector() else 380


def _attention_step(lesson: Lesson, model) -> None:
    prompt = _("Which word does “{word}” look at most?").format(word=WORDS[-1])
    guess = _guess(lesson, 2, prompt, LABELS, _("Show the attention"))
    if guess is None:
        return
    weights = ne.attention_map(model)
    fig = charts.heatmap(
        weights,
        LABELS,
        LABELS,
        title=_("Where each word looks (the model's only head)"),
        x_title=_("word looked at"),
        y_title=_("word looking"),
        zmin=0.0,
        zmax=1.0,
        hover_name=_("weight"),
        height=_heatmap_height(),
    )
    charts.show(fig, key=key_of(lesson, "attention"))
    top = int(weights[-1].argmax())
    _verdict(
        guess == top,
        _("The last row puts {share} of its weight on “{word}” and {key_share} on “key”.").format(
            share=percent(weights[-1, top]), word=LABELS[top], key_share=percent(weights[-1, 1])
        ),
    )


def _bars(lesson: Lesson, row: np.ndarray, grad: np.ndarray, ig: np.ndarray) -> None:
    """Attention beside the two attributions, each as a share of its total size so they share one axis."""
    fig = go.Figure()
    hover = _("%{x}: %{y:.0%} of the total (value %{customdata:.3f})")
    for name, values, colour in zip(
        BAR_NAMES, (row, grad, ig), (ATTENTION_COLOUR, GRAD_COLOUR, IG_COLOUR), strict=True
    ):
        share = np.abs(values) / max(float(np.abs(values).sum()), 1e-12)
        fig.add_trace(
            go.Bar(
                x=LABELS,
                y=share.tolist(),
                name=_(name),
                marker_color=colour,
                customdata=values.tolist(),
                hovertemplate=f"{hover}<extra>{_(name)}</extra>",
            )
        )
    fig.update_yaxes(title=_("share"), tickformat=".0%", range=[0, 1])
    fig = charts.style(
        fig, title=_("Attention of the last word vs. what each word did to “is”"), height=_heatmap_height()
    )
    charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "attribution"))


def _attribution_step(lesson: Lesson, model) -> None:
    guess = _guess(lesson, 3, _("Which word made the model say “is”?"), LABELS, _("Compute the attribution"))
    if guess is None:
        return
    grad = ne.attributions(model, "grad_x_input")
    ig = ne.attributions(model, "integrated_gradients")
    _bars(lesson, ne.attention_map(model)[-1], grad.values, ig.values)
    top = int(np.abs(ig.values).argmax())
    if not projector():
        st.caption(
            _(
                "Bars show each method's share of its total size; hover for the values (logit units). "
                "Integrated gradients' values add up to the change of the “is” score from no words to the "
                "sentence, {change}, within {gap}. Attribution "
                "measures small changes to the words' vectors: it cannot say what a different word would do."
            ).format(change=num(ig.output - ig.baseline_output, 2), gap=three_digits(abs(ig.gap)))
        )
    _verdict(
        guess == top,
        _("Both methods put most of the credit on “{word}”, which gets only {share} of the attention.").format(
            word=LABELS[top], share=percent(ne.attention_map(model)[-1, top])
        ),
    )


def _patching_step(lesson: Lesson, model) -> None:
    guess = _guess(lesson, 4, _("Which change flips the answer to “are”?"), CHANGE_LABELS, _("Run the experiment"))
    if guess is None:
        return
    changes = [ne.change(model, p, w) for p, w in ne.CHANGES]
    change, sentence, answer, score = _("change"), _("sentence"), _("next word"), _("score of “is” − “are”")
    original = {
        change: _("none"),
        sentence: ne.SENTENCE,
        answer: ne.ANSWER,
        score: num(changes[0].patching.clean, 2),  # in the page's language, as the caption writes it
    }
    changed = (
        {change: label, sentence: c.sentence, answer: c.answer, score: num(c.patching.corrupt, 2)}
        for label, c in zip(CHANGE_LABELS, changes, strict=True)
    )
    st.dataframe([original, *changed], hide_index=True, width="stretch")
    flip = next(i for i, c in enumerate(changes) if c.answer != ne.ANSWER)
    c = changes[flip]
    fig = charts.heatmap(
        c.patching.restored,
        LABELS,
        [_("layer {n}").format(n=1)],
        zmin=0.0,
        zmax=1.0,
        hover_name=_("restored"),
        title=_("“{sentence}” with one position put back from the original").format(sentence=c.sentence),
        x_title=_("position put back"),
        height=200,
    )
    charts.show(fig, key=key_of(lesson, "patching"))
    if not projector():
        st.caption(
            _(
                "Original score {original}, changed {changed}. A cell is the share "
                "of the original score that comes back when that position's vector (entering the layer) is "
                "taken from the original sentence: 1 = all of it, 0 = none."
            ).format(original=num(c.patching.clean, 2), changed=num(c.patching.corrupt, 2))
        )
    _verdict(
        guess == flip,
        _(
            "Only changing “{word}” flips the answer, and putting its vector back "
            "restores it all. Changing the most-attended word leaves the answer as it was."
        ).format(word=WORDS[c.position]),
    )


def not_explanation_steps(lesson: Lesson) -> None:
    """The four steps of "Attention is not explanation"."""
    model = ne.agreement_model()
    for number, step in enumerate((_answer_step, _attention_step, _attribution_step, _patching_step), start=1):
        step_intro(lesson, number)
        step(lesson, model)
