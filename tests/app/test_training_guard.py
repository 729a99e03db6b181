"""The Live Training page's resource limits: the guard's estimates and budgets, the cap on runs training at once,
training state freed when a run ends, and checkpoints that always fit the upload limit."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import replace

import pytest

from explorer.guard import check_budget
from explorer.host import MIB, NORMAL_LIMITS, SMALL_LIMITS, HostProfile
from explorer.images import MAX_BYTES, ImageError, read_image
from explorer.runs.line import LINE
from explorer.runs.live import LIVE_THREADS
from tests.app.conftest import ROOT, assert_no_exception
from tests.app.test_live_training import live_at, run_of
from transformer_core.checkpoint import save_checkpoint
from transformer_core.tasks import TASK_NAMES
from transformer_core.training import TrainConfig
from ui.common import pace, state
from ui.training import controls as tc
from ui.training import io as tio
from ui.training import line
from ui.training import run as training_run
from ui.training import specs as ts
from ui.training import text as tt


def test_guard_uses_the_pages_training_threads(monkeypatch):
    calls = []
    monkeypatch.setattr(ts, "check_budget", lambda *args, **kwargs: calls.append(kwargs))
    ts._verdict.cache_clear()
    try:
        ts._verdict("reverse", tc.load_task("reverse").default_model_config(), TrainConfig(), 2)
    finally:
        ts._verdict.cache_clear()  # forget the fake verdict
    assert calls == [{"lanes": 2, "threads": LIVE_THREADS, "process_bytes": 0}]


def test_a_run_whose_step_would_delay_pause_is_refused():
    """Pause acts after the step under way: a step of over a second (the old 2 s budget took it) is refused."""
    at = live_at(d_model="256", d_ff="1024", layers="2", heads="4", batch="64")
    refusal = " ".join(e.value for e in at.error)
    seconds = float(re.search(r"one step would take about ([\d.]+) s, longer than the 0.4 s allowed", refusal)[1])
    assert 1 < seconds < 2 and at.button(key="live.start").disabled
    suggested = int(re.search(r"Try a batch size of (\d+)", refusal)[1])
    at.select_slider(key=tc.BATCH).set_value(suggested).run()
    assert_no_exception(at)
    assert not at.error and not at.button(key="live.start").disabled


def test_stop_and_the_end_of_a_run_free_its_training_state():
    at = live_at()
    at.button(key="live.step").click().run()
    run = run_of(at)
    assert run.training_state_bytes > 0
    at.button(key="live.stop").click().run()
    assert_no_exception(at)
    assert run.status == "stopped" and run.training_state_bytes == 0
    assert at.session_state[state.TRAINED]["seq2seq"].model is run.trainers[0].model  # kept for the other pages
    assert at.button(key="live.step").disabled and at.button(key="live.stop").disabled
    assert not [b for b in at.button if b.key == "live.resume"]  # a stopped run is not resumed ...
    at.button(key="live.start").click().run()  # ... Start trains a new one, here to its end
    assert_no_exception(at)
    finished = run_of(at)
    assert finished is not run and finished.status == "done" and finished.training_state_bytes == 0
    assert at.button(key="live.step").disabled and not at.button(key="live.start").disabled


def test_step_once_to_the_last_step_frees_the_training_state():
    at = live_at(steps="10")
    for _ in range(10):
        at.button(key="live.step").click().run()
    assert_no_exception(at)
    assert run_of(at).status == "done" and run_of(at).training_state_bytes == 0
    assert at.button(key="live.step").disabled


def test_a_full_server_puts_the_run_in_line_and_starts_it_when_a_place_frees(monkeypatch):
    asked, shown = {"n": 0}, []

    def full_then_free():  # no place for the first few asks, then one frees
        asked["n"] += 1
        return replace(NORMAL_LIMITS, max_live_runs=0 if asked["n"] < 6 else 6)

    monkeypatch.setattr(training_run, "limits", full_then_free)
    monkeypatch.setattr(line, "limits", full_then_free)
    monkeypatch.setattr(pace, "LINE_POLL_S", 0.01)
    text = line.wait_text
    monkeypatch.setattr(line, "wait_text", lambda place: shown.append(text(place)) or shown[-1])
    at = live_at()
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert asked["n"] >= 6 and run_of(at).status == "done"
    assert shown and "Place 1 in line" in shown[0] and "You are next" in shown[0]
    assert not at.session_state[tc.SESSION].waiting and len(LINE) == 0


def _upload_limit_mb() -> int:
    return tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))["server"]["maxUploadSize"]


@pytest.mark.parametrize("limits", [NORMAL_LIMITS, SMALL_LIMITS], ids=["normal", "small"])
def test_every_checkpoint_a_run_may_save_can_be_uploaded_again(monkeypatch, limits):
    """The guard refuses models whose checkpoint exceeds Limits.max_checkpoint_bytes; that plus room for the
    header fits the uploader, whose limit fits the server's."""
    monkeypatch.setattr(tio, "limits", lambda: limits)
    assert tio.upload_limit_mb() <= _upload_limit_mb()
    task = tc.load_task("reverse")
    config = task.default_model_config()
    data = save_checkpoint(task.build_model(config), config, task_name="reverse")
    header = len(data) - sum(p.numel() * 4 for p in task.build_model(config).state_dict().values())
    assert limits.max_checkpoint_bytes + 100 * header <= tio.upload_limit_mb() * MIB
    host = HostProfile(cores=8, memory_bytes=64 * 2**30, small=limits is SMALL_LIMITS)
    for name in TASK_NAMES:  # the largest model the page offers, on a GPU where step time is no limit
        task = tc.load_task(name)
        biggest = replace(task.default_model_config(), d_model=limits.max_d_model, n_heads=8,
                          n_layers=limits.max_layers, d_ff=4 * limits.max_d_model)
        for layers in range(limits.max_layers, 0, -1):
            verdict = check_budget(task, replace(biggest, n_layers=layers), TrainConfig(batch_size=8, device="cuda"),
                                   host=host)
            assert verdict.ok == (verdict.checkpoint_bytes <= limits.max_checkpoint_bytes
                                  and verdict.memory_bytes <= limits.memory_budget_bytes), (name, layers)


def test_pictures_and_texts_keep_their_own_10_mb_limit():
    assert _upload_limit_mb() > 10 and MAX_BYTES == 10 * MIB
    with pytest.raises(ImageError, match="the limit is 10 MB"):
        read_image(b"\x89PNG\r\n\x1a\n" + bytes(MAX_BYTES))
    at = live_at(task="char_lm")
    at.radio(key=tt.widget_key(tt.SOURCE)).set_value("own").run()
    sizes = {u.proto.label: u.proto.max_upload_size_mb for u in at.get("file_uploader")}
    assert sizes == {"…or upload a text file": tt.TEXT_UPLOAD_MB, "Load a checkpoint (.safetensors)":
                     math.ceil(NORMAL_LIMITS.max_checkpoint_bytes / MIB) + 1} and tt.TEXT_UPLOAD_MB == 10
