"""*Branch the writing* in *Watch it write*, on a small random-initialised GPT-2 folder (AppTest, no browser)."""

from __future__ import annotations

import csv
import io

import pytest
import torch

from explorer.lab.generation_branch import alternatives, branch_csv
from tests.app.conftest import assert_no_exception
from tests.app.test_attention_writing import _lab, _write
from tests.pretrained.hf_folders import gpt2_folder
from ui.attention import generation as gen
from ui.attention import generation_branch as gb


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    hf = gpt2_folder(root / "tiny-gpt2", layers=2, heads=2, positions=64)
    return root, hf


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models[0]))


def _branch(at, step: int, rank: int = 0):
    at.slider(key=gen.STEP).set_value(step).run()
    writing = at.session_state[gen.WRITING][1]
    at.selectbox(key=gb.BRANCH_TO).set_value(alternatives(writing, step)[rank]).run()
    at.button(key="attn.gen.branch.go").click().run()
    assert_no_exception(at)
    first, branch = at.session_state[gb.BRANCH]
    return first, branch


@pytest.mark.slow
def test_a_branch_is_written_beside_the_first_text_and_matches_the_full_model(models):
    at = _lab()
    first = _write(at, 6)
    assert len(first.written) == 6
    first_ids = [t.token_id for t in first.written]
    held, branch = _branch(at, 3, rank=1)
    assert held is first and branch.step == 3
    second = branch.writing
    assert second.finished and len(second.written) == 6
    ids = [t.token_id for t in second.written]
    assert ids[:2] == first_ids[:2] and ids[2] != first_ids[2]
    chosen = next(c for c in first.written[2].candidates if c.token_id == ids[2])
    assert not chosen.chosen and chosen.probability > 0
    hf = models[1]
    seq = [*first.prompt_ids, *ids[:3]]
    for token in second.written[3:]:  # greedy after the branch: each token is the full model's likeliest
        assert token.token_id == int(hf(torch.tensor([seq])).logits[0, -1].argmax())
        seq.append(token.token_id)
    captions = " ".join(c.value for c in at.caption)
    assert "First writing" in captions and "Branch at step 3" in captions
    marked = [m.value for m in at.markdown if "background:" in m.value]
    assert len(marked) == 2  # both columns mark the tokens where they differ
    assert at.button(key="attn.gen.start").disabled is False and at.button(key="attn.gen.stop").disabled


@pytest.mark.slow
def test_the_steps_csv_holds_both_writings_and_a_new_writing_drops_the_branch(models):
    at = _lab()
    first = _write(at, 5)
    _, branch = _branch(at, 2)
    rows = list(csv.DictReader(io.StringIO(branch_csv(first, branch))))
    assert [r["writing"] for r in rows] == ["first"] * 5 + ["branch"] * 5
    assert {r["branched_at"] for r in rows if r["writing"] == "branch"} == {"2"}
    assert [int(r["token_id"]) for r in rows[5:]] == [t.token_id for t in branch.writing.written]
    assert any(b.label.startswith("CSV") for b in at.get("download_button"))
    at.button(key="attn.gen.start").click().run()  # a new writing: the branch of the old one goes
    assert_no_exception(at)
    assert gb.BRANCH not in at.session_state
    assert not [c for c in at.caption if "Branch at step" in c.value]


def _running_branch(models, at, first, step):
    from explorer.lab.generation_branch import branch_writing
    from transformer_core.pretrained import load_pretrained

    model = load_pretrained(models[0] / "tiny-gpt2").model  # the same weights as the page's copy
    other = [c.token_id for c in first.written[step - 1].candidates if not c.chosen][0]
    running = branch_writing(model, first, step, other)
    running.writing.advance()
    at.session_state[gb.BRANCH] = (first, running)
    return running


@pytest.mark.slow
def test_a_running_branch_is_taken_up_by_the_next_page_run_and_stop_stops_it(models, monkeypatch):
    import streamlit as st

    at = _lab()
    first = _write(at, 8)
    running = _running_branch(models, at, first, 2)
    at.run()  # the page's loop writes the branch to its end
    assert_no_exception(at)
    assert running.writing.status == "done" and len(running.writing.written) == 8
    running = _running_branch(models, at, first, 2)
    monkeypatch.setattr(st, "session_state", {gen.WRITING: ("key", first), gb.BRANCH: (first, running)})
    gen._stop()  # Stop's callback (its button is enabled only while a page run draws a running writing)
    assert running.writing.status == "stopped" and len(running.writing.written) == 3
