"""The lesson "Which head does the work?": train, switch the predicted head off, measure every head, reveal."""

from __future__ import annotations

import json
import re

import pytest

from tests.app.conftest import app_at, assert_no_exception
from transformer_core.interventions import ablate_heads
from transformer_core.training import EVAL_SEED
from ui.lessons import head_importance
from ui.lessons import training as lesson_training
from ui.lessons.trained_texts import IMPORTANCE

PAGE = "pages/lessons.py"
OFF = "lessons.importance.off"


@pytest.fixture
def lesson(monkeypatch):
    monkeypatch.setattr(lesson_training, "REVERSE_STEPS", 30)  # a short run: the test checks the wiring
    at = app_at(PAGE)
    at.segmented_control(key="lessons.lesson").set_value("importance").run()
    assert_no_exception(at)
    return at


@pytest.mark.slow
def test_the_student_trains_picks_a_head_then_measures_every_head(lesson):
    at = lesson
    assert [s.value for s in at.subheader if s.value.startswith("Step")] == ["Step 1", "Step 2", "Step 3"]
    at.button(key="lessons.importance.train").click().run()
    assert_no_exception(at)
    seed, probe = at.session_state[head_importance.PROBE]
    assert seed == 0 and probe.step == 30
    assert at.button(key="lessons.importance.measure").disabled  # the prediction comes first
    # before the bet: the cross-attention heads and how anti-diagonal each one is, drawn at the step trained
    assert any("How anti-diagonal is each head?" in c.proto.spec and "step 30" in c.proto.spec
               for c in at.get("vega_lite_chart"))
    picture = next(h.proto.body for h in at.get("html") if 'aria-label="Cross-attention' in h.proto.body)
    assert "2 layers × 4 heads" in picture
    width = int(re.search(r'width:(\d+)px">', picture).group(1))
    assert 300 < width <= 560  # in its 3/5 of the ~940-pixel column, not under the scores beside it
    at.button_group(key=f"{OFF}.cross.0").set_value([1]).run()
    assert at.session_state[OFF] == ["cross.1.2"]
    with ablate_heads(probe.model, [("cross", 0, 1)]):
        reference = probe.task.evaluate(probe.model, seed=EVAL_SEED)["accuracy"]
    shown = next(m.value for m in at.metric if m.label == "Reversed exactly · cross L1 H2 off")
    assert shown == f"{reference:.1%}"
    at.button(key="lessons.importance.measure").click().run()
    assert_no_exception(at)
    title = next(json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")
                 if "Head importance" in c.proto.spec).split("<br>")
    assert max(len(line) for line in title) <= 44 and title[-1].endswith("step 30")  # wrapped in its half column
    assert any("Pattern score" in c.proto.spec for c in at.get("plotly_chart"))
    line = next(c.value for c in at.caption if "clearest anti-diagonal" in c.value)
    assert "cross L" in line and "together" in line


def test_the_reveal_judges_the_prediction(lesson):
    at = lesson
    right = IMPORTANCE.question.answer
    at.radio(key="lessons.importance.answer").set_value((right + 1) % 3).run()
    at.button(key="lessons.importance.reveal").click().run()
    assert not at.success and "hardly changes" in at.warning[0].value
    at.radio(key="lessons.importance.answer").set_value(right).run()
    assert "copy of the anti-diagonal" in at.success[0].value
