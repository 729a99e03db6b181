"""The Attention Lab's Pretrained source on small random-initialised GPT-2 and BERT folders."""

from __future__ import annotations

import pytest
import torch

from tests.app.conftest import app_at
from tests.pretrained.hf_folders import bad_folders, bert_folder, gpt2_folder, mark_special_tokens
from ui.attention import keys as lab_keys

PAGE = "pages/attention.py"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2 = gpt2_folder(root / "tiny-gpt2", layers=2, heads=2)
    bert = bert_folder(root / "tiny-bert", layers=3, heads=2)
    mark_special_tokens(root / "tiny-bert")
    bad_folders(root)
    return root, {"tiny-gpt2": gpt2, "tiny-bert": bert}


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models[0]))


def _pretrained(name: str, text: str, view: str = "grid"):
    at = app_at(PAGE)
    at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=lab_keys.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    at.text_input(key=lab_keys.TEXT).set_value(text).run()
    at.radio(key=lab_keys.VIEW).set_value(view).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _guess_tables(at) -> list:
    return [d.value for d in at.dataframe if list(d.value.columns) == ["token", "probability"]]


def _tokens_line(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Tokens"))


def test_gpt2_shows_its_subword_tokens_and_the_next_token_table(models):
    at = _pretrained("tiny-gpt2", "the cat sat")
    assert "␣" in _tokens_line(at)
    assert "Weights of **tiny-gpt2** (GPT2LMHeadModel)" in " ".join(c.value for c in at.caption)
    (table,) = _guess_tables(at)
    assert len(table) == 10 and table["probability"].is_monotonic_decreasing
    at.slider(key=lab_keys.TOP_K).set_value(3).run()
    at.slider(key=lab_keys.TEMPERATURE).set_value(0.5).run()
    (sharp,) = _guess_tables(at)
    hf = models[1]["tiny-gpt2"]
    from transformer_core.pretrained import load_pretrained

    ids = load_pretrained(models[0] / "tiny-gpt2").tokenizer.encode("the cat sat").ids
    expected = torch.softmax(hf(torch.tensor([ids])).logits[0, -1].double() / 0.5, -1).topk(3).values
    assert sharp["probability"].tolist() == pytest.approx(expected.tolist(), abs=1e-5)


def test_gpt2_step_by_step_and_lines_views_draw_with_the_models_numbers(models):
    at = _pretrained("tiny-gpt2", "the cat sat", view="steps")
    at.radio(key=lab_keys.LAYER).set_value(2).run()
    assert not at.exception, [e.message for e in at.exception]
    at.radio(key=lab_keys.VIEW).set_value("lines").run()
    at.radio(key=lab_keys.VIEW).set_value("head").run()
    assert not at.exception, [e.message for e in at.exception]


def test_bert_fills_in_mask_and_shows_cls_and_sep(models):
    at = _pretrained("tiny-bert", "the [MASK] sat on the mat", view="steps")
    assert "[CLS]" in _tokens_line(at) and "[SEP]" in _tokens_line(at)
    (table,) = _guess_tables(at)
    assert len(table) == 5 and table["probability"].sum() <= 1.0
    assert "Best fill-ins for [MASK] at position 2:" in [c.value for c in at.caption]
    at.text_input(key=lab_keys.TEXT).set_value("the cat sat").run()
    assert any("[MASK]" in i.value for i in at.info)


def test_bad_folders_are_listed_and_the_page_keeps_working(models):
    at = _pretrained("tiny-gpt2", "the cat")
    captions = " ".join(c.value for c in at.caption)
    for name in ("pickle-only", "truncated", "unsupported", "oversized"):
        assert f"Skipped folder **{name}**" in captions
    assert "download gpt2 --to models/" in " ".join(m.value for m in at.markdown)


def test_find_the_heads_maps_every_head_and_links_to_the_best_one(models):
    at = _pretrained("tiny-gpt2", "the cat sat")
    from explorer.pretrained.find_heads import head_scores
    from transformer_core.pretrained import load_pretrained

    best = head_scores(load_pretrained(models[0] / "tiny-gpt2"), length=11, seed=0).best("induction")
    button = at.button(key="attn.find.induction")
    assert button.label.startswith(f"Best induction head: layer {best[0] + 1}, head {best[1] + 1}")
    button.click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert (at.radio(key=lab_keys.LAYER).value, at.radio(key=lab_keys.HEAD).value) == (best[0] + 1, best[1] + 1)
    assert at.radio(key=lab_keys.VIEW).value == "head"
