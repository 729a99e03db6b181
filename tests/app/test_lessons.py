"""The Lessons page: every lesson renders, predict-then-reveal works, the live visuals follow their controls."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import app_at, assert_no_exception
from ui.lessons import training as lesson_training
from ui.lessons.texts import LESSON_KEYS, LESSONS, lesson_by_key
from ui.pages import PAGES, page_info

PAGE = "pages/lessons.py"


@pytest.fixture(scope="module")
def lessons_at() -> AppTest:
    return app_at(PAGE)


def _show(at: AppTest, key: str) -> AppTest:
    at.segmented_control(key="lessons.lesson").set_value(key).run()
    assert_no_exception(at)
    return at


def _metric(at: AppTest, label: str) -> str:
    """The value of the last metric with this label."""
    return [m.value for m in at.metric if m.label == label][-1]


def test_every_lesson_has_goal_steps_question_and_notice():
    assert len(LESSONS) >= 4 and len(set(LESSON_KEYS)) == len(LESSONS)
    pages = {p.name for p in PAGES}
    for lesson in LESSONS:
        assert all(link.page in pages for link in lesson.links)
        assert lesson.goal and 2 <= len(lesson.steps) <= 4 and lesson.notice
        assert 0 <= lesson.question.answer < len(lesson.question.options)
    assert lesson_by_key("no such lesson") is LESSONS[0]


def test_links_carry_settings_their_pages_accept():
    for link in (link for lesson in LESSONS for link in lesson.links if link.query):
        params = {p.query_name: p for p in page_info(link.page).params}
        for name, value in link.query:
            params[name].parse(value)  # raises for an unknown value


def test_every_lesson_renders_its_steps(lessons_at):
    for lesson in LESSONS:
        at = _show(lessons_at, lesson.key)
        assert at.header[0].value.endswith(lesson.title)
        steps = [s.value for s in at.subheader if s.value.startswith("Step")]
        assert len(steps) == len(lesson.steps)
        assert at.query_params.get("lesson", LESSON_KEYS[0]) == lesson.key


def test_a_link_opens_its_lesson_and_a_bad_one_explains(lessons_at):
    at = lessons_at
    at.query_params.clear()
    at.query_params["lesson"] = "causal"
    at.run()
    assert at.header[0].value.endswith("Causal masks")
    at.query_params["lesson"] = "nonsense"
    at.run()
    assert at.header[0].value.endswith(LESSONS[0].title)
    assert any("lesson='nonsense'" in i.value for i in at.info)


def test_predict_then_reveal(lessons_at):
    at = _show(lessons_at, "patches")
    reveal = at.button(key="lessons.patches.reveal")
    assert reveal.disabled  # no prediction yet
    at.radio(key="lessons.patches.answer").set_value(1).run()
    at.button(key="lessons.patches.reveal").click().run()
    assert not at.success and "17" in at.warning[0].value
    at.radio(key="lessons.patches.answer").set_value(2).run()
    assert "17" in at.success[0].value
    assert any("What to notice" in m.value for m in at.markdown)


def test_patch_size_changes_the_token_count(lessons_at):
    at = _show(lessons_at, "patches")
    at.select_slider(key="lessons.patches.patch").set_value(16).run()
    assert _metric(at, "Tokens with [CLS]") == "17"
    at.select_slider(key="lessons.patches.patch").set_value(8).run()
    assert _metric(at, "Tokens with [CLS]") == "65"


def test_causal_lesson_follows_the_sentence(lessons_at):
    at = _show(lessons_at, "causal")
    at.text_input(key="lessons.causal.text").set_value("one two three").run()
    assert_no_exception(at)
    sums = next(c.value for c in at.caption if c.value.startswith("Total weight right of the diagonal"))
    assert sums.startswith("Total weight right of the diagonal: 0.0") and sums.count("1.00") == 3
    at.text_input(key="lessons.causal.text").set_value("   ").run()
    assert at.warning and not at.exception


def test_scaling_lesson_sharpens_without_scaling(lessons_at):
    at = _show(lessons_at, "scaling")
    at.select_slider(key="lessons.scaling.d_k").set_value(4).run()
    small = float(_metric(at, "Largest weight, unscaled"))
    at.select_slider(key="lessons.scaling.d_k").set_value(1024).run()
    assert float(_metric(at, "Largest weight, unscaled")) > small
    assert float(_metric(at, "Largest weight, unscaled")) > float(_metric(at, "Largest weight, scaled"))


def test_training_comparison_feeds_both_training_lessons(monkeypatch):
    monkeypatch.setattr(lesson_training, "REVERSE_STEPS", 12)
    at = app_at(PAGE)
    at.button(key="lessons.positional.train").click().run()
    assert_no_exception(at)
    assert "reversed exactly" in _metric(at, "With sinusoidal encoding")
    assert len(at.get("plotly_chart")) >= 3  # accuracy curves and the two cross-attention maps
    at = _show(at, "heads")
    assert not [b for b in at.button if b.key == "lessons.heads.train"]  # the run is shared
    assert at.select_slider(key="lessons.heads.step").value == 0
    assert any(c.value.startswith("Highest at the end") for c in at.caption)


def test_a_lessons_run_waits_in_line_on_a_full_server_then_trains(monkeypatch):
    """Lesson runs take a place like any run: on a full server they wait in line, and train once a place frees."""
    from dataclasses import replace

    from explorer.host import NORMAL_LIMITS
    from explorer.runs.line import LINE
    from ui.common import pace
    from ui.lessons import live_runs

    asked, shown = {"n": 0}, []

    def full_then_free():  # no place for the first few asks, then one frees
        asked["n"] += 1
        return replace(NORMAL_LIMITS, max_live_runs=0 if asked["n"] < 6 else 6)

    monkeypatch.setattr(lesson_training, "REVERSE_STEPS", 12)
    monkeypatch.setattr(live_runs, "limits", full_then_free)
    monkeypatch.setattr(pace, "LINE_POLL_S", 0.01)
    monkeypatch.setattr(live_runs, "wait_text", lambda place: shown.append(place) or f"Place {place} in line")
    at = app_at(PAGE)
    at.button(key="lessons.positional.train").click().run()
    assert_no_exception(at)
    assert asked["n"] >= 6 and shown and shown[0] == 1  # it waited, first in line
    assert "reversed exactly" in _metric(at, "With sinusoidal encoding") and len(LINE) == 0


def test_a_lessons_run_lives_in_a_run_session_beside_live_trainings(monkeypatch):
    """A lesson's run goes through a RunSession of its own: the same registry, line and browser as the tab's Live
    Training session, a session id of its own (so it never replaces the tab's Live Training run), recorded and
    its training memory freed at its end."""
    from explorer.runs.recording import recording_key
    from explorer.runs.registry import REGISTRY
    from explorer.runs.session import RunSession
    from ui.lessons import live_runs
    from ui.training import controls as tc

    monkeypatch.setattr(lesson_training, "REVERSE_STEPS", 12)
    at = app_at(PAGE)
    at.button(key="lessons.positional.train").click().run()
    assert_no_exception(at)
    held, training = at.session_state[live_runs.SESSION], at.session_state[tc.SESSION]
    assert isinstance(held, RunSession) and held.run is not None and held.run.status == "done"
    assert held.client.key == training.client.key and held.client.session != training.client.session
    assert held.registry is training.registry is REGISTRY and held.line is training.line
    assert held.token is not None and REGISTRY.owns(held.token, held.client.session)
    assert held.run.training_state_bytes == 0  # finished: its gradients and optimiser state are freed
    assert held.store().has_recording(recording_key(held.run))  # the next student replays it


def test_a_lessons_run_counts_against_the_browsers_limit_with_its_live_training_runs(monkeypatch):
    """Two Live Training entries of the same browser already wait in line: the lesson's run may not take a third
    place, and the page says why instead of training."""
    from explorer.runs.line import LINE
    from explorer.runs.slots import PER_CLIENT
    from ui.training import controls as tc

    monkeypatch.setattr(lesson_training, "REVERSE_STEPS", 12)
    at = app_at(PAGE)
    key = at.session_state[tc.SESSION].client.key
    tickets = [f"another-tab-{i}" for i in range(PER_CLIENT)]
    try:
        for ticket in tickets:
            LINE.join(ticket, key)
        at.button(key="lessons.positional.train").click().run()
        assert_no_exception(at)
        assert any(f"already holds {PER_CLIENT} runs training, paused or waiting" in e.value for e in at.error), [
            e.value for e in at.error]
        assert not [m for m in at.metric if "reversed exactly" in m.value]  # nothing trained
    finally:
        for ticket in tickets:
            LINE.leave(ticket)


def test_a_training_lessons_untrained_view_does_not_ask_for_a_start_button_it_lacks(lessons_at):
    at = _show(lessons_at, "positional")
    said = " ".join(m.value for m in at.markdown)
    assert "Ready — not trained yet" in said and "press Start" not in said
