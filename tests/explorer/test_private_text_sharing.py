"""A run on a user's own text shared live: watchers receive the curves and the attention, never a line of the
text, unless its owner agreed for that very run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from explorer.runs.classes import FollowedClass
from explorer.runs.live import RunSpec
from explorer.runs.private_text import PLACEHOLDER
from tests.explorer.test_run_session import Server, train_to_end
from tests.explorer.test_run_slots import no_other_runs  # noqa: F401 - every test starts with no run training
from transformer_core.tasks.language import CharLMTask
from transformer_core.training import default_train_config

DIARY = "\n".join(f"Dear diary number {i} my secret is kept quietly under the old oak tree" for i in range(40))


@pytest.fixture(scope="module")
def own_text():
    return CharLMTask(DIARY, block_size=16, eval_windows=8)


def specs_of(task, steps: int = 6) -> list[RunSpec]:
    config = replace(task.default_model_config(), d_model=16, n_heads=2, d_ff=32, n_layers=1)
    return [RunSpec("A", config, default_train_config(task, steps=steps, seed=0, batch_size=4))]


def shared_run(server: Server, task) -> object:
    held = server.session("owner-tab", "owner")
    held.sharing = True
    held.start(task, specs_of(task), "own-text")
    train_to_end(held)
    assert held.write_samples({}, "", 4, 0)  # the owner's page writes its samples as usual
    held.broadcast(force=True)
    return held


def stored_bytes(server: Server) -> bytes:
    """Every byte the store holds for the channels (the updates exactly as Redis would keep them)."""
    return b"".join(v for channel in server.store._channels.values() for v in channel.updates)


def lines_of_text() -> list[bytes]:
    return [line.encode() for line in DIARY.split("\n")] + [b"secret", b"diary", b"oak tree"]


def test_watchers_receive_no_line_of_a_private_text(own_text) -> None:
    server = Server()
    held = shared_run(server, own_text)
    owner_samples = held.run.frame().lanes[0].samples[-1].items
    assert any("diary" in s.input or "diary" in s.target for s in owner_samples)  # the owner sees them
    data = stored_bytes(server)
    assert data and not any(line in data for line in lines_of_text())
    watched = FollowedClass(server.store, held.class_link.class_id).current()
    assert watched.sync()
    frame = watched.frame()
    assert all(not lane.samples for lane in frame.lanes)  # no sample
    assert frame.lanes[0].history and frame.lanes[0].snapshots  # the curves and the attention
    assert frame.extra["private_text"]
    tokens = frame.task.attention_example()["tokens"]["decoder"]
    assert set(tokens) == {PLACEHOLDER} and len(tokens) == frame.lanes[0].snapshots[-1].attention["decoder"].shape[-1]


def test_samples_reach_watchers_only_after_the_owner_agreed_for_that_run(own_text) -> None:
    server = Server()
    held = shared_run(server, own_text)
    held.show_samples(held.run)
    watched = FollowedClass(server.store, held.class_link.class_id).current()
    watched.sync()
    frame = watched.frame()
    assert frame.lanes[0].samples and not frame.extra["private_text"]
    assert "diary" in "".join(s.input for s in frame.lanes[0].samples[-1].items)
    held.start(own_text, specs_of(own_text), "own-text")  # the next run asks again
    train_to_end(held)
    held.write_samples({}, "", 4, 1)
    held.broadcast(force=True)
    assert held.private
    newest = FollowedClass(server.store, held.class_link.class_id).current()
    newest.sync()
    assert newest.run_id != watched.run_id and not any(lane.samples for lane in newest.frame().lanes)
