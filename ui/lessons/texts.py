"""The guided lessons, in the order the page offers them, and how a link's lesson key finds its lesson.

This is the one registry of lessons: the Lessons page, its links (``?lesson=<key>``) and Home's line about the
lessons all read :data:`LESSONS`. A lesson's text is written in the module of its group (``ui.lessons.trained_texts``
for those that train a model, ``ui.lessons.instant_texts`` for the others); its shape is ``ui.lessons.lesson``.
"""

from __future__ import annotations

from ui.lessons.instant_texts import CAUSAL, NOT_EXPLANATION, PATCHES, SCALING
from ui.lessons.lesson import Lesson
from ui.lessons.trained_texts import HEADS, IMPORTANCE, POSITIONAL

LESSONS: tuple[Lesson, ...] = (POSITIONAL, HEADS, IMPORTANCE, PATCHES, CAUSAL, SCALING, NOT_EXPLANATION)
LESSON_KEYS = tuple(lesson.key for lesson in LESSONS)


def lesson_by_key(key: str) -> Lesson:
    """The lesson with this key (the first lesson for an unknown key)."""
    return next((lesson for lesson in LESSONS if lesson.key == key), LESSONS[0])
