"""The curated Llama-family models: their sizes come from their published shapes, counted as transformers counts
them, and their downloads go through the same checks as every curated model (safetensors only, size limits)."""

from __future__ import annotations

import pytest
import torch

from explorer.host import GIB, MIB, HostProfile
from explorer.pretrained.catalogue import CURATED, SMALL_FILES_BYTES, catalogue, download, model_budget_bytes
from explorer.pretrained.published import QWEN25_05B, SMOLLM2_135M, SMOLLM2_360M, LlamaShape
from tests.pretrained.fake_hub import FakeHub
from tests.pretrained.hf_folders import gpt2_folder
from transformer_core.pretrained.hub import HubError

LAPTOP = HostProfile(cores=4, memory_bytes=16 * GIB, small=False)
SMALL = HostProfile(cores=2, memory_bytes=2 * GIB, small=True)
MODERN = {"HuggingFaceTB/SmolLM2-135M": ("llama", SMOLLM2_135M), "HuggingFaceTB/SmolLM2-360M": ("llama", SMOLLM2_360M),
          "Qwen/Qwen2.5-0.5B": ("qwen2", QWEN25_05B)}


def _hf_params(shape: LlamaShape, family: str) -> int:
    """The parameters transformers builds for ``shape`` (on the meta device: nothing is allocated)."""
    import transformers

    config_class, model_class = ((transformers.LlamaConfig, transformers.LlamaForCausalLM) if family == "llama"
                                 else (transformers.Qwen2Config, transformers.Qwen2ForCausalLM))
    config = config_class(vocab_size=shape.vocab_size, hidden_size=shape.d_model, intermediate_size=shape.d_ff,
                          num_hidden_layers=shape.n_layers, num_attention_heads=shape.n_heads,
                          num_key_value_heads=shape.n_kv_heads, tie_word_embeddings=shape.tied)
    with torch.device("meta"):
        model = model_class(config)
    return model.num_parameters()


@pytest.mark.parametrize("model_id", list(MODERN))
def test_published_shapes_count_the_parameters_transformers_builds(model_id):
    family, shape = MODERN[model_id]
    assert shape.n_params == _hf_params(shape, family)


def test_the_published_counts_match_the_model_cards():
    assert (SMOLLM2_135M.n_params, SMOLLM2_360M.n_params, QWEN25_05B.n_params) == (
        134_515_008, 361_821_120, 494_032_768)


def test_the_curated_modern_models_carry_their_computed_sizes_and_families():
    entries = {c.model_id: c for c in CURATED}
    for model_id, (family, shape) in MODERN.items():
        entry = entries[model_id]
        assert (entry.family, entry.n_params) == (family, shape.n_params)
        assert entry.download_bytes == 2 * shape.n_params + SMALL_FILES_BYTES  # bfloat16 weights + small files
        assert entry.n_bytes == 4 * shape.n_params


def test_small_hosts_grey_the_modern_models_out_and_laptops_offer_them(tmp_path):
    small = {c.model_id: why for c, ok, why in catalogue(folder=tmp_path, cache_dir=tmp_path, profile=SMALL)
             .downloadable if not ok}
    assert set(MODERN) <= set(small)
    assert "needs 513 MB of memory; this small host loads models up to 160 MB" in small["HuggingFaceTB/SmolLM2-135M"]
    laptop = {c.model_id for c, ok, _ in catalogue(folder=tmp_path, cache_dir=tmp_path, profile=LAPTOP).downloadable
              if ok}
    assert set(MODERN) <= laptop
    assert all(4 * shape.n_params <= model_budget_bytes(LAPTOP) for _, shape in MODERN.values())


def test_a_modern_models_download_is_refused_when_its_repo_holds_only_pickles(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    gpt2_folder(repo)
    (repo / "model.safetensors").rename(repo / "pytorch_model.bin")
    hub = FakeHub(tmp_path / "cache").install(monkeypatch)
    hub.commit("a" * 40, repo)
    smol = next(c for c in CURATED if c.model_id == "HuggingFaceTB/SmolLM2-135M")
    with pytest.raises(HubError, match="has no model.safetensors on its main branch: it has only pytorch_model.bin"):
        download(smol, folder=tmp_path / "models", profile=LAPTOP)
    assert hub.fetched() == [] and not (tmp_path / "models" / "SmolLM2-135M").exists()


def test_a_modern_models_download_lands_in_a_folder_named_for_it(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    gpt2_folder(repo)
    hub = FakeHub(tmp_path / "cache").install(monkeypatch)
    hub.commit("a" * 40, repo)
    qwen = next(c for c in CURATED if c.model_id == "Qwen/Qwen2.5-0.5B")
    folder = download(qwen, folder=tmp_path / "models", profile=LAPTOP)
    assert folder == tmp_path / "models" / "Qwen2.5-0.5B" and (folder / "model.safetensors").is_file()
    assert qwen.download_bytes > 940 * MIB


def test_local_llama_and_qwen2_folders_are_found_and_described(tmp_path):
    from tests.pretrained.hf_folders import llama_folder

    sizes = {"tiny-llama": llama_folder(tmp_path / "tiny-llama").num_parameters(),
             "tiny-qwen": llama_folder(tmp_path / "tiny-qwen", qwen2=True).num_parameters()}
    cat = catalogue(folder=tmp_path, cache_dir=tmp_path / "cache", profile=LAPTOP)
    offers = {o.info.name: o for o in cat.offers}
    assert {n: (o.info.family, o.info.n_params) for n, o in offers.items()} == {
        "tiny-llama": ("llama", sizes["tiny-llama"]), "tiny-qwen": ("qwen2", sizes["tiny-qwen"])}
    assert offers["tiny-qwen"].label.startswith("tiny-qwen (qwen2, ")
    assert cat.skipped == []
