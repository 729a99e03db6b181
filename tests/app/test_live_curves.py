"""The live curves and head scores change only their rows between redraws: the browser rebuilds a Vega view
whenever the spec changes, so the step marker travels in the data and the y ranges move in coarse steps."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from explorer.i18n import LANGUAGES, using_language
from explorer.runs.live import LiveRun, RunSpec
from tests.app.test_live_heatmaps import trained_run
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config
from ui.common.charts import font_size
from ui.training import curves, head_scores

BUILDERS = (curves.loss_chart, curves.metric_chart, curves.pattern_chart)


@pytest.mark.parametrize("build", BUILDERS)
def test_moving_the_marker_changes_the_rows_not_the_spec(build):
    run = trained_run("reverse", seq_len=5, eval_size=16).frame()
    (early, spec_early), (late, spec_late) = build(run, 0), build(run, 3)
    early, late = early.to_pandas(), late.to_pandas()  # the rows travel as an Arrow table
    assert json.dumps(spec_early) == json.dumps(spec_late)
    assert early.loc[early["marker"], "step"].tolist() == [0] and late.loc[late["marker"], "step"].tolist() == [3]
    assert early[~early["marker"]].equals(late[~late["marker"]])  # the curves themselves are the same rows
    data_layers = [layer for layer in spec_early["layer"] if "data" not in layer]
    marker_rule = data_layers.pop()
    assert marker_rule["transform"] == [{"filter": "datum.marker"}] and marker_rule["mark"]["type"] == "rule"
    assert all(layer["transform"][0] == {"filter": "!datum.marker"} for layer in data_layers)
    none, _ = build(run, None)
    assert not none.to_pandas()["marker"].any()


def test_the_log_range_covers_the_data_with_room_and_holds_still_while_the_loss_moves_a_little():
    losses = pd.Series([2.31, 0.42])
    lo, hi = curves._log_domain(losses)["domain"]
    assert lo <= 0.42 / 1.15 and hi >= 2.31 * 1.15
    assert np.log10(hi / lo) <= np.log10(2.31 * 1.15 / (0.42 / 1.15)) + 0.5  # at most a quarter decade each end
    quarters = 4 * np.log10([lo, hi])
    assert np.allclose(quarters, np.round(quarters))  # ends on quarter decades
    assert curves._log_domain(pd.Series([2.30, 0.41]))["domain"] == [lo, hi]


@pytest.mark.parametrize(("domain", "most", "ticks"), [
    ((0.0562, 3.16), 6, [0.1, 0.2, 0.5, 1.0, 2.0]),  # 1-2-5 where 1-2-3-5-7 would give nine lines
    ((0.0562, 3.16), 3, [0.1, 1.0]),
    ((1.78, 5.62), 6, [2.0, 3.0, 5.0]),  # half a decade still has three lines
    ((1e-9, 10.0), 6, [1e-9, 1e-7, 1e-5, 1e-3, 0.1, 10.0]),  # every second decade
])
def test_the_log_axis_draws_a_few_round_grid_lines_not_one_per_digit(domain, most, ticks):
    assert curves._log_ticks(domain, most) == {"values": ticks}


def test_the_loss_charts_axis_ticks_lie_in_its_range_and_the_short_chart_has_fewer():
    run = trained_run("reverse", seq_len=5, eval_size=16).frame()
    for compact, most in ((False, curves.LOG_TICKS), (True, curves.LOG_TICKS_COMPACT)):
        _, spec = curves.loss_chart(run, None, compact=compact)
        y = next(layer["encoding"]["y"] for layer in spec["layer"] if "y" in layer.get("encoding", {})
                 and layer["encoding"]["y"].get("field") == "loss")
        lo, hi = y["scale"]["domain"]
        assert 2 <= len(y["axis"]["values"]) <= most
        assert all(lo <= tick <= hi for tick in y["axis"]["values"])


def test_the_linear_range_covers_the_data_with_room_and_holds_still_while_it_moves_a_little():
    lo, hi = curves._linear_domain([0.93, 2.41, 0.75])["domain"]
    spread = 2.41 - 0.75
    assert lo <= 0.75 - 0.05 * spread and hi >= 2.41 + 0.05 * spread
    assert hi - lo <= 1.1 * spread + 1.0  # at most half a unit (0.5 here) beyond the margin at each end
    assert curves._linear_domain([0.92, 2.40, 0.75])["domain"] == [lo, hi]
    assert curves._linear_domain([5.0, 5.0])["domain"][0] < 5.0 < curves._linear_domain([5.0, 5.0])["domain"][1]


def test_while_training_the_head_scores_change_their_rows_not_their_spec():
    run = trained_run("reverse", seq_len=5, eval_size=16).frame()
    first, last = run.lanes[0].snapshots[0], run.lanes[0].snapshots[-1]
    key = head_scores.scores_of_kind(last, "cross")
    (rows_a, live_a), (rows_b, live_b) = (head_scores.scores_chart(s, key, "Cross", live=True) for s in (first, last))
    assert json.dumps(live_a) == json.dumps(live_b) and not rows_a.equals(rows_b)
    assert f"step {last.step}" in " ".join(head_scores.scores_chart(last, key, "Cross")[1]["title"]["text"])


def test_the_first_screens_short_curves_keep_their_titles_to_one_line_in_every_language():
    """A second title line would take the plot's height on the projector's first screen (175 px a chart)."""
    run = trained_run("reverse", seq_len=5, eval_size=16).frame()
    for lang in LANGUAGES:
        with using_language(lang.code):
            titles = [build(run, 3, compact=True)[1]["title"]["text"]
                      for build in (curves.loss_chart, curves.metric_chart)]
        assert all(len(lines) == 1 for lines in titles), (lang.code, titles)


def test_the_head_scores_keep_their_heads_and_layers_in_number_order_and_name_their_colours():
    snap = SimpleNamespace(scores={"cross:anti_diagonal": np.linspace(0, 1, 12 * 11).reshape(11, 12)}, step=5)
    rows, spec = head_scores.scores_chart(snap, "cross:anti_diagonal", "Cross")
    x, y = spec["layer"][0]["encoding"]["x"], spec["layer"][0]["encoding"]["y"]
    assert x["sort"] == [f"head {n}" for n in range(1, 13)]  # "head 10" after "head 9", not after "head 1"
    assert y["sort"] == [f"layer {n}" for n in range(1, 12)]
    assert set(rows["head"]) == set(x["sort"]) and set(rows["layer"]) == set(y["sort"])
    with using_language("de"):
        _, spec = head_scores.scores_chart(snap, "cross:anti_diagonal", "Kreuz")
    assert spec["layer"][0]["encoding"]["color"]["title"] == "Wert"
    assert spec["layer"][0]["encoding"]["x"]["sort"][0] != "head 1"  # the heads are named in the page's language


def test_on_a_first_screen_two_lanes_put_their_legend_beside_the_curves_and_wrap_the_title_narrower():
    task = get_task("reverse", seq_len=5, eval_size=16)
    config, train = task.default_model_config(), default_train_config(task, steps=4)
    run = LiveRun(task, [RunSpec("A", config, train), RunSpec("B", config, train)])
    run.start()
    while run.status == "running":
        run.advance(1.0)
    for build in (curves.loss_chart, curves.metric_chart):
        _, spec = build(run.frame(), None, compact=True)
        legend = next(layer["encoding"]["color"]["legend"] for layer in spec["layer"] if "color" in layer["encoding"])
        assert legend["orient"] == "right"  # a legend row above would take the short chart's height
        assert all(len(line) <= curves.COMPARE_TITLE_CHARS for line in spec["title"]["text"])
        _, wide = build(run.frame(), None)
        assert next(layer["encoding"]["color"]["legend"] for layer in wide["layer"]
                    if "color" in layer["encoding"])["orient"] == "top"


def test_head_scores_write_their_numbers_and_names_only_where_the_cells_have_room_for_them():
    snap = SimpleNamespace(scores={"cross:anti_diagonal": np.linspace(0, 1, 8 * 16).reshape(8, 16)}, step=5)
    _, spec = head_scores.scores_chart(snap, "cross:anti_diagonal", "Cross")
    cells, written = spec["layer"]
    assert [t["field"] for t in cells["encoding"]["tooltip"]] == ["layer", "head", "score"]  # always on hover
    axis = cells["encoding"]["x"]["axis"]

    def value(expr: str, width: float) -> float:
        """A Vega expression "test ? a : b" of the chart's ``width`` evaluated as Vega would."""
        test, rest = expr.split("?")
        a, b = rest.split(" : ")
        env = {"width": width, "floor": math.floor, "min": min}
        return eval(a if eval(test, env) else b, env)

    def shown(width: float) -> tuple[float, float]:
        """(text size, axis title's opacity: 1 where heads go by number) on a chart ``width`` pixels wide."""
        return value(written["mark"]["fontSize"]["expr"], width), value(axis["titleOpacity"]["expr"], width)

    wide, narrow, phone = shown(16 * 80), shown(16 * 30), shown(16 * 12)
    assert wide == (font_size(), 0)  # a projector's page: every score and name written out
    assert 8 <= narrow[0] < font_size() and narrow[1] == 1  # half a page: smaller numbers, "3" under "head"
    assert phone[0] == 0  # below 8 pixels the colours and the tooltip say it
    assert axis["labelExpr"].startswith(axis["titleOpacity"]["expr"].split("?")[0])  # names where no title
    assert "indexof(" in axis["labelExpr"] and axis["labelOverlap"] is False and axis["title"] == "head"
