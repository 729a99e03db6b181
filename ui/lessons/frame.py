"""The lesson frame: the goal, the prediction, the steps, the reveal and the links every lesson is drawn in.

Each lesson follows the same rhythm: read the goal, **predict** the answer to a question, work through two or
three steps that show the real thing (drawn by ``ui.lessons.views``), **reveal** whether the prediction was
right and why, then read what to notice. The lessons are listed in ``ui.lessons.texts``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from explorer.i18n import _
from ui.common.theme import projector
from ui.common.urlstate import UrlParam
from ui.lessons.lesson import Lesson
from ui.lessons.texts import LESSON_KEYS

T = TypeVar("T")  # what a lesson's first step trains
LESSON = "lessons.lesson"  # str: key of the lesson shown (in the URL as ?lesson=)
URL_PARAMS = (UrlParam(LESSON, LESSON_KEYS[0], choices=LESSON_KEYS, name="lesson"),)


def key_of(lesson: Lesson, name: str) -> str:
    """Session-state key of a widget that belongs to ``lesson``."""
    return f"lessons.{lesson.key}.{name}"


def step_intro(lesson: Lesson, number: int) -> None:
    """The heading and instruction of step ``number`` (1-based) of ``lesson``."""
    st.subheader(_("Step {number}").format(number=number))
    st.markdown(_(lesson.steps[number - 1]))


def model_steps(
    lesson: Lesson,
    train: Callable[[Lesson], T | None],
    explore: Callable[[Lesson, T], None],
    measure: Callable[[Lesson, T], None],
) -> None:
    """Three steps around one trained model: step 1 trains it (``train`` returns it once it exists), steps 2 and 3
    explore and measure it."""
    step_intro(lesson, 1)
    model = train(lesson)
    step_intro(lesson, 2)
    if model is None:
        st.caption(_("Train the model in step 1 first."))
    else:
        explore(lesson, model)
    step_intro(lesson, 3)
    if model is not None:
        measure(lesson, model)


def draw_lesson(lesson: Lesson, steps: Callable[[Lesson], None], *, page_path: Callable[[str], str]) -> None:
    """The whole lesson: goal, prediction, the steps (``steps`` draws them), reveal, what to notice, links.

    ``page_path`` gives the script of a page named in the page registry (``ui.pages``), for the links.
    """
    st.header(f"{lesson.icon} {_(lesson.title)}")
    st.markdown(_("**Goal.** {goal}").format(goal=_(lesson.goal)))
    with st.container(border=True):
        st.markdown(_("**Predict first.** {question}").format(question=_(lesson.question.prompt)))
        choice = st.radio(
            _("Your prediction"),
            range(len(lesson.question.options)),
            index=None,
            format_func=lambda i: _(lesson.question.options[i]),
            key=key_of(lesson, "answer"),
            help=_("Choose before you do the steps; the Reveal button at the end tells you if you were right."),
            label_visibility="collapsed",
        )
    steps(lesson)
    st.subheader(_("Reveal"))
    _reveal(lesson, choice)
    _links(lesson, page_path)


def _reveal(lesson: Lesson, choice: int | None) -> None:
    revealed = key_of(lesson, "revealed")
    if st.button(
        _("Reveal the answer"),
        key=key_of(lesson, "reveal"),
        type="primary",
        disabled=choice is None,
        help=_("Shows whether your prediction was right, why, and what to notice."),
    ):
        st.session_state[revealed] = True
    if choice is None:
        st.caption(_("Make a prediction at the top of the lesson first."))
        return
    if not st.session_state.get(revealed, False):
        return
    q = lesson.question
    right, explanation = _(q.options[q.answer]), _(q.explanation)
    if choice == q.answer:
        st.success(_("Right: **{answer}**. {explanation}").format(answer=right, explanation=explanation), icon="✅")
    else:
        st.warning(
            _("Not quite — you chose “{chosen}”. The answer is **{answer}**. {explanation}").format(
                chosen=_(q.options[choice]), answer=right, explanation=explanation
            ),
            icon="💡",
        )
    st.markdown(_("**What to notice**") + "\n\n" + "\n".join(f"- {_(item)}" for item in lesson.notice))


def _links(lesson: Lesson, page_path: Callable[[str], str]) -> None:
    if not lesson.links or projector():
        return
    st.subheader(_("Explore further"))
    for link in lesson.links:
        st.page_link(page_path(link.page), label=_(link.label), icon="➡️", query_params=dict(link.query) or None)
