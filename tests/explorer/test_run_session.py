"""A session's run and its rules, without Streamlit: one run per session, what a new run lets go of, the line and
each client's limit, replays and recordings (never of a user's own text), parking and taking back."""

from __future__ import annotations

from dataclasses import replace

import pytest

from explorer.runs.clients import Client, browser_id
from explorer.runs.line import RunLine
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.recording import ReplayRun, recording_key
from explorer.runs.registry import RunRegistry
from explorer.runs.session import RunSession
from explorer.runs.store import MemoryStore
from tests.explorer.test_run_slots import no_other_runs  # noqa: F401 - every test starts with no run training
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config

STORY_A = "the cat sat on the mat. " * 12
STORY_B = "the mat sat on the cat. " * 12  # the same characters in another order: the same vocabulary


@pytest.fixture(scope="module")
def task():
    return get_task("reverse", seq_len=4, eval_size=16)


def specs_of(task, steps: int = 12, seed: int = 0) -> list[RunSpec]:
    config = replace(task.default_model_config(), d_model=16, n_heads=2, d_ff=32, n_layers=1)
    return [RunSpec("A", config, default_train_config(task, steps=steps, seed=seed, batch_size=8))]


class KeepingStore(MemoryStore):
    """A memory store that lists the recordings it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[str] = []

    def save_recording(self, recording) -> None:
        self.saved.append(recording.key)
        super().save_recording(recording)


class Server:
    """A registry, a line, a store and a place limit shared by the sessions of one test."""

    def __init__(self, places: int = 4) -> None:
        self.registry, self.line, self.store, self.places = RunRegistry(), RunLine(), KeepingStore(), places
        self.handed: list[LiveRun] = []

    def session(self, tab: str, browser: str | None = None, **kw) -> RunSession:
        return RunSession(Client(tab, browser=browser), max_running=lambda: self.places, registry=self.registry,
                          line=self.line, store=lambda: self.store, hand_over=self.handed.append, **kw)


def train_to_end(held: RunSession) -> None:
    while held.train_slice(1.0) is None:
        pass
    held.loop_ended(held.run.status)


def test_a_session_shows_one_run_and_a_new_run_lets_go_of_everything_the_old_one_held(task):
    server = Server()
    held = server.session("tab", "browser")
    held.sharing = True
    held.start(task, specs_of(task, 400), "settings-1")
    old = held.run
    held.train_slice(0.05)
    held.broadcast()
    token, channel = held.token, held.channel.run_id
    assert old.status == "running" and server.registry.owns(token, "tab") and old.training_state_bytes > 0
    held.reset(task, specs_of(task, 400), "settings-1")
    assert held.run is not old and held.run.status == "ready" and held.token is None
    assert old.status == "stopped" and old.training_state_bytes == 0  # its place and memory are free
    assert server.registry.claim(token, "tab", "browser") is None  # its reload token is gone
    assert server.store.gone(channel)["reason"] == "Its owner started a new run."  # its watch link says so
    assert not held.take_back(token, "settings-1") and held.notice is None  # its own old address: nothing lost


def test_a_new_run_leaves_the_line(task):
    server = Server(places=0)
    held = server.session("tab", "browser")
    held.start(task, specs_of(task), "a")
    assert held.waiting and server.line.place("tab") == 1
    held.reset(task, specs_of(task), "a")
    assert not held.waiting and len(server.line) == 0


def test_the_run_waits_in_line_and_starts_when_a_place_frees(task):
    server = Server(places=1)
    first, second = server.session("t1", "b1"), server.session("t2", "b2")
    first.start(task, specs_of(task, 400), "s")
    second.start(task, specs_of(task, 400), "s")
    assert first.run.status == "running" and second.waiting and second.poll_line() == 1
    first.pause()
    assert second.poll_line() is None and second.run.status == "running" and not second.waiting
    assert second.token is not None  # a run that starts gets its reload token
    assert first.run in server.handed  # pausing hands the model to the other pages


def test_one_browser_holds_at_most_two_places_and_line_entries_whatever_its_tabs(task):
    server = Server(places=4)
    tabs = [server.session(f"tab{i}", "one-browser") for i in range(4)]
    for tab in tabs:
        tab.start(task, specs_of(task, 400), "s")
    assert [t.run.status for t in tabs] == ["running", "running", "ready", "ready"]
    assert not tabs[2].waiting and "most one visitor may hold at once" in tabs[2].notice[1]
    assert "2 runs" in tabs[2].notice[1]
    someone = server.session("other", "another-browser")
    someone.start(task, specs_of(task, 400), "s")
    assert someone.run.status == "running"  # the rest of the class still gets places


def test_a_replay_takes_no_place_and_a_finished_run_is_recorded(task):
    server = Server(places=1)
    first = server.session("t1", "b1")
    first.start(task, specs_of(task), "s")
    train_to_end(first)
    assert first.run.status == "done" and server.store.saved == [recording_key(first.run)]
    blocker = server.session("t2", "b2")
    blocker.start(task, specs_of(task, 400, seed=5), "other")  # the only place is taken now
    second = server.session("t3", "b3")
    second.start(task, specs_of(task), "s")
    assert isinstance(second.run, ReplayRun) and second.run.status == "running" and not second.waiting
    third = server.session("t4", "b4")
    third.train_for_real(task, specs_of(task), "s")  # "Train for real": a real run, so it waits
    assert not isinstance(third.run, ReplayRun) and third.waiting


def test_two_texts_with_the_same_vocabulary_have_different_recording_keys():
    a, b = get_task("char_lm", text=STORY_A), get_task("char_lm", text=STORY_B)
    assert a.vocab == b.vocab and a.options() == b.options()
    runs = [LiveRun(t, specs_of(t)) for t in (a, b)]
    assert recording_key(runs[0]) != recording_key(runs[1])
    assert recording_key(runs[0]) == recording_key(LiveRun(get_task("char_lm", text=STORY_A), specs_of(a)))
    built_in = get_task("char_lm")
    assert LiveRun(built_in, specs_of(built_in)).recordable


def test_a_run_on_a_users_own_text_is_never_recorded_nor_replayed_to_another_session():
    server = Server()
    task = get_task("char_lm", text=STORY_A)
    student_a = server.session("a", "browser-a")
    student_a.start(task, specs_of(task), "own text")
    assert not student_a.run.recordable
    train_to_end(student_a)
    assert student_a.run.status == "done" and server.store.saved == []  # nothing kept for others
    other = get_task("char_lm", text=STORY_B)
    student_b = server.session("b", "browser-b")
    student_b.start(other, specs_of(other), "own text")
    assert not isinstance(student_b.run, ReplayRun) and student_b.run.status == "running"


def test_leaving_the_page_stops_a_training_run_and_frees_its_memory(task):
    server = Server()
    held = server.session("tab", "browser")
    held.start(task, specs_of(task, 400), "s")
    held.train_slice(0.05)
    held.leave()
    assert held.run.status == "stopped" and held.run.training_state_bytes == 0 and "left this page" in held.notice[1]
    assert held.run in server.handed


def test_a_closed_tab_parks_its_run_and_only_the_same_browser_takes_it_back(task):
    server = Server()
    teacher = server.session("teacher-tab", "teacher-browser")
    teacher.start(task, specs_of(task, 400), "s")
    teacher.train_slice(0.05)
    student = server.session("student-tab", "student-browser")
    assert not student.take_back(teacher.token, "s")  # the address read off the projector
    assert teacher.run.status == "running" and teacher.still_mine() and student.run is None
    assert "no longer on the server" in student.notice[1]
    teacher.park()
    assert teacher.run.status == "paused" and teacher.run.training_state_bytes > 0
    reloaded = server.session("teacher-reloaded", "teacher-browser")
    assert reloaded.take_back(teacher.token, "s") and reloaded.run is teacher.run
    assert "Welcome back" in reloaded.notice[1] and not teacher.still_mine()
    assert teacher.train_slice(0.05) == "moved"  # the old tab's loop stops
    teacher.loop_ended("moved")
    assert teacher.moved and teacher.run is None


def test_projector_mode_takes_back_the_browsers_latest_parked_run_without_a_token(task):
    server = Server()
    shown = server.session("projector-tab", "projector")
    shown.start(task, specs_of(task, 400), "s")
    shown.park()
    assert not server.session("elsewhere", "another").take_back(None, "s", without_token=True)
    reloaded = server.session("projector-reloaded", "projector")
    assert reloaded.take_back(None, "s", without_token=True) and reloaded.run is shown.run


def test_browser_ids_follow_the_cookies_secret_not_its_mask():
    token = bytes(range(16))

    def cookie(mask: bytes) -> str:
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
        return f"2|{mask.hex()}|{masked.hex()}|1700000000"

    assert browser_id(cookie(b"\x01\x02\x03\x04")) == browser_id(cookie(b"\xff\x00\xaa\x55")) == browser_id(
        token.hex())
    assert browser_id(cookie(b"\x01\x02\x03\x04")) != browser_id(bytes(range(1, 17)).hex())
    assert browser_id(None) is None and browser_id("2|zz|00|1") is None and browser_id("abcd") is None
    assert token.hex() not in browser_id(token.hex())
    assert Client("s", browser="b").key != Client("s", address="1.2.3.4").key != Client("s").key
