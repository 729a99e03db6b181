"""Positional Encodings, Real models: a pretrained GPT-2's and BERT's learned tables beside the sinusoidal one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app.conftest import app_at, assert_no_exception
from tests.app.test_positional_encodings import _z
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from ui.positional import views as positional_views

PAGE = "pages/positional.py"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2 = gpt2_folder(root / "tiny-gpt2", positions=40, width=16)
    bert = bert_folder(root / "tiny-bert", positions=24, width=16)
    vit_folder(root / "tiny-vit")
    return root, {"tiny-gpt2": gpt2.transformer.wpe.weight,
                  "tiny-bert": bert.bert.embeddings.position_embeddings.weight}


def _section(root, monkeypatch, name: str | None = None):
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    at = app_at(PAGE)
    at.radio(key=positional_views.SECTION).set_value("pretrained").run()
    if name is not None:
        menu = at.selectbox(key=positional_views.PRETRAINED_MODEL)
        menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    assert_no_exception(at)
    return at


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-bert"])
def test_the_models_own_table_is_drawn_beside_the_sinusoidal_one(models, monkeypatch, name):
    root, tables = models
    at = _section(root, monkeypatch, name)
    assert f"learned position table of **{name}" in " ".join(i.value for i in at.info)
    at.slider(key=positional_views.PRETRAINED_SHOWN).set_value(16).run()
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    learned, sinusoidal = (_z(fig["data"][0]) for fig in charts[:2])
    np.testing.assert_allclose(learned, tables[name].detach().numpy()[:16], atol=1e-6)
    assert sinusoidal.shape == (16, 16) and sinusoidal[1, 0] == pytest.approx(np.sin(1.0), abs=1e-6)
    sims = charts[2]["data"]
    assert len(sims) == 2 and _z(sims[1]).shape == (16, 16)
    pcs = charts[3]["data"]
    assert [t["name"][:3] for t in pcs] == ["PC1", "PC2", "PC3"]
    assert len(pcs[0]["x"]) == tables[name].shape[0]  # the components use every position of the table


def test_the_menu_offers_text_models_only(models, monkeypatch):
    at = _section(models[0], monkeypatch)
    options = at.selectbox(key=positional_views.PRETRAINED_MODEL).options
    assert any(o.startswith("tiny-gpt2 ") for o in options) and any(o.startswith("tiny-bert ") for o in options)
    assert not any(o.startswith("tiny-vit ") for o in options)


def test_without_a_model_the_section_says_how_to_get_one(tmp_path, monkeypatch):
    at = _section(tmp_path, monkeypatch)
    assert any("No GPT-2 or BERT model" in c.value for c in at.caption)
    assert not at.get("plotly_chart")
