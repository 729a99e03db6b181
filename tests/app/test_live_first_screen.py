"""Live Training's compact first screen (projector mode, lessons): one line of numbers and the chosen head's heatmap,
large, beside the loss and accuracy curves; the untrained model's head before Start."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest
from PIL import Image

from explorer.render.heatmap import colours
from tests.app.conftest import opened_from_link
from tests.app.test_live_heatmaps import trained_run
from transformer_core.tasks import task_names
from ui.lessons import live_runs
from ui.training import controls, first_screen, heatmaps, views

LINK = {"task": "reverse", "steps": "40", "d_model": "32", "d_ff": "64", "batch": "16", "seed": "3"}
HEAD_LABEL = re.compile(r" of layer (\d+), head (\d+) at step (\d+):")


def _pictures(html: str) -> list[np.ndarray]:
    """The heatmaps of an HTML grid (not its colour bar), as (H, W, 3) arrays, in order."""
    urls = re.findall(r'src="data:image/png;base64,([^"]+)" alt="layer', html)
    return [np.asarray(Image.open(io.BytesIO(base64.b64decode(u))).convert("RGB")) for u in urls]


def _heads_shown(at) -> list[tuple[int, int, int]]:
    """(layer, head, step), 1-based, of every first-screen heatmap on the page."""
    return [tuple(int(x) for x in m.groups()) for h in at.get("html") for m in [HEAD_LABEL.search(h.proto.body)] if m]


def test_the_picture_is_the_chosen_heads_weights_in_the_grids_colours():
    run = trained_run("reverse", seq_len=5, eval_size=16)
    snap = run.trainers[0].snapshots[-1]
    maps = snap.attention["cross"].astype(np.float32)  # (L, H, T, S)
    layer, head = maps.shape[0] - 1, maps.shape[1] - 1
    html = heatmaps.head_picture(run.frame(), snap, "cross", layer, head, width_px=400, height_px=240)
    (picture,) = _pictures(html)  # one pixel per weight
    low, high, scale = *heatmaps.attention_range(maps), heatmaps.colorscale()
    assert np.array_equal(picture, colours(maps[layer, head], scale, low, high))
    assert not np.array_equal(picture, colours(maps[0, 0], scale, low, high))
    assert f"layer {layer + 1}</div>" in html and f">head {head + 1}</div>" in html  # named as in the model
    height = int(re.search(r'alt="layer \d+, head \d+" width="\d+" height="(\d+)"', html).group(1))
    assert 200 <= height <= 240


def test_the_best_matching_head_has_the_highest_pattern_score_and_a_picked_head_is_kept():
    run = trained_run("reverse", seq_len=5, eval_size=16)
    snap = run.trainers[0].snapshots[-1]
    scores = snap.scores["cross:anti_diagonal"]  # (L, H)
    layer, head, note = first_screen.chosen_head(snap, "cross", first_screen.BEST)
    assert scores[layer, head] == scores.max() and note == f"anti-diagonal score {scores.max():.2f}"
    assert first_screen.chosen_head(snap, "cross", (0, 1))[:2] == (0, 1)
    assert first_screen.chosen_head(snap, "cross", (9, 0)) is None  # a head this model lacks
    assert first_screen.chosen_head(snap, "encoder", first_screen.BEST)[2] == ""  # no pattern scored there


def test_before_start_a_projector_shows_the_untrained_best_head_and_one_line_of_numbers():
    at = opened_from_link("pages/training.py", {**LINK, "present": "true"})
    run = at.session_state[controls.SESSION].run
    untrained = run.trainers[0].snapshots[0]
    assert untrained.step == 0 and run.status == "ready"
    best = np.unravel_index(int(np.argmax(untrained.scores["cross:anti_diagonal"])), (2, 4))
    assert _heads_shown(at) == [(int(best[0]) + 1, int(best[1]) + 1, 0)]
    assert any(m.value.startswith("Step **0** / 40 · Accuracy (held-out)") for m in at.markdown)
    assert not at.metric  # the numbers are one line, not four tall metrics
    (grid,) = [e for e in at.expander if e.label == "🔍 Every layer × head"]  # every head, folded below
    assert len(grid.get("vega_lite_chart")) == 1  # the paused grid is the interactive chart
    assert any(m.value.startswith("**Cross-attention (decoder reads the encoder) · step 0**") for m in grid.markdown)
    assert [s.label for s in at.selectbox if s.key in (views.KIND, first_screen.HEAD)] == ["Attention shown",
                                                                                          "Head shown"]
    at.selectbox(key=first_screen.HEAD).set_value((0, 1)).run()
    assert _heads_shown(at) == [(1, 2, 0)]
    at.selectbox(key=views.KIND).set_value("encoder").run()
    assert _heads_shown(at) == [(1, 2, 0)]
    assert any("Encoder self-attention of layer 1, head 2" in h.proto.body for h in at.get("html"))


def test_normal_mode_keeps_its_metrics_and_every_head():
    at = opened_from_link("pages/training.py", LINK)
    assert _heads_shown(at) == []  # no first-screen picture...
    assert [m.label for m in at.metric][:2] == ["Step", "Steps per second"]  # ... but the metrics and the grid
    assert any(re.search(r"2 layers × 4 heads", h.proto.body) for h in at.get("html")) or at.get("vega_lite_chart")


def test_a_training_lessons_step_shows_its_untrained_model_in_the_first_screen_view():
    at = opened_from_link("pages/lessons.py", {"lesson": "heads", "present": "true"})
    assert [(layer, head, step) for layer, head, step in _heads_shown(at)][0][2] == 0
    assert any(m.value.startswith("Step **0** / ") for m in at.markdown)


@pytest.mark.parametrize("task", task_names())
def test_every_tasks_first_screen_shows_one_head_of_its_pattern_kind(task):
    at = opened_from_link("pages/training.py", {"task": task, "present": "true"})
    run = at.session_state[controls.SESSION].run
    pattern_kinds = [p.split(":")[0] for p in run.task.pattern_names]
    assert at.session_state[views.KIND] == (pattern_kinds[0] if pattern_kinds else at.session_state[views.KIND])
    shown = _heads_shown(at)
    assert len(shown) == 1 and shown[0][2] == 0, shown


def test_a_lesson_shared_after_its_before_view_is_drawn_gets_its_class_link():
    at = opened_from_link("pages/lessons.py", {"lesson": "heads"})
    assert _heads_shown(at) and not any("class=" in c.value for c in at.code)  # the "before", not shared yet
    at.toggle(key=live_runs.SHARING).set_value(True).run()
    assert any("class=" in c.value for c in at.code)
