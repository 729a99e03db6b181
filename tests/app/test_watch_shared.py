"""Watchers share their drawings: the second watcher of a view builds nothing; a watcher still follows the run and
sends nothing when nothing is new."""

from __future__ import annotations

import dataclasses
import threading
import time
import types
from collections.abc import Callable

import numpy as np
import pyarrow as pa
from streamlit.delta_generator import DeltaGenerator

from explorer.render.shared import SharedRenders
from explorer.runs.store import LaneUpdate, RunUpdate, run_store
from tests.app.conftest import opened_from_link
from tests.explorer.test_run_store import META, _update
from transformer_core.training import Snapshot
from ui.common import pace
from ui.training import charts, curves, drawn, head_scores, heatmaps, views
from ui.training import watch as twatch


def _paused(update: RunUpdate) -> RunUpdate:
    return dataclasses.replace(update, state={**update.state, "status": "paused"})


def _count_builds(monkeypatch) -> dict[str, int]:
    """Count the live view's builders (heatmaps, curves) as they are called."""
    counts: dict[str, int] = {}
    for module, name in ((heatmaps, "attention_chart"), (head_scores, "scores_chart"), (curves, "loss_chart"),
                         (curves, "metric_chart"), (curves, "pattern_chart"), (views, "status_metrics")):
        monkeypatch.setattr(module, name, _counted(counts, name, getattr(module, name)))
    return counts


def _counted(counts: dict[str, int], name: str, real):
    def counted(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return real(*args, **kwargs)

    return counted


def test_the_watchers_of_one_view_share_its_drawings(monkeypatch) -> None:
    cache = SharedRenders(drawn.MAX_BYTES, drawn.weigh)
    monkeypatch.setattr(drawn, "renders", lambda: cache)
    monkeypatch.setattr(twatch, "_follow", lambda watched, view, moved=None: None)  # draw once, do not follow
    counts = _count_builds(monkeypatch)
    run_store().publish("chan", _paused(_update(1, 5, META)))
    pages = [opened_from_link("pages/training.py", {"watch": "chan"}) for _ in range(3)]
    assert counts == {"attention_chart": 1, "scores_chart": 1, "loss_chart": 1, "metric_chart": 1,
                      "pattern_chart": 1, "status_metrics": 1}, "the second and third watchers built nothing"
    charts = [[(c.proto.spec, c.proto.data.data) for c in at.get("vega_lite_chart")] for at in pages]
    assert len(charts[0]) == 4 and charts[0] == charts[1] == charts[2]  # the same charts (no metric yet)
    loss = pa.ipc.open_stream(charts[0][0][1]).read_all().to_pandas()  # sent as Arrow, read as before
    assert list(loss.columns) == ["step", "loss", "curve", "run", "marker"] and len(loss) == 5 + 1
    assert cache.stats().builds >= 5 and cache.stats().hits >= 2 * 5

    run_store().publish("chan", _paused(_update(6, 5)))  # a new step: built once more, for everyone
    for at in pages:
        at.run()
    assert counts["attention_chart"] == 2 and counts["loss_chart"] == 2


def test_a_watcher_follows_the_run_and_redraws_only_what_is_new(monkeypatch) -> None:
    monkeypatch.setattr(pace, "WATCH_TICK_S", 0.2)
    monkeypatch.setattr(pace, "WATCH_IDLE_TICK_S", 0.2)
    seen: list[tuple[str, int]] = []
    first = threading.Event()
    real_refresh = views.LiveView.refresh

    def refresh(self) -> None:
        real_refresh(self)
        seen.append((self.run.status, self.run.step))
        first.set()

    monkeypatch.setattr(views.LiveView, "refresh", refresh)
    store = run_store()
    store.publish("live", _update(1, 5, META))

    def owner() -> None:  # trains on, stands still a while, pauses, then ends the channel
        first.wait(60)
        time.sleep(0.3)
        store.publish("live", _update(6, 5))
        time.sleep(0.5)  # ticks with nothing new
        store.publish("live", RunUpdate(state=_update(6, 5).state, lanes=[LaneUpdate([], [], [])]))
        time.sleep(0.5)  # news that moves nothing: no redraw either
        store.publish("live", _paused(_update(11, 5)))
        time.sleep(1.0)
        store.end("live", "released by its owner")

    thread = threading.Thread(target=owner)
    thread.start()
    at = opened_from_link("pages/training.py", {"watch": "live"})
    thread.join()
    assert seen == [("running", 5), ("running", 10), ("paused", 15)], "one redraw per update, none in between"
    assert any("has ended" in i.value for i in at.info)


def test_the_watchers_of_a_vit_share_a_copy_of_its_picture_view(monkeypatch) -> None:
    """The ViT's figure is the builder's own, updated in place by its next draw: watchers share a copy."""
    cache = SharedRenders(drawn.MAX_BYTES, drawn.weigh)
    monkeypatch.setattr(drawn, "renders", lambda: cache)
    monkeypatch.setattr(twatch, "_follow", lambda watched, view, moved=None: None)
    counts = {}
    monkeypatch.setattr(charts, "vit_attention_figure", _counted(counts, "vit", charts.vit_attention_figure))
    maps = np.random.default_rng(0).random((3, 4, 17, 17)).astype(np.float16)  # 4 × 4 patches and CLS
    update = _paused(_update(1, 5, {**META, "task": "vit_shapes"}))
    lane = LaneUpdate(update.lanes[0].history, [Snapshot(step=5, attention={"encoder": maps}, scores={})], [])
    run_store().publish("vit", dataclasses.replace(update, lanes=[lane]))
    pages = [opened_from_link("pages/training.py", {"watch": "vit"}) for _ in range(2)]
    assert counts == {"vit": 1}
    figures = [at.get("plotly_chart")[0].proto.spec for at in pages]
    assert figures[0] == figures[1]


def _status_sends(monkeypatch) -> tuple[list[list[str]], threading.Event]:
    """Per refresh of a watcher's live view: the view, then what its status line sent; and an event set after every
    refresh."""
    from streamlit.delta_generator import DeltaGenerator

    monkeypatch.setattr(pace, "WATCH_TICK_S", 0.2)
    monkeypatch.setattr(pace, "WATCH_IDLE_TICK_S", 0.2)
    sent: list[list[str]] = []
    inside = threading.local()
    real_status = views.LiveView.draw_status

    def draw_status(self) -> None:
        sent.append([f"view{id(self)}"])
        inside.on = True
        try:
            real_status(self)
        finally:
            inside.on = False

    monkeypatch.setattr(views.LiveView, "draw_status", draw_status)

    def counting(name: str, real):
        def counted(*args, **kwargs):
            if getattr(inside, "on", False):
                sent[-1].append(f"metric:{args[1]}" if name == "metric" else name)
            return real(*args, **kwargs)

        return counted

    for name in ("metric", "progress"):  # placeholders' methods
        monkeypatch.setattr(DeltaGenerator, name, counting(name, getattr(DeltaGenerator, name)))
    monkeypatch.setattr(views.st, "columns", counting("columns", views.st.columns))  # st.columns is bound
    first = threading.Event()
    real_refresh = views.LiveView.refresh

    def refresh(self) -> None:
        real_refresh(self)
        first.set()

    monkeypatch.setattr(views.LiveView, "refresh", refresh)
    return sent, first


def _watch_while(owner: Callable[[], None], channel: str) -> None:
    """Watch ``channel`` on Live Training while ``owner`` publishes to it (and ends it) from another thread."""
    thread = threading.Thread(target=owner)
    thread.start()
    opened_from_link("pages/training.py", {"watch": channel})
    thread.join()


def test_a_watchers_refresh_sends_only_the_status_parts_that_changed(monkeypatch) -> None:
    """The status line (step, speed, loss, metric, progress) is laid out once; a refresh sends only the parts whose
    text changed, not the whole block (a dozen elements per watcher per tick, all through one event loop)."""
    monkeypatch.setattr(pace, "FIGURES_INTERVAL_S", 0.0)  # every figure as soon as it changes (paced: next test)
    sent, first = _status_sends(monkeypatch)
    store = run_store()
    store.publish("status", _update(1, 5, META))

    def owner() -> None:
        first.wait(60)
        time.sleep(0.3)
        store.publish("status", _update(6, 5))  # a new step and loss; the same speed and held-out metric
        time.sleep(0.5)
        store.publish("status", _paused(_update(11, 5)))
        time.sleep(1.0)
        store.end("status", "released by its owner")

    _watch_while(owner, "status")
    assert len(sent) == 3, sent
    first, more, paused = sent  # each starts with the view that drew it
    assert first[0] == more[0] != paused[0], "a pause reruns the page: a new script run, a new view"
    for whole in (first, paused):  # a new view lays the status line out once
        assert whole.count("columns") == 1 and len([s for s in whole if s.startswith("metric:")]) == 4, whole
    # Then only what changed: the step, the loss and the progress (the speed and the held-out metric stayed).
    assert sorted(more[1:]) == ["metric:Step", "metric:Train loss", "progress"], more


def test_while_the_run_trains_the_step_follows_every_refresh_and_the_other_figures_each_second(monkeypatch) -> None:
    """A smoothed figure (speed, loss, metric, the progress bar) is redrawn at most every ``FIGURES_INTERVAL_S``
    while the run trains: each redraw is a message to every watcher and a render in every browser."""
    clock = [100.0]
    monkeypatch.setattr(views, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))  # the view's own clock
    sent, first = _status_sends(monkeypatch)
    store = run_store()
    store.publish("paced", _update(1, 5, META))

    def owner() -> None:
        first.wait(60)
        for step_from, now in ((6, 100.0 + pace.FIGURES_INTERVAL_S / 2), (11, 100.0 + 2 * pace.FIGURES_INTERVAL_S)):
            clock[0] = now
            first.clear()
            store.publish("paced", _update(step_from, 5))  # a new step, loss and progress
            first.wait(60)
        store.end("paced", "released by its owner")

    _watch_while(owner, "paced")
    assert len(sent) == 3, sent
    whole, soon, later = sent
    assert len([s for s in whole if s.startswith("metric:")]) == 4 and "progress" in whole, whole
    assert soon[1:] == ["metric:Step"], "within the interval only the Step moves"
    assert sorted(later[1:]) == ["metric:Step", "metric:Train loss", "progress"], "then what changed since"


def test_a_shared_drawings_tables_are_written_to_arrow_bytes_once_for_all_watchers() -> None:
    import pandas as pd

    from ui.common import st_costs

    table, spec = drawn.frozen((pd.DataFrame({"step": [1, 2], "loss": [0.5, 0.4]}), {"mark": "line"}))
    assert isinstance(table, pa.Table) and spec == {"mark": "line"}
    assert id(table) in st_costs._ARROW  # every watcher's chart sends the same bytes (tests/app/test_st_costs.py)


def test_with_two_lanes_the_step_and_speed_have_a_row_above_each_lanes_figures() -> None:
    """Six metrics in one row cut "454 / 2,000" short at 1024 pixels: the step (wide) and the speed go above."""
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        from ui.training.views import _metric_places

        for i, slot in enumerate(_metric_places(6)):
            slot.metric(f"m{i}", i)

    at = AppTest.from_function(script).run()
    rows = [[[m.label for m in column.get("metric")] for column in row.children.values()]
            for row in at.main.children.values()]
    assert rows == [[["m0"], ["m1"], []], [["m2"], ["m3"], ["m4"], ["m5"]]]
    assert at.columns[0].weight == 2 * at.columns[1].weight  # the step's column is the wide one


def test_a_watcher_is_told_when_a_training_run_goes_quiet_and_keeps_no_stale_table_note(monkeypatch) -> None:
    monkeypatch.setattr(pace, "WATCH_TICK_S", 0.2)
    monkeypatch.setattr(pace, "WATCH_IDLE_TICK_S", 0.2)
    monkeypatch.setattr(pace, "WATCH_QUIET_S", -1.0)  # quiet from the first look (its flip reruns the page)
    warned, notes = [], []
    real_warning, real_caption = twatch.st.warning, DeltaGenerator.caption

    def warning(body, *args, **kwargs):
        warned.append(body)
        return real_warning(body, *args, **kwargs)

    def caption(self, body, *args, **kwargs):
        notes.append(body)
        return real_caption(self, body, *args, **kwargs)

    monkeypatch.setattr(twatch.st, "warning", warning)
    monkeypatch.setattr(DeltaGenerator, "caption", caption)
    store = run_store()
    store.publish("quiet", _update(1, 5, META))  # "running", then nothing: the owner's tab closed

    def owner() -> None:
        time.sleep(2.0)
        notes.clear()
        store.publish("quiet", _paused(_update(6, 5)))  # it paused after all
        time.sleep(1.5)
        store.end("quiet", "released by its owner")

    thread = threading.Thread(target=owner)
    thread.start()
    opened_from_link("pages/training.py", {"watch": "quiet"})
    thread.join()
    assert any("Nothing has come from this run for" in w for w in warned)  # told
    assert not any("The table shows step" in n for n in notes)  # paused: no note of the step drawn at the start


def test_a_finished_runs_watchers_are_not_told_it_updates_while_it_trains(monkeypatch) -> None:
    monkeypatch.setattr(twatch, "_follow", lambda watched, view, moved=None: None)  # draw once, do not follow
    done = _update(1, 5, META)
    run_store().publish("over", dataclasses.replace(done, state={**done.state, "status": "done"}))
    run_store().publish("live", _update(1, 5, META))
    over, live = (opened_from_link("pages/training.py", {"watch": name}) for name in ("over", "live"))
    assert any("Watching a finished run, read-only." in i.value and "while its owner trains" not in i.value
               for i in over.info)
    assert any("Watching a live run, read-only." in i.value and "while its owner trains" in i.value for i in live.info)
