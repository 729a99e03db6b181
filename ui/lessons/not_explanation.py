"""The steps of the lesson "Attention is not explanation": guess, then see the model's answer, its attention, the
attribution of each word and what changing (and patching) one word does.

Every step asks for the student's guess first and reveals on a button. The model and the measurements come from
:mod:`explorer.lessons.not_explanation`; it is tiny, so each is computed when its step is revealed.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.lessons import not_explanation as ne
from ui.common import charts
from ui.common.theme import projector
from ui.lessons.frame import key_of, step_intro
from ui.lessons.texts import Lesson

WORDS = ne.SENTENCE.split()
LABELS = [f"{w} ({i + 1})" if WORDS.count(w) > 1 else w for i, w in enumerate(WORDS)]  # the two "the"s apart
CHANGE_LABELS = [f"{WORDS[p]} ({p + 1}) → {w}" if WORDS.count(WORDS[p]) > 1 else f"{WORDS[p]} → {w}"
                 for p, w in ne.CHANGES]
ATTENTION_COLOUR, GRAD_COLOUR, IG_COLOUR = "#0072B2", "#E69F00", "#D55E00"


def _guess(lesson: Lesson, step: int, prompt: str, options: list[str], button: str) -> int | None:
    """The student's guess and a button that reveals the answer: the guess's index once revealed, else None."""
    shown = key_of(lesson, f"shown{step}")
    guess = st.radio(f"🤔 {prompt}", range(len(options)), index=None, horizontal=True,
                       format_func=options.__getitem__, key=key_of(lesson, f"guess{step}"),
                       help="Guess before you look: the button shows what the model does.")
    if st.button(button, key=key_of(lesson, f"show{step}"), type="primary", disabled=guess is None,
                    help="Runs the model on the sentence and shows the result."):
        st.session_state[shown] = True
    if guess is None:
        st.caption("Make your guess first.")
        return None
    return guess if st.session_state.get(shown) else None


def _verdict(right: bool, text: str) -> None:
    (st.success if right else st.info)(("You guessed right. " if right else "Not what you guessed. ") + text,
                                        icon="✅" if right else "💡")


def _answer_step(lesson: Lesson, model) -> None:
    st.markdown(f"### {ne.SENTENCE} …")
    options = [ne.ANSWER, ne.OTHER]
    guess = _guess(lesson, 1, "Which word comes next?", options, "Ask the model")
    if guess is None:
        return
    probs = ne.next_word(model)
    cols = st.columns(3)
    for col, word in zip(cols, list(probs)[:3], strict=True):
        col.metric(f"“{word}”", f"{probs[word]:.1%}", help="The model's probability for this next word.")
    said = next(iter(probs))
    _verdict(options[guess] == said, f"The model says “{said}”: the verb agrees with “key”, not “cabinets”.")


def _heatmap_height() -> int:
    return 300 if projector() else 380


def _attention_step(lesson: Lesson, model) -> None:
    guess = _guess(lesson, 2, f"Which word does “{WORDS[-1]}” look at most?", LABELS, "Show the attention")
    if guess is None:
        return
    weights = ne.attention_map(model)
    fig = charts.heatmap(weights, LABELS, LABELS, title="Where each word looks (the model's only head)",
                         x_title="word looked at", y_title="word looking", zmin=0.0, zmax=1.0, hover_name="weight",
                         height=_heatmap_height())
    charts.show(fig, key=key_of(lesson, "attention"))
    top = int(weights[-1].argmax())
    _verdict(guess == top, f"The last row puts {weights[-1, top]:.0%} of its weight on “{LABELS[top]}” and "
                           f"{weights[-1, 1]:.0%} on “key”.")


def _bars(lesson: Lesson, row: np.ndarray, grad: np.ndarray, ig: np.ndarray) -> None:
    """Attention beside the two attributions, each as a share of its total size so they share one axis."""
    fig = go.Figure()
    for name, values, colour in (("attention", row, ATTENTION_COLOUR), ("gradient × input", grad, GRAD_COLOUR),
                                 ("integrated gradients", ig, IG_COLOUR)):
        share = np.abs(values) / max(float(np.abs(values).sum()), 1e-12)
        fig.add_trace(go.Bar(x=LABELS, y=share.tolist(), name=name, marker_color=colour, customdata=values.tolist(),
                             hovertemplate="%{x}: %{y:.0%} of the total (value %{customdata:.3f})"
                                           f"<extra>{name}</extra>"))
    fig.update_yaxes(title="share", tickformat=".0%", range=[0, 1])
    fig = charts.style(fig, title="Attention of the last word vs. what each word did to “is”",
                       height=_heatmap_height())
    charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "attribution"))


def _attribution_step(lesson: Lesson, model) -> None:
    guess = _guess(lesson, 3, "Which word made the model say “is”?", LABELS, "Compute the attribution")
    if guess is None:
        return
    grad = ne.attributions(model, "grad_x_input")
    ig = ne.attributions(model, "integrated_gradients")
    _bars(lesson, ne.attention_map(model)[-1], grad.values, ig.values)
    top = int(np.abs(ig.values).argmax())
    if not projector():
        st.caption(f"Bars show each method's share of its total size; hover for the values (logit units). "
                   f"Integrated gradients' values add up to the change of the “is” score from no words to the "
                   f"sentence, {ig.output - ig.baseline_output:.2f}, within {abs(ig.gap):.1e}. Attribution "
                   "measures small changes to the words' vectors: it cannot say what a different word would do.")
    _verdict(guess == top, f"Both methods put most of the credit on “{LABELS[top]}”, which gets only "
                           f"{ne.attention_map(model)[-1, top]:.0%} of the attention.")


def _patching_step(lesson: Lesson, model) -> None:
    guess = _guess(lesson, 4, "Which change flips the answer to “are”?", CHANGE_LABELS, "Run the experiment")
    if guess is None:
        return
    changes = [ne.change(model, p, w) for p, w in ne.CHANGES]
    score = "score of “is” − “are”"
    original = {"change": "none", "sentence": ne.SENTENCE, "next word": ne.ANSWER,
                score: round(changes[0].patching.clean, 2)}
    st.dataframe([original, *({"change": label, "sentence": c.sentence, "next word": c.answer,
                               score: round(c.patching.corrupt, 2)}
                              for label, c in zip(CHANGE_LABELS, changes, strict=True))],
                 hide_index=True, width="stretch")
    flip = next(i for i, c in enumerate(changes) if c.answer != ne.ANSWER)
    c = changes[flip]
    fig = charts.heatmap(c.patching.restored, LABELS, ["layer 1"], zmin=0.0, zmax=1.0, hover_name="restored",
                         title=f"“{c.sentence}” with one position put back from the original",
                         x_title="position put back", height=200)
    charts.show(fig, key=key_of(lesson, "patching"))
    if not projector():
        st.caption(f"Original score {c.patching.clean:.2f}, changed {c.patching.corrupt:.2f}. A cell is the share "
                   "of the original score that comes back when that position's vector (entering the layer) is "
                   "taken from the original sentence: 1 = all of it, 0 = none.")
    _verdict(guess == flip, f"Only changing “{WORDS[c.position]}” flips the answer, and putting its vector back "
                            "restores it all. Changing the most-attended word leaves the answer as it was.")


def not_explanation_steps(lesson: Lesson) -> None:
    """The four steps of "Attention is not explanation"."""
    model = ne.agreement_model()
    for number, step in enumerate((_answer_step, _attention_step, _attribution_step, _patching_step), start=1):
        step_intro(lesson, number)
        step(lesson, model)
