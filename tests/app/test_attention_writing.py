"""*Watch it write* in the Attention Lab, on a small random-initialised GPT-2 folder (AppTest, no browser)."""

from __future__ import annotations

import csv
import io
import json

import pytest
import torch

from explorer.lab.generation import Writing
from tests.app.conftest import app_at, assert_no_exception
from tests.pretrained.hf_folders import gpt2_folder
from ui.attention import generation as gen
from ui.attention import keys as lab_keys

PAGE = "pages/attention.py"
PROMPT = "the cat sat"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    hf = gpt2_folder(root / "tiny-gpt2", layers=2, heads=2, positions=64)
    gpt2_folder(root / "short-gpt2", layers=1, heads=2, positions=10)
    return root, hf


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models[0]))


def _lab(text: str = PROMPT, model: str = "tiny-gpt2"):
    at = app_at(PAGE)
    at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=lab_keys.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(model + " "))).run()
    at.text_input(key=lab_keys.TEXT).set_value(text).run()
    assert_no_exception(at)
    return at


def _write(at, n: int, **sampling):
    at.slider(key=gen.NEW_TOKENS).set_value(n).run()
    if sampling:
        at.radio(key=gen.MODE).set_value("sample").run()
        for key, value in sampling.items():
            widget = at.slider(key=key) if key in (gen.TEMPERATURE, gen.TOP_P) else at.number_input(key=key)
            widget.set_value(value).run()
    at.button(key="attn.gen.start").click().run()
    assert_no_exception(at)
    return at.session_state[gen.WRITING][1]


def _heatmap_rows(at) -> int:
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (heat,) = [c for c in charts if "step: token read" in json.dumps(c["layout"].get("yaxis", {}))]
    z = heat["data"][0]["z"]
    return int(str(z["shape"]).split(",")[0]) if isinstance(z, dict) else len(z)  # plotly's binary arrays


def test_greedy_writing_adds_one_heatmap_row_per_token_and_equals_the_models_argmax(models):
    at = _lab()
    writing: Writing = _write(at, 6)
    assert writing.status in ("done", "ended") and 1 <= len(writing.written) <= 6
    assert _heatmap_rows(at) == len(writing.written)
    captions = " ".join(c.value for c in at.caption)
    assert "greedy" in captions
    hf = models[1]
    ids = list(writing.prompt_ids)
    for token in writing.written:  # greedy: each token is the full model's likeliest next token
        logits = hf(torch.tensor([ids])).logits[0, -1]
        assert token.token_id == int(logits.argmax())
        ids.append(token.token_id)
    assert at.button(key="attn.gen.start").disabled is False and at.button(key="attn.gen.stop").disabled


@pytest.mark.slow
def test_same_seed_writes_the_same_text_and_the_result_stays(models):
    at = _lab()
    first = _write(at, 8, **{gen.TEMPERATURE: 1.5, gen.SEED: 3})
    again = _write(at, 8)
    assert [t.token_id for t in again.written] == [t.token_id for t in first.written]
    assert "seed 3" in again.describe()
    at.radio(key=lab_keys.VIEW).set_value("head").run()  # another click: the writing stays
    assert at.session_state[gen.WRITING][1] is again
    assert_no_exception(at)


def test_the_csv_and_gif_downloads_and_the_step_slider(models):
    at = _lab()
    writing = _write(at, 5)
    rows = list(csv.DictReader(io.StringIO(gen.steps_csv(writing))))
    assert len(rows) == len(writing.written)
    assert any(b.label.startswith("GIF") for b in at.get("download_button"))
    if len(writing.written) > 1:
        at.slider(key=gen.STEP).set_value(2).run()
        assert_no_exception(at)


def test_writing_stops_at_the_models_position_limit_and_a_full_prompt_is_refused_kindly(models):
    at = _lab(model="short-gpt2")  # 10 positions; the prompt takes 7
    writing = _write(at, 20)
    assert writing.status == "full" and len(writing.written) == 10 - len(writing.prompt_ids)
    assert "position limit" in " ".join(c.value for c in at.caption)
    at.text_input(key=lab_keys.TEXT).set_value("the cat sat on the mat").run()  # cut to the model's 10
    at.button(key="attn.gen.start").click().run()
    assert_no_exception(at)
    assert gen.WRITING not in at.session_state
    assert any("reads at most 10 tokens" in w.value for w in at.warning)


def test_an_unfinished_writing_is_taken_up_by_the_next_page_run(models):
    """A click while the model writes reruns the page: the next run goes on with the same writing."""
    from explorer.lab.generation import Sampling, start_writing
    from transformer_core.pretrained import load_pretrained

    at = _lab()
    done = _write(at, 6)
    key = at.session_state[gen.WRITING][0]
    pre = load_pretrained(models[0] / "tiny-gpt2")
    halfway = start_writing(pre.model, done.prompt_ids, pre.tokenizer, Sampling(), 6)
    halfway.advance()
    halfway.advance()
    at.session_state[gen.WRITING] = (key, halfway)
    at.run()
    assert_no_exception(at)
    assert halfway.finished and [t.token_id for t in halfway.written] == [t.token_id for t in done.written]
    assert _heatmap_rows(at) == len(done.written)


def test_projector_mode_leaves_out_the_sections_explanation(models):
    from ui.common import state

    at = _lab()
    explanation = "reading its own tokens back"
    assert any(explanation in c.value for c in at.caption)
    at.session_state[state.PRESENTATION] = True
    at.run()
    assert_no_exception(at)
    assert not any(explanation in c.value for c in at.caption)
    assert at.button(key="attn.gen.start")  # the section itself stays


def test_a_character_model_trained_in_this_session_writes_in_its_characters():
    """A decoder-only model from Live Training writes too, in its task's characters (no end-of-text token)."""
    from transformer_core.tasks import get_task
    from ui.common import state

    task = get_task("char_lm")
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config()).eval()
    entry = state.TrainedModel("causal_lm", "char_lm", task.title, model, model.config, step=5, task=task)
    at = app_at(None)
    at.session_state[state.TRAINED] = {"causal_lm": entry}
    at.switch_page(PAGE).run()
    at.radio(key=lab_keys.SOURCE).set_value("causal_lm").run()
    at.text_input(key=lab_keys.TEXT).set_value("the cat").run()
    writing = _write(at, 5)
    assert len(writing.written) == 5 and writing.status == "done"
    assert list(writing.prompt_ids) == task.encode("the cat").tolist()
    assert writing.text[0] == "the cat" and len(writing.text[1]) == 5  # one character per token
    assert _heatmap_rows(at) == 5


def test_write_is_refused_with_a_reason_while_the_server_writes_its_most(models, monkeypatch):
    from explorer.lab import writing_limit

    busy = writing_limit.WritingLimit(lambda: 1)
    other = Writing((1,), ("a",), gen.Sampling(), 5, None, iter(()))
    busy.admit("browser:someone-else", other)
    monkeypatch.setattr(gen, "WRITINGS", busy)
    at = _lab()
    at.slider(key=gen.NEW_TOKENS).set_value(3).run()
    at.button(key="attn.gen.start").click().run()
    assert_no_exception(at)
    assert gen.WRITING not in at.session_state
    assert any("writes at most 1 text at once" in w.value for w in at.warning)
    other.stop()  # the other writing ended: this one starts
    at.button(key="attn.gen.start").click().run()
    assert at.session_state[gen.WRITING][1].written and busy.running() == 0  # done: its place is given back
