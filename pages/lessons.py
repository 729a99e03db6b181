"""Lessons: short guided scenarios for a classroom — predict, explore real models, reveal, notice."""

from pathlib import Path

import streamlit as st

from ui.common.router import ensure_router
from ui.common.urlstate import UrlParam, bind_url, push_url, share_link
from ui.lessons.frame import LESSON, LESSON_KEYS, LESSONS, draw_lesson, lesson_by_key, presentation
from ui.lessons.views import LESSON_STEPS

ensure_router()  # a deep link on a fresh server must still go through app.py

PARAMS = (UrlParam(LESSON, LESSON_KEYS[0], choices=LESSON_KEYS, name="lesson"),)
TITLES = {lesson.key: f"{lesson.icon} {lesson.title}" for lesson in LESSONS}

bind_url(PARAMS, page="lessons")
st.title("🎓 Lessons")
intro, link = st.columns([3, 1], vertical_alignment="center")
intro.markdown(
    "Short guided scenarios for a class. Each one has a goal, a question to **predict** first, two or three "
    "steps with real models, and a **reveal** that explains the answer and what to notice."
)
if not presentation():
    with link:
        share_link(PARAMS, url_path="lessons")
choice = st.segmented_control(
    "Lesson", LESSON_KEYS, key=LESSON, required=True, format_func=TITLES.get,
    default=None if LESSON in st.session_state else LESSON_KEYS[0],
    help="Pick a lesson; the link to this page remembers which one.", label_visibility="collapsed",
)
lesson = lesson_by_key(choice or LESSON_KEYS[0])
draw_lesson(lesson, LESSON_STEPS[lesson.key], pages_dir=Path(__file__).parent.name)
push_url(PARAMS)
