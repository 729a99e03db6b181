"""The live curves and head scores change only their rows between redraws: the browser rebuilds a Vega view
whenever the spec changes, so the step marker travels in the data and the y ranges move in coarse steps."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from explorer.i18n import LANGUAGES, using_language
from tests.app.test_live_heatmaps import trained_run
from ui.training import curves, heatmaps

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
    key = heatmaps.scores_of_kind(last, "cross")
    (rows_a, live_a), (rows_b, live_b) = (heatmaps.scores_chart(s, key, "Cross", live=True) for s in (first, last))
    assert json.dumps(live_a) == json.dumps(live_b) and not rows_a.equals(rows_b)
    assert f"step {last.step}" in " ".join(heatmaps.scores_chart(last, key, "Cross")[1]["title"]["text"])


def test_the_first_screens_short_curves_keep_their_titles_to_one_line_in_every_language():
    """A second title line would take the plot's height on the projector's first screen (175 px a chart)."""
    run = trained_run("reverse", seq_len=5, eval_size=16).frame()
    for lang in LANGUAGES:
        with using_language(lang.code):
            titles = [build(run, 3, compact=True)[1]["title"]["text"]
                      for build in (curves.loss_chart, curves.metric_chart)]
        assert all(len(lines) == 1 for lines in titles), (lang.code, titles)
