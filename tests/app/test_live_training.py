"""Live Training page: renders, trains, follows its controls, keeps sessions apart, refuses what does not fit.

AppTest runs a script to its end, so a run started here trains to its last step within the click; the runs
are tiny (d_model 16, one layer, 10 steps).
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pyarrow as pa
import pytest
import torch
from streamlit.testing.v1 import AppTest

from explorer.host import NORMAL_LIMITS, SMALL_LIMITS
from explorer.runs.frame import SAMPLE_SEED, SAMPLES
from tests.app.conftest import ROOT, assert_no_exception, opened_from_link, plotly_download_formats
from transformer_core.checkpoint import save_checkpoint
from transformer_core.tasks.sequences import SequenceTask
from ui.common import state
from ui.training import controls as tc
from ui.training import io as tio
from ui.training import text as tt
from ui.training import views as tv
from ui.training.samples import samples_html

PAGE = "pages/training.py"
TINY = {"task": "reverse", "d_model": "16", "heads": "2", "layers": "1", "d_ff": "32", "batch": "8",
        "steps": "10"}


def live_at(**params: str) -> AppTest:
    """The Live Training page opened from a link with ``params`` (default: a tiny reverse run)."""
    return opened_from_link(PAGE, {**TINY, **params})


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def run_of(at: AppTest):
    return at.session_state[tc.SESSION].run


def heatmap_maps(at: AppTest) -> int:
    """How many attention maps (layer x head) the heatmap chart draws."""
    proto = next(c.proto for c in at.get("vega_lite_chart") if "facet" in json.loads(c.proto.spec))
    assert json.loads(proto.spec)["facet"]["column"]["field"] == "head"
    cells = pa.ipc.open_stream(proto.data.data).read_all().to_pandas()
    return len(cells.groupby(["layer", "head"]))


def test_renders_ready_with_untrained_attention():
    at = live_at()
    assert metric(at, "Step") == "0 / 10"
    assert not at.button(key="live.start").disabled and at.button(key="live.pause").disabled
    assert heatmap_maps(at) == 1 * 2  # layers x heads
    assert at.radio(key="live.kind").value == "cross"  # reverse's pattern lives in the cross-attention
    assert any(m.value.startswith("**Cross-attention") and "step 0" in m.value for m in at.markdown)
    assert len(at.get("vega_lite_chart")) == 3  # pattern score, heatmaps, head scores: no loss or accuracy yet


def test_training_runs_to_the_end_and_is_shared_with_other_pages():
    at = live_at()
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert metric(at, "Step") == "10 / 10" and run_of(at).status == "done"
    trained = at.session_state[state.TRAINED]["seq2seq"]
    assert trained.step == 10 and trained.task_name == "reverse" and trained.config.d_model == 16
    assert not at.button(key="live.start").disabled  # a finished run can be started again
    assert len(at.select_slider(key=tio.FRAME).options) == len(run_of(at).trainers[0].snapshots)


def test_step_stop_reset_and_the_same_seed_gives_the_same_start():
    at = live_at()
    initial = {k: v.clone() for k, v in run_of(at).trainers[0].model.state_dict().items()}
    at.button(key="live.step").click().run()
    assert metric(at, "Step") == "1 / 10" and run_of(at).status == "paused"
    assert not at.button(key="live.resume").disabled
    at.button(key="live.stop").click().run()
    assert run_of(at).status == "stopped" and at.button(key="live.stop").disabled
    at.button(key="live.reset").click().run()
    assert metric(at, "Step") == "0 / 10" and run_of(at).status == "ready"
    after = run_of(at).trainers[0].model.state_dict()
    assert all(torch.equal(initial[k], after[k]) for k in initial)


def test_reset_of_a_paused_run_frees_its_training_state():
    at = live_at()
    at.button(key="live.step").click().run()
    old = run_of(at)
    assert old.status == "paused" and old.training_state_bytes > 0
    at.button(key="live.reset").click().run()
    assert run_of(at) is not old and run_of(at).status == "ready"
    assert old.training_state_bytes == 0 and old.status == "stopped"  # no gradients or AdamW state left behind


def test_controls_change_the_model_and_the_url():
    at = live_at()
    at.selectbox(key=tc.D_MODEL).set_value(48).run()
    assert at.selectbox(key=tc.HEADS).options == ["1", "2", "3", "4", "6", "8", "12", "16"]
    at.selectbox(key=tc.HEADS).set_value(3).run()
    at.select_slider(key=tc.LAYERS).set_value(2).run()
    assert_no_exception(at)
    assert heatmap_maps(at) == 2 * 3
    assert at.query_params["heads"] == "3" and at.query_params["d_model"] == "48"
    at.selectbox(key=tc.TASK).set_value("induction").run()  # a new task brings its own model
    assert_no_exception(at)
    assert run_of(at).task.name == "induction" and run_of(at).specs[0].model_config.d_model == 64


def test_compare_mode_trains_two_configurations():
    at = live_at(compare="true", b_positional="none")
    assert [s.label.split(" · ")[0] for s in run_of(at).specs] == ["A", "B"]
    assert run_of(at).specs[1].model_config.positional == "none"
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert {"Accuracy · A · step 10", "Accuracy · B · step 10"} <= {m.label for m in at.metric}
    assert len(at.get("vega_lite_chart")) == 3 + 4  # curves; heatmaps and head scores side by side


def test_compare_on_a_vision_transformer_starts_b_one_layer_apart_and_says_when_b_is_a():
    at = live_at(task="vit_shapes", steps="4")
    assert not any("same as A" in i.value for i in at.info)
    at.toggle(key=tc.COMPARE).set_value(True).run()  # a ViT has no positional encoding for B to change
    assert_no_exception(at)
    a, b = (spec.model_config for spec in run_of(at).specs)
    assert b.n_layers != a.n_layers and not any("same as A" in i.value for i in at.info)
    at.select_slider(key=tc.B_LAYERS).set_value(a.n_layers).run()  # now B is A again: the page says so
    assert any("same as A" in i.value for i in at.info)


def test_two_sessions_keep_their_own_runs():
    first, second = live_at(seed="1"), live_at(seed="2")
    first.button(key="live.start").click().run()
    assert metric(first, "Step") == "10 / 10" and metric(second, "Step") == "0 / 10"
    assert run_of(first) is not run_of(second)
    assert run_of(second).status == "ready" and run_of(second).specs[0].train_config.seed == 2


def test_the_guard_refuses_a_model_too_big_for_the_server():
    at = live_at(d_model="512", d_ff="2048", layers="8", batch="256")
    assert any("too big" in e.value for e in at.error)
    assert at.button(key="live.start").disabled


def test_a_diverging_run_stops_with_a_clear_message(monkeypatch):
    def nan_loss(self, model, batch):
        return model(batch["src"], batch["tgt_in"]).sum() * float("nan")

    monkeypatch.setattr(SequenceTask, "loss", nan_loss)
    at = live_at()
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert run_of(at).status == "diverged"
    assert any("NaN" in e.value and "lower the learning rate" in e.value for e in at.error)


def test_leaving_the_page_stops_a_running_run_and_frees_its_training_state():
    at = live_at()
    at.button(key="live.step").click().run()
    run = run_of(at)
    assert run.training_state_bytes > 0  # gradients and AdamW's averages after one step
    run.status = "running"  # as if the page was left while its training loop ran
    at.switch_page("pages/attention.py").run()
    assert_no_exception(at)
    assert run.status == "stopped" and run.step == 1 and run.training_state_bytes == 0
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert run_of(at) is run and run.status == "stopped"
    assert any("stopped at step 1 when you left" in i.value for i in at.info)
    assert at.number_input(key=tc.STEPS).value == 10  # the settings survived the visit


def test_a_paused_run_survives_a_visit_to_another_page():
    at = live_at()
    at.button(key="live.step").click().run()
    at.switch_page("pages/attention.py").run()
    at.switch_page(PAGE).run()
    assert run_of(at).status == "paused" and run_of(at).training_state_bytes > 0
    at.button(key="live.resume").click().run()
    assert_no_exception(at)
    assert run_of(at).step > 1


def test_checkpoint_upload_validates_the_file():
    at = live_at()
    at.file_uploader(key=tio.UPLOAD).set_value(("model.safetensors", b"\x80\x04pickled", "application/x")).run()
    assert any("pickle" in e.value for e in at.error)
    model = run_of(at).trainers[0].model
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(0.01)
    data = save_checkpoint(model, run_of(at).specs[0].model_config, task_name="reverse")
    at.file_uploader(key=tio.UPLOAD).set_value(("good.safetensors", data, "application/octet-stream")).run()
    assert_no_exception(at)
    assert any("Loaded good.safetensors" in s.value for s in at.success)
    loaded = next(iter(run_of(at).trainers[0].model.parameters()))
    assert torch.all(loaded == 0.01) and at.session_state[state.TRAINED]["seq2seq"].model is not None


@pytest.mark.parametrize("task", ["vit_shapes", "char_lm", "protein"])
def test_other_task_families_render(task):
    at = live_at(task=task, steps="10")
    at.button(key="live.step").click().run()
    assert_no_exception(at)
    grids = [c for c in at.get("vega_lite_chart") if "facet" in json.loads(c.proto.spec)]
    assert metric(at, "Step") == "1 / 10"
    assert at.get("plotly_chart") if task == "vit_shapes" else grids  # CLS over the picture, or heatmaps


def test_clicks_rerun_the_running_script_instead_of_stopping_it():
    """With Streamlit's fast reruns a click stops the running script (StopException) and starts another
    thread at once: the live loop would take every Pause for a closed tab, and two threads could train one
    model. The app's config turns them off, so a click interrupts the loop with a rerun."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["fastReruns"] is False


# The character language model on the user's own text, and how its samples are drawn.

OWN_TEXT = "ab☃Ž ab☃Ž ab☃Ž\n" * 12  # few, unusual characters: the vocabulary shows where the text came from
SOURCE, TEXT, TEMPERATURE, TOP_K = (tt.widget_key(k) for k in (tt.SOURCE, tt.TEXT, tt.TEMPERATURE, tt.TOP_K))


def own_text_at(text: str) -> AppTest:
    """The page on a tiny char_lm run with "Your own text" chosen and ``text`` in the box."""
    at = live_at(task="char_lm")
    at.radio(key=SOURCE).set_value("own").run()
    at.text_area(key=TEXT).set_value(text).run()
    assert_no_exception(at)
    return at


def sample_table(at: AppTest) -> str:
    """The sample table of configuration A as drawn, without its caption."""
    return at.session_state[tv.SAMPLES_SHOWN][0][1].split("</div>", 1)[1]


def test_own_text_and_sampling_controls_appear_only_for_the_language_model():
    at = live_at()
    keys = {w.key for w in (*at.radio, *at.select_slider, *at.text_area)}
    assert not keys & {SOURCE, TEMPERATURE, TOP_K, TEXT}
    at.selectbox(key=tc.TASK).set_value("char_lm").run()
    keys = {w.key for w in (*at.radio, *at.select_slider, *at.text_area)}
    assert {SOURCE, TEMPERATURE, TOP_K} <= keys and TEXT not in keys  # the box: only for own text
    at.radio(key=SOURCE).set_value("own").run()
    assert at.text_area(key=TEXT) is not None and len(at.get("file_uploader")) == 2  # text and checkpoint
    assert all(w.help for w in (*at.radio, *at.select_slider, *at.text_area))
    at.switch_page("pages/attention.py").run()
    at.switch_page(PAGE).run()
    assert at.radio(key=SOURCE).value == "own"  # the choice outlives the visit, though the radio came late


@pytest.mark.parametrize(("text", "phrase"), [("", "empty"), ("  \n ", "empty"), ("hello", "too short")])
def test_empty_or_too_short_text_is_explained_and_cannot_start(text, phrase):
    at = own_text_at(text)
    assert any(phrase in w.value for w in at.warning)
    assert at.button(key="live.start").disabled and at.button(key="live.step").disabled
    assert not run_of(at).task.user_text and run_of(at).status == "ready"  # nothing was built from the text


def test_a_run_trains_and_samples_on_the_users_text():
    at = own_text_at(OWN_TEXT)
    task = run_of(at).task
    assert task.vocab == "".join(sorted(set(OWN_TEXT))) and OWN_TEXT.startswith(task.train_text)
    assert any("Vocabulary of 6 characters" in c.value for c in at.caption)
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert run_of(at).status == "done" and run_of(at).task is task
    assert at.session_state[state.TRAINED]["causal_lm"].task is task  # the other pages decode with this vocabulary
    samples = at.session_state[tv.SAMPLES_SHOWN][0][1]
    assert "☃" in samples and "The " not in samples  # prompts from the user's text, not the built-in corpus
    assert all("☃" not in value for value in at.query_params.values())  # the text never goes into a link
    at.switch_page("pages/attention.py").run()
    at.switch_page(PAGE).run()
    assert at.text_area(key=TEXT).value == OWN_TEXT and run_of(at).task is task  # kept across pages


def test_a_changed_text_makes_a_new_task_and_the_corpus_stays_shared():
    at = own_text_at(OWN_TEXT)
    first = run_of(at).task
    at.text_area(key=TEXT).set_value("xyz xyz xyz xyz xyz xyz").run()
    assert run_of(at).task is not first and run_of(at).task.vocab == " xyz"
    at.radio(key=SOURCE).set_value("corpus").run()
    assert run_of(at).task is tc.load_task("char_lm") and not run_of(at).task.user_text


def test_an_uploaded_text_file_fills_the_box_and_bad_files_are_explained():
    at = own_text_at("")
    uploader = at.get("file_uploader")[0]
    assert uploader.proto.id.endswith(tt.UPLOAD)
    at.file_uploader(key=tt.UPLOAD).set_value(("notes.txt", "\ufeff".encode() + OWN_TEXT.encode(), "text/plain"))
    at.run()
    assert_no_exception(at)
    assert at.text_area(key=TEXT).value == OWN_TEXT  # decoded, byte-order mark dropped
    assert run_of(at).task.vocab == "".join(sorted(set(OWN_TEXT)))
    at.file_uploader(key=tt.UPLOAD).set_value(("latin.txt", "café au lait ".encode("latin-1") * 5, "text/plain"))
    at.run()
    assert any("not UTF-8" in e.value and "latin.txt" in e.value for e in at.error)
    assert at.text_area(key=TEXT).value == OWN_TEXT  # the bad file changed nothing


@pytest.mark.slow
def test_top_k_one_gives_greedy_samples_whatever_the_temperature():
    at = live_at(task="char_lm")
    at.button(key="live.start").click().run()
    trainer = run_of(at).trainers[0]
    at.select_slider(key=TOP_K).set_value(1).run()
    at.select_slider(key=TEMPERATURE).set_value(2.0).run()
    assert_no_exception(at)
    greedy = sample_table(at)
    greedy_samples = run_of(at).task.samples(trainer.model, SAMPLES, seed=SAMPLE_SEED, temperature=0.0)
    assert greedy == samples_html(greedy_samples, "causal_lm").split("</div>", 1)[1]
    assert "temperature 2, top-k 1" in at.session_state[tv.SAMPLES_SHOWN][0][1]
    at.select_slider(key=TEMPERATURE).set_value(0.5).run()
    assert sample_table(at) == greedy
    at.select_slider(key=TOP_K).set_value(0).run()
    at.select_slider(key=TEMPERATURE).set_value(2.0).run()
    assert sample_table(at) != greedy  # hot sampling from every character writes other text
    assert at.query_params["temperature"] == "2.0" and run_of(at).status == "done"  # sampling never resets a run


def test_small_hosts_preselect_shorter_runs(monkeypatch):
    monkeypatch.setattr(tc, "limits", lambda: SMALL_LIMITS)
    assert tc.task_defaults("sort")[tc.STEPS] == SMALL_LIMITS.default_steps < 400  # sort's own default: 400
    assert tc.task_defaults("protein")[tc.STEPS] == 200  # a shorter default of the task's own stays
    monkeypatch.setattr(tc, "limits", lambda: NORMAL_LIMITS)
    assert tc.task_defaults("sort")[tc.STEPS] == 400


def test_link_values_that_do_not_fit_are_changed_with_a_notice():
    at = live_at(d_model="32", heads="5", steps="50000")
    notices = [i.value for i in at.info if i.value.startswith("The link's setting")]
    assert notices == [
        "The link's setting steps='50000' was changed to 5000: this server trains at most 5,000 steps.",
        "The link's setting heads='5' was changed to 4: the number of heads must divide d_model 32.",
    ]
    assert at.session_state[tc.HEADS] == 4 and at.session_state[tc.STEPS] == 5000
    at.run()  # the notices stay for the rest of the visit
    assert len([i for i in at.info if i.value.startswith("The link's setting")]) == 2


# The page's accessibility and theme details.


def test_the_numbers_of_the_shown_layer_and_head_are_a_table():
    at = live_at(layers="2")
    at.button(key="live.step").click().run()
    snap = run_of(at).trainers[0].snapshots[-1]
    assert at.selectbox(key=state.LIVE_NUMBERS_LAYER).options == ["1", "2"]
    assert at.selectbox(key=state.LIVE_NUMBERS_HEAD).options == ["1", "2"]
    at.selectbox(key=state.LIVE_NUMBERS_LAYER).set_value(2).run()
    at.selectbox(key=state.LIVE_NUMBERS_HEAD).set_value(2).run()
    assert_no_exception(at)
    table = at.dataframe[0].value
    expected = snap.attention["cross"][1, 1].astype(float)  # layer 2, head 2 of the shown (cross) attention
    np.testing.assert_allclose(table.to_numpy(), np.round(expected, 3))
    assert table.shape == expected.shape
    at.select_slider(key=tc.LAYERS).set_value(1).run()
    at.button(key="live.reset").click().run()  # a one-layer model: the chosen layer 2 is gone, back to layer 1
    assert_no_exception(at)
    assert at.selectbox(key=state.LIVE_NUMBERS_LAYER).value == 1


def test_the_vit_chart_saves_in_the_sidebars_format():
    at = live_at(task="vit_shapes")
    assert plotly_download_formats(at) == {"png"}
    at.sidebar.radio(key=state.IMAGE_FORMAT).set_value("SVG").run()
    assert_no_exception(at)
    assert plotly_download_formats(at) == {"svg"}


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_right_and_wrong_marks_are_readable_on_both_themes():
    from ui.training import samples as ts

    for style in (ts.RIGHT, ts.WRONG):  # each mark brings its own background, whatever the page's theme
        props = dict(part.split(":") for part in style.split(";"))
        assert _contrast(props["color"], props["background"]) >= 4.5, style
    assert _contrast("#00704F", "#0E1117") < 4.5  # the old plain green on the dark theme was not


def test_legends_have_no_fixed_white_fill():
    at = live_at(compare="true")
    at.button(key="live.step").click().run()
    curves = [c.proto.spec for c in at.get("vega_lite_chart") if '"field": "run"' in c.proto.spec]
    assert len(curves) >= 2 and not any("fillColor" in s or '"white"' in s for s in curves)
    assert all('"orient": "top"' in s for s in curves)  # above the plot, clear of the lines


def test_sharing_a_run_on_own_text_sends_no_line_of_it_until_the_owner_agrees_in_a_dialog():
    from ui.training import share

    at = own_text_at(OWN_TEXT)
    at.button(key="live.start").click().run()
    at.toggle(key=share.SHARING).set_value(True).run()
    assert_no_exception(at)
    held = at.session_state[tc.SESSION]
    assert held.channel is not None and held.private
    assert any(share.WATCHERS_SEE in i.value for i in at.info)  # the panel says what watchers receive
    at.button(key="live.share.samples").click().run()  # the dialog shows the samples watchers would get ...
    assert "☃" in "".join(h.proto.body for h in at.get("html"))
    assert held.private  # ... and opening it sends nothing
    at.button(key="live.share.samples.yes").click().run()
    assert_no_exception(at)
    assert not held.private and held.samples_shown_for is held.run
    assert any("you agreed for this run" in i.value for i in at.info)


def test_compare_after_switching_to_a_vision_transformer_keeps_the_page():
    at = live_at(steps="4")  # a text task draws the norm and positional encoding widgets ...
    at.selectbox(key=tc.TASK).set_value("vit_shapes").run()  # ... a ViT draws neither, and Streamlit drops them
    for forgotten in (tc.NORM, tc.POSITIONAL):  # as a browser's next run finds them (AppTest keeps them)
        del at.session_state[forgotten]
    at.toggle(key=tc.COMPARE).set_value(True).run()
    assert_no_exception(at)
    assert [s.label.split(" · ")[0] for s in run_of(at).specs] == ["A", "B"]
