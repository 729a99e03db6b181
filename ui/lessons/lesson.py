"""The shape of a guided lesson: its goal, steps, predict-then-reveal question, what to notice and where to go next.

One shape for every lesson, so that ``ui.lessons.frame`` draws each in the same rhythm (goal, prediction, steps,
reveal, what to notice, links). The lessons themselves are written in ``ui.lessons.trained_texts`` and
``ui.lessons.instant_texts`` and listed in ``ui.lessons.texts``.

Every text a person reads is English, marked with ``N_`` where it is written and translated where it is shown
(``_(lesson.title)``): a lesson's title, goal, steps and notice, its question's prompt, options and explanation, and
its links' labels. Keys, icons, page names and query parameters are not translated.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """A predict-then-reveal question."""

    prompt: str  # the question, asked before the steps
    options: tuple[str, ...]  # possible answers
    answer: int  # index of the right answer in options
    explanation: str  # why it is right, shown on reveal


@dataclass(frozen=True)
class Link:
    """A link to another page, opened with prepared settings."""

    page: str  # the page's name in the page registry (ui/pages.py), e.g. "attention"
    label: str  # link text
    query: tuple[tuple[str, str], ...] = ()  # query parameters the page reads (see its UrlParams)


@dataclass(frozen=True)
class Lesson:
    """One guided scenario."""

    key: str  # short id, used in the URL
    title: str  # heading
    icon: str  # emoji shown with the title
    goal: str  # what the student will understand afterwards
    steps: tuple[str, ...]  # instructions, one per step (Markdown)
    question: Question  # predicted before the steps, revealed after them
    notice: tuple[str, ...]  # "what to notice" bullet points
    links: tuple[Link, ...] = ()  # where to explore further
