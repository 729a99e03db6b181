"""Lessons: short guided scenarios for a classroom — predict, explore real models, reveal, notice."""

import streamlit as st

from explorer.i18n import _
from ui.common.theme import projector
from ui.lessons.frame import LESSON, draw_lesson
from ui.lessons.texts import LESSON_KEYS, lesson_by_key
from ui.lessons.views import LESSON_STEPS
from ui.pages import close_page, open_page, page_info, share_page


def _title(key: str) -> str:
    """A lesson's icon and title, in the session's language."""
    lesson = lesson_by_key(key)
    return f"{lesson.icon} {_(lesson.title)}"


info = open_page("lessons")
if not projector():  # on a projector the lesson itself comes first
    intro, link = st.columns([3, 1], vertical_alignment="center")
    intro.markdown(
        _(
            "Short guided scenarios for a class. Each one has a goal, a question to **predict** first, two to four "
            "steps with real models, and a **reveal** that explains the answer and what to notice."
        )
    )
    with link:
        share_page(info)
choice = st.segmented_control(
    _("Lesson"),
    LESSON_KEYS,
    key=LESSON,
    required=True,
    format_func=_title,
    default=None if LESSON in st.session_state else LESSON_KEYS[0],
    help=_("Pick a lesson; the link to this page remembers which one."),
    label_visibility="collapsed",
)
lesson = lesson_by_key(choice or LESSON_KEYS[0])
draw_lesson(lesson, LESSON_STEPS[lesson.key], page_path=lambda name: page_info(name).path)
close_page(info)
