"""Model Builder: a loaded pretrained model counted and set beside the famous models."""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import app_at, assert_no_exception
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder
from transformer_core.pretrained import load_pretrained
from transformer_core.sizing import PRESETS
from ui.builder import controls as bc

PAGE = "pages/builder.py"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=3, heads=2, width=16)
    bert_folder(root / "tiny-bert", layers=2, heads=2, width=16)
    llama_folder(root / "tiny-llama", layers=2, heads=4, kv_heads=2, width=16, ff=24)
    return root


def _with_loaded(root, monkeypatch, name: str):
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    at = app_at(PAGE)
    at.toggle(key=bc.COMPARE_LOADED).set_value(True).run()
    menu = at.selectbox(key=bc.LOADED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    assert_no_exception(at)
    return at


@pytest.mark.parametrize("name, family", [("tiny-gpt2", "decoder"), ("tiny-bert", "encoder"),
                                          ("tiny-llama", "decoder")])
def test_the_loaded_model_joins_the_table_with_its_real_count(models, monkeypatch, name, family):
    at = _with_loaded(models, monkeypatch, name)
    n_params = load_pretrained(models / name).n_params
    table = at.table[0].value
    title = f"{name} (loaded from {models.name}/{name})"
    assert list(table.columns) == ["Your model", title, *PRESETS]
    assert table.loc["Exact count", title] == f"{n_params:,}"
    assert table.loc["Family", title] == family
    assert table.loc["d_model", title] == "16"
    shares = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "mb.share" in c.proto.id)
    assert title in shares["data"][0]["y"]
    counts = {t["name"]: t["customdata"][t["y"].index(title)] for t in shares["data"]}
    assert sum(counts.values()) == n_params  # parameters by component add up to the whole model


def test_without_the_switch_the_table_holds_the_presets_only(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models))
    at = app_at(PAGE)
    assert list(at.table[0].value.columns) == ["Your model", *PRESETS]
    at.toggle(key=bc.COMPARE_LOADED).set_value(True).run()
    assert at.selectbox(key=bc.LOADED_MODEL).options  # the menu appears only when asked for
