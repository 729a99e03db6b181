"""A class link: one link and one short code that follow the owner's runs until sharing stops, with every
watcher moving to the new run by itself; codes that cannot be misread and lead nowhere once sharing stops."""

from __future__ import annotations

import pytest

from explorer.runs.classes import CODE_ALPHABET, CODE_CHARS, ClassLink, FollowedClass, class_for_code, normalise_code
from explorer.runs.session import RunSession
from tests.explorer.test_run_session import Server, specs_of, task  # noqa: F401 - the fixture
from tests.explorer.test_run_slots import no_other_runs  # noqa: F401 - every test starts with no run training


def sharing_teacher(server: Server, task, *, downloads: bool = False) -> RunSession:  # noqa: F811
    """A teacher's session sharing a run that has trained a slice and published it (the broadcast's answer checked)."""
    teacher = server.session("teacher", "laptop")
    teacher.sharing, teacher.downloads = True, downloads
    teacher.start(task, specs_of(task, 400), "settings-1")
    teacher.train_slice(0.05)
    assert teacher.broadcast() is None
    return teacher


def test_a_class_link_survives_three_new_runs_with_three_watchers_following(task) -> None:  # noqa: F811
    server = Server()
    teacher = sharing_teacher(server, task)
    link = teacher.class_link
    students = [FollowedClass(server.store, link.class_id) for _ in range(3)]
    seen_channels = []
    for new_run in range(4):  # the first run, then three new ones: Reset, new settings, Start after the end
        if new_run == 1:
            teacher.reset(task, specs_of(task, 400), "settings-1")
        elif new_run == 2:
            teacher.reset(task, specs_of(task, 400, seed=3), "settings-2")
        elif new_run == 3:
            teacher.run.stop()
            teacher.start(task, specs_of(task, 400, seed=5), "settings-3")
        if teacher.run.status == "ready":
            teacher.start(task, teacher.run.specs, teacher.signature)
        teacher.train_slice(0.05)
        teacher.pause()  # paused: the watcher count is still right
        assert teacher.broadcast(force=True) is None
        assert teacher.class_link is link  # the same link and code, run after run
        for student in students:
            watched = student.current()
            assert watched is not None and watched.run_id == teacher.channel.run_id and watched.sync()
            assert watched.frame().step == teacher.run.step and watched.state["status"] == "paused"
        assert teacher.channel.watchers() == 3
        seen_channels.append(teacher.channel.run_id)
    assert len(set(seen_channels)) == 4  # four runs, four channels, one class link
    assert class_for_code(server.store, link.code.lower()) == link.class_id  # typed in lower case, still found
    teacher.stop_sharing()
    assert all(student.current() is None for student in students)  # sharing stopped: the students' pages say so
    assert class_for_code(server.store, link.code) is None


def test_codes_are_random_readable_and_never_the_owners_tokens(task) -> None:  # noqa: F811
    links = [ClassLink() for _ in range(200)]
    assert len({link.code for link in links}) == 200 and len({link.class_id for link in links}) == 200
    for link in links:
        assert len(link.code) == CODE_CHARS and set(link.code) <= set(CODE_ALPHABET)
        assert len(link.class_id) >= 22
    assert not set("ILO01") & set(CODE_ALPHABET)
    server = Server()
    teacher = sharing_teacher(server, task)
    secrets_held = {teacher.token, teacher.client.session, teacher.client.browser}
    assert not {teacher.class_link.class_id, teacher.class_link.code} & secrets_held


@pytest.mark.parametrize("typed", ["", "ABC", "ABCDEFG", "ABCDE0", "ABCDEI", "ab cd?e"])
def test_a_malformed_code_gets_a_friendly_message(typed: str) -> None:
    with pytest.raises(ValueError, match="class code is 6 letters"):
        normalise_code(typed)
    assert normalise_code(" k7m-3qx ") == "K7M3QX"


@pytest.fixture(params=["memory", "redis"])
def store(request):
    """A memory store, or a real Redis (skipped where no redis-server can start)."""
    from explorer.runs.store import MemoryStore

    return MemoryStore() if request.param == "memory" else request.getfixturevalue("redis_pair")[1]


def test_pointers_in_either_store(store) -> None:
    store.point("class:x", "channel-1")
    assert store.pointer("class:x") == "channel-1" and store.pointer("class:y") is None
    store.point("class:x", "channel-2")
    assert store.pointer("class:x") == "channel-2"
    store.drop_pointer("class:x")
    assert store.pointer("class:x") is None
    with pytest.raises(ValueError):
        store.point("class:x", "")


def test_a_class_nobody_renews_expires() -> None:
    from explorer.runs.store import MemoryStore

    now = [0.0]
    store = MemoryStore(clock=lambda: now[0], channel_ttl_s=60.0)
    link = ClassLink(clock=lambda: now[0])
    link.follow(store, "channel-1")
    now[0] = 59.0
    assert class_for_code(store, link.code) == link.class_id
    now[0] = 121.0
    assert class_for_code(store, link.code) is None


def test_a_teachers_reload_keeps_the_class_watching_the_same_run_on_the_same_link(task) -> None:  # noqa: F811
    server = Server()
    teacher = sharing_teacher(server, task, downloads=True)
    link, channel = teacher.class_link, teacher.channel
    student = FollowedClass(server.store, link.class_id)
    watched = student.current()
    assert watched.sync() and watched.state["status"] == "running"
    teacher.park()  # the teacher pressed F5: the old page's connection ends
    assert watched.sync() and watched.state["status"] == "paused"  # the class sees it paused, not "Training…"
    reloaded = server.session("teacher-reloaded", "laptop")
    assert reloaded.take_back(teacher.token, "settings-1") and reloaded.run is teacher.run
    assert reloaded.sharing and reloaded.class_link is link and reloaded.channel is channel and reloaded.downloads
    reloaded.resume()
    assert reloaded.run.status == "running"
    reloaded.train_slice(0.05)
    assert reloaded.broadcast(force=True) is None
    assert student.current().run_id == channel.run_id and watched.sync()
    assert watched.state["status"] == "running" and watched.frame().step == reloaded.run.step > 0
    reloaded.stop_sharing()
    assert student.current() is None
    again = server.session("teacher-again", "laptop")  # a reload after sharing stopped shares nothing
    reloaded.park()
    assert again.take_back(reloaded.token, "settings-1") and not again.sharing and again.class_link is None


def test_a_watcher_of_a_run_whose_owner_went_quiet_can_tell(task, monkeypatch) -> None:  # noqa: F811
    from explorer.runs import watch

    server = Server()
    teacher = sharing_teacher(server, task)
    watched = FollowedClass(server.store, teacher.class_link.class_id).current()
    now = [1000.0]
    monkeypatch.setattr(watch.time, "monotonic", lambda: now[0])
    assert watched.sync() and watched.quiet_s() == 0.0
    now[0] += 45.0  # the teacher's tab closed without a word: nothing comes
    assert watched.sync() and watched.quiet_s() == 45.0 and watched.state["status"] == "running"
    teacher.train_slice(0.05)
    teacher.broadcast(force=True)
    assert watched.sync() and watched.quiet_s() == 0.0  # news again: it follows on
