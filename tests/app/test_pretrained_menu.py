"""The shared model menu and loader: allowed models offered, bad folders listed, the offline message, one copy."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.pretrained.hf_folders import bad_folders, gpt2_folder, vit_folder


def _menu_app() -> None:
    import streamlit as st

    from ui.common.pretrained import load_shared, models_on_offer, pick_model

    offer = pick_model("menu", ("gpt2", "bert"))
    if offer is not None:
        model = load_shared(offer, models_on_offer().budget_bytes)
        again = load_shared(offer, models_on_offer().budget_bytes)
        if model is not None:
                st.write(f"loaded {model.name} {model.family} shared={model is again} "
                     f"frozen={not any(p.requires_grad for p in model.model.parameters())}")


@pytest.fixture(name="folders")
def folders_fixture(tmp_path, monkeypatch):
    root = tmp_path / "models"
    gpt2_folder(root / "tiny-gpt2")
    vit_folder(root / "tiny-vit")
    reasons = bad_folders(root)
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    from ui.common.pretrained import _hub_online

    _hub_online.clear()
    return root, reasons


def test_the_menu_offers_the_text_models_and_loads_one_shared_frozen_copy(folders):
    at = AppTest.from_function(_menu_app, default_timeout=60).run()
    assert not at.exception
    assert [o.split(" (")[0] for o in at.selectbox(key="menu").options] == ["tiny-gpt2"]  # the ViT is not text
    assert "loaded tiny-gpt2 gpt2 shared=True frozen=True" in [m.value for m in at.markdown]


def test_bad_folders_are_listed_with_reasons_and_the_offline_message_shown(folders):
    _, reasons = folders
    at = AppTest.from_function(_menu_app, default_timeout=60).run()
    captions = " ".join(c.value for c in at.caption)
    for name, phrase in reasons.items():
        assert f"**{name}**" in captions and phrase in captions
    texts = " ".join(m.value for m in at.markdown)
    assert "cannot reach the Hugging Face Hub" in texts
    assert "python -m transformer_core.pretrained download gpt2 --to models/" in texts


def test_a_folder_that_breaks_after_listing_gives_a_friendly_error(folders):
    root, _ = folders
    at = AppTest.from_function(_menu_app, default_timeout=60).run()
    weights = root / "tiny-gpt2" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-50])
    from ui.common.pretrained import _shared_model

    _shared_model.clear()
    at.run()
    assert not at.exception
    assert any("could not be loaded" in e.value and "truncated" in e.value for e in at.error)


def test_another_hub_name_of_an_offered_model_picks_it(folders, tmp_path, monkeypatch):
    from transformer_core.pretrained import folders as scan

    cache = tmp_path / "hf-cache"
    gpt2_folder(cache / "models--openai-community--gpt2" / "snapshots" / "abc")
    (cache / "models--openai-community--gpt2" / "refs").mkdir()
    (cache / "models--openai-community--gpt2" / "refs" / "main").write_text("abc")
    monkeypatch.setattr(scan, "_hub_cache", lambda: cache)
    at = AppTest.from_function(_menu_app, default_timeout=60)
    at.session_state["menu"] = "gpt2"  # the name a link from a server with the models-folder copy carries
    at.run()
    assert not at.exception
    assert at.selectbox(key="menu").value == "openai-community/gpt2"
    rows = " ".join(m.value for m in at.markdown)
    assert "**distilgpt2**:" in rows and "**gpt2**:" not in rows  # it is on this server: not offered again


def test_the_menu_lists_gpt2_before_bert_whatever_their_names(folders):
    """A first visit gets GPT-2, the model students read about first, though "a-bert" sorts before "tiny-gpt2"."""
    from tests.pretrained.hf_folders import bert_folder
    from ui.common.pretrained import _catalogue

    root, _ = folders
    bert_folder(root / "a-bert")
    _catalogue.clear()
    at = AppTest.from_function(_menu_app, default_timeout=60).run()
    assert not at.exception
    options = at.selectbox(key="menu").options
    assert [o.split(" ")[0] for o in options] == ["tiny-gpt2", "a-bert"], options
    assert at.selectbox(key="menu").value == "tiny-gpt2"
