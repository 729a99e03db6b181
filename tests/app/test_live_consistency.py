"""Live Training page: one step on screen at a time, head scores of the kind shown, no chart without data."""

from __future__ import annotations

import json
import re

import pyarrow as pa

from tests.app.conftest import assert_no_exception
from tests.app.test_live_training import live_at, run_of
from ui.training import containers, curves
from ui.training import io as tio
from ui.training import views as tv


def _specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def _marker_steps(at) -> list[int]:
    """The step of the dotted marker line on every curve chart (the data row flagged ``marker``)."""
    tables = [pa.ipc.open_stream(c.proto.data.data).read_all().to_pandas() for c in at.get("vega_lite_chart")]
    return [int(step) for t in tables if "marker" in t for step in t.loc[t["marker"], "step"]]


def _heading_steps(at) -> list[int]:
    return [int(m) for h in at.markdown for m in re.findall(r"· step (\d+)\*\*", h.value)]


def _title(spec: dict) -> str:
    """A chart's title as one line (long titles are sent as a list of wrapped lines)."""
    text = spec.get("title", {}).get("text", "")
    return " ".join(text) if isinstance(text, list) else text


def _score_title_steps(at) -> list[int]:
    return [int(re.search(r"step (\d+)$", _title(s)).group(1)) for s in _specs(at) if "How" in _title(s)]


def test_every_chart_and_label_shows_the_chosen_step():
    at = live_at(compare="true", steps="40")
    at.button(key="live.start").click().run()
    steps = at.select_slider(key=tio.FRAME).options
    chosen = int(steps[len(steps) // 2])
    at.select_slider(key=tio.FRAME).set_value(chosen).run()
    assert_no_exception(at)
    assert at.select_slider(key=tio.FRAME).value == chosen
    assert _heading_steps(at) == [chosen, chosen]  # A and B
    assert _score_title_steps(at) == [chosen, chosen]
    assert _marker_steps(at) == [chosen] * 3  # loss, accuracy, pattern score
    at.select_slider(key=tio.FRAME).set_value(steps[-1]).run()  # the right end follows the latest snapshot
    last = run_of(at).trainers[0].snapshots[-1].step
    assert at.session_state[tv.PIN] is None and _heading_steps(at) == [last, last]
    assert _marker_steps(at) == [last] * 3


def test_head_scores_follow_the_attention_kind_shown():
    at = live_at()
    assert at.radio(key=tv.KIND).value == "cross"
    assert any("Cross-attention" in _title(s) for s in _specs(at) if "How" in _title(s))
    at.radio(key=tv.KIND).set_value("encoder").run()
    assert_no_exception(at)
    assert not _score_title_steps(at)  # reverse scores its cross-attention only
    assert any("cross-attention" in c.value and "choose it above" in c.value for c in at.caption)


def test_no_chart_is_drawn_without_data():
    at = live_at()
    for chart in at.get("vega_lite_chart"):
        assert pa.ipc.open_stream(chart.proto.data.data).read_all().num_rows > 0
    shown = {c.value for c in at.caption}
    assert curves.WAITING[0] in shown and curves.WAITING[1] in shown  # loss and accuracy: nothing measured yet
    at.button(key="live.step").click().run()
    assert curves.WAITING[0] not in {c.value for c in at.caption}  # the first step draws the loss


def test_a_new_run_gets_a_fresh_view_and_the_same_run_keeps_its_own():
    at = live_at()
    slot = at.session_state[containers.LAYOUT][1]
    at.button(key="live.step").click().run()
    assert at.session_state[containers.LAYOUT][1] == slot  # updated in place
    at.button(key="live.reset").click().run()
    assert at.session_state[containers.LAYOUT][1] == 1 - slot  # another run: the old view's slot is emptied


def test_the_loss_chart_has_no_layer_without_rows():
    at = live_at()
    at.button(key="live.step").click().run()  # a training loss, no held-out loss yet
    loss = next(s for s in _specs(at) if _title(s).startswith("Loss"))
    filters = [t["filter"] for layer in loss["layer"] for t in layer.get("transform", []) if "curve" in t["filter"]]
    assert filters == ["datum.curve == 'train'"]
