"""Live Training: switching heads off in a paused or finished run, head importance, links and Compare mode."""

from __future__ import annotations

import pytest

from explorer.i18n import using_language
from tests.app.conftest import assert_no_exception
from tests.app.test_live_training import live_at, run_of
from transformer_core.interventions import ablate_heads
from transformer_core.training import EVAL_SEED
from ui.training import controls as tc
from ui.training import interventions as ti
from ui.training.status import metric_text

# Big enough that single heads matter after 60 steps, small enough to train within a click.
SMALL = {"d_model": "32", "heads": "2", "layers": "2", "d_ff": "64", "batch": "32", "steps": "60"}


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def trained(**params: str):
    at = live_at(**{**SMALL, **params})
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    return at


def accuracy_with(run, lane: int, heads) -> float:
    """The reference: the lane's model evaluated like the trainer does, with ``heads`` off."""
    model = run.trainers[lane].model
    with ablate_heads(model, heads):
        return run.task.evaluate(model, seed=EVAL_SEED)["accuracy"]


def test_the_panel_appears_only_when_the_run_is_not_training():
    at = live_at(**SMALL)
    assert not any(s.value == "🔌 Switch heads off" for s in at.subheader)  # ready: nothing to measure yet
    at.button(key="live.step").click().run()
    assert run_of(at).status == "paused"
    assert any(s.value == "🔌 Switch heads off" for s in at.subheader)
    assert {f"{ti.OFF}.{s}.{layer}" for s in ("encoder", "decoder", "cross") for layer in (0, 1)} \
        <= {b.key for b in at.get("button_group")}


@pytest.mark.slow
def test_clicking_a_head_off_shows_the_metric_loss_and_samples_without_it():
    at = trained()
    run = run_of(at)
    shown = metrics(at)
    assert shown["Accuracy · all heads on"] == metric_text("accuracy", run.trainers[0].last_eval["accuracy"])
    assert shown["Accuracy · 0 heads off"] == "–"
    at.button_group(key=f"{ti.OFF}.cross.0").set_value([1]).run()
    assert_no_exception(at)
    assert at.session_state[ti.OFF] == ["cross.1.2"] and at.query_params["off"] == "cross.1.2"
    shown = metrics(at)
    assert shown["Accuracy · 1 head off"] == metric_text("accuracy", accuracy_with(run, 0, [("cross", 0, 1)]))
    assert "Loss · 1 head off" in shown
    assert any("1 off: cross L1 H2" in h.proto.body for h in at.get("html"))
    at.button_group(key=f"{ti.OFF}.decoder.1").set_value([0, 1]).run()  # another row adds to the first
    assert sorted(at.session_state[ti.OFF]) == ["cross.1.2", "decoder.2.1", "decoder.2.2"]
    heads = [("cross", 0, 1), ("decoder", 1, 0), ("decoder", 1, 1)]
    assert metrics(at)["Accuracy · 3 heads off"] == metric_text("accuracy", accuracy_with(run, 0, heads))
    assert run.status == "done" and run.trainers[0].step == 60  # measuring trained nothing


@pytest.mark.slow
def test_heads_off_travel_in_the_link_and_do_not_make_the_run_out_of_date():
    at = live_at(**SMALL, off="cross.2.1,encoder.1.2")
    at.button(key="live.start").click().run()
    run = run_of(at)
    assert at.button_group(key=f"{ti.OFF}.cross.1").value == [0]
    assert at.button_group(key=f"{ti.OFF}.encoder.0").value == [1]
    at.button_group(key=f"{ti.OFF}.cross.1").set_value([]).run()
    assert run_of(at) is run and not any("settings changed" in i.value for i in at.info)
    assert ti.OFF not in [k for k in tc.DEFAULTS if k not in ti.KEYS]
    assert at.query_params["off"] == "encoder.1.2"


def test_a_link_to_a_head_this_model_lacks_is_ignored():
    at = live_at(**SMALL, off="cross.8.16")
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert metrics(at)["Accuracy · 0 heads off"] == "–"


@pytest.mark.slow
def test_importance_map_measures_every_head_and_exports(monkeypatch):
    at = trained()
    at.button(key="live.importance0").click().run()
    assert_no_exception(at)
    run = run_of(at)
    probe = at.session_state[ti.PROBES][0][1]
    importance = probe.measured_importance
    assert importance is not None and importance.base == pytest.approx(run.trainers[0].last_eval["accuracy"])
    base = importance.base
    for stack in ("encoder", "decoder", "cross"):
        assert importance.drop[stack][1, 0] == pytest.approx(base - accuracy_with(run, 0, [(stack, 1, 0)]))
    assert not [b for b in at.button if b.key == "live.importance0"]  # measured for this step
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Head importance" in t for t in titles) and any("Pattern score" in t for t in titles)
    ids = " ".join(b.proto.id for b in at.get("download_button"))
    assert all(f"live.importance.dl0.{kind}" in ids for kind in ("png", "svg", "csv"))


@pytest.mark.slow
def test_compare_mode_switches_heads_per_configuration():
    at = trained(compare="true", b_heads="1")
    run = run_of(at)
    at.button_group(key=f"{ti.B_OFF}.cross.0").set_value([0]).run()
    assert_no_exception(at)
    assert at.session_state[ti.B_OFF] == ["cross.1.1"] and not at.session_state[ti.OFF]
    assert at.query_params["b_off"] == "cross.1.1"
    shown = [m for m in at.metric if m.label == "Accuracy · 1 head off"]
    assert len(shown) == 1 and shown[0].value == metric_text("accuracy", accuracy_with(run, 1, [("cross", 0, 0)]))


def test_a_change_that_rounds_to_nothing_is_grey_and_numbers_are_the_languages():
    assert ti.delta_style("accuracy", 0.5, 0.5002, True) == {"delta_color": "off", "delta_arrow": "off"}
    assert ti.delta_style("accuracy", 0.5, 0.6, True) == {"delta_color": "normal"}
    assert ti.delta_style("loss", 0.5, 0.6, False) == {"delta_color": "inverse"}
    assert (ti.signed(15.84, 1), ti.signed(-0.04, 1), ti.signed(-0.4, 1)) == ("+15.8", "0.0", "-0.4")
    with using_language("de"):
        shown = (ti.signed(15.84, 1), ti.points_text(0.158), ti.points_text(-0.0001))
        assert shown == ("+15,8", "15,8 Punkte", "0,0 Punkte")


def test_a_language_model_shows_its_loss_once_and_its_next_character_accuracy():
    at = live_at(task="char_lm", d_model="16", heads="2", layers="1", d_ff="32", batch="8", steps="4")
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    run = run_of(at)
    shown = metrics(at)
    evaluated = run.trainers[0].last_eval
    assert shown["Validation loss · all heads on"] == metric_text("val_loss", evaluated["val_loss"])
    assert shown["Accuracy · all heads on"] == metric_text("accuracy", evaluated["accuracy"])
    assert not any(label.startswith("Loss ·") for label in shown)  # the same held-out loss, not twice
