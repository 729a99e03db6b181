"""The models on offer: local folders described, bad ones skipped with reasons, host budgets, the Hub check."""

from __future__ import annotations

import socket

import pytest

from explorer.host import GIB, MIB, HostProfile
from explorer.pretrained.catalogue import (
    CURATED,
    catalogue,
    download,
    hub_reachable,
    model_budget_bytes,
    offline_advice,
)
from tests.pretrained.hf_folders import bad_folders, bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained.hub import HubError, needed_files

LAPTOP = HostProfile(cores=4, memory_bytes=16 * GIB, small=False)
SMALL = HostProfile(cores=2, memory_bytes=2 * GIB, small=True)


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    sizes = {"tiny-gpt2": gpt2_folder(root / "tiny-gpt2").num_parameters(),
             "tiny-bert": bert_folder(root / "tiny-bert").num_parameters(),
             "tiny-vit": vit_folder(root / "tiny-vit").num_parameters()}
    return root, sizes, bad_folders(root)


def test_every_valid_folder_is_offered_with_its_family_and_size(models, tmp_path):
    root, sizes, _ = models
    cat = catalogue(folder=root, cache_dir=tmp_path, profile=LAPTOP)
    assert {o.info.name: (o.info.family, o.info.n_params) for o in cat.offers} == {
        "tiny-gpt2": ("gpt2", sizes["tiny-gpt2"]), "tiny-bert": ("bert", sizes["tiny-bert"]),
        "tiny-vit": ("vit", sizes["tiny-vit"])}
    assert all(o.allowed and o.where == "models folder" for o in cat.offers)
    assert [o.info.name for o in cat.allowed("vit")] == ["tiny-vit"]


def test_bad_folders_are_skipped_with_their_reasons(models, tmp_path):
    root, _, bad = models
    skipped = dict(catalogue(folder=root, cache_dir=tmp_path, profile=LAPTOP).skipped)
    assert set(skipped) == set(bad)
    for name, phrase in bad.items():
        assert phrase in skipped[name]


def test_models_over_the_hosts_budget_are_greyed_out_with_the_reason(models, tmp_path):
    root, sizes, _ = models
    smallest = min(sizes.values())
    tight = HostProfile(cores=4, memory_bytes=4 * 4 * smallest, small=False)  # a quarter: the smallest model only
    cat = catalogue(folder=root, cache_dir=tmp_path, profile=tight)
    assert cat.budget_bytes == 4 * smallest
    allowed = {o.info.name for o in cat.offers if o.allowed}
    assert allowed == {n for n, p in sizes.items() if 4 * p <= cat.budget_bytes}
    greyed = [o for o in cat.offers if not o.allowed]
    assert greyed and all("this machine loads models up to" in o.reason for o in greyed)
    assert cat.offers[: len(allowed)] == cat.allowed()  # allowed ones come first


def test_small_hosts_offer_only_the_small_curated_models(tmp_path):
    cat = catalogue(folder=tmp_path / "none", cache_dir=tmp_path, profile=SMALL)
    ok = {c.model_id for c, allowed, _ in cat.downloadable if allowed}
    assert ok == {c.model_id for c in CURATED if c.n_bytes <= model_budget_bytes(SMALL)}
    assert ok == {"google/bert_uncased_L-4_H-256_A-4", "facebook/deit-tiny-patch16-224"}
    reasons = [why for c, allowed, why in cat.downloadable if not allowed]
    assert all("this small host loads models up to 160 MB" in why for why in reasons)


def test_laptops_may_load_every_curated_model():
    assert all(c.n_bytes <= model_budget_bytes(LAPTOP) for c in CURATED)
    assert model_budget_bytes(HostProfile(cores=2, memory_bytes=4 * GIB, small=False)) == 1024 * MIB


def test_curated_models_already_on_disk_are_not_offered_for_download(tmp_path):
    gpt2_folder(tmp_path / "models" / "distilgpt2")
    cat = catalogue(folder=tmp_path / "models", cache_dir=tmp_path, profile=LAPTOP)
    assert "distilgpt2" not in {c.model_id for c, _, _ in cat.downloadable}
    assert "gpt2" in {c.model_id for c, _, _ in cat.downloadable}


def test_the_hub_check_is_false_offline_and_true_when_a_connection_opens(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not hub_reachable()
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert hub_reachable(host="127.0.0.1", port=port, timeout=5)
    assert not hub_reachable(host="127.0.0.1", port=port, timeout=5)  # closed now: refused


def test_offline_advice_gives_the_command_and_the_folder():
    text = offline_advice("google/vit-base-patch16-224")
    assert "python -m transformer_core.pretrained download google/vit-base-patch16-224 --to models/" in text
    assert "models/vit-base-patch16-224" in text


def test_only_the_needed_files_are_downloaded():
    names = ["config.json", "model.safetensors", "pytorch_model.bin", "tf_model.h5", "tokenizer.json", "vocab.txt",
             "onnx/model.onnx", "modeling_x.py", "preprocessor_config.json", "README.md"]
    assert needed_files(names) == ["config.json", "model.safetensors", "tokenizer.json", "vocab.txt",
                                   "preprocessor_config.json"]


def test_downloads_report_progress_by_bytes(monkeypatch, tmp_path):
    import huggingface_hub

    class Sibling:
        def __init__(self, name, size):
            self.rfilename, self.size = name, size

    class Api:
        def model_info(self, model_id, files_metadata):
            return type("Info", (), {"siblings": [Sibling("config.json", 10), Sibling("pytorch_model.bin", 500),
                                                  Sibling("model.safetensors", 90)]})()

    fetched = []
    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda model_id, name, local_dir: fetched.append((model_id, name, local_dir)))
    reports = []
    folder = download(CURATED[0], folder=tmp_path, progress=lambda *a: reports.append(a))
    assert folder == tmp_path / "gpt2"
    assert [f[1] for f in fetched] == ["config.json", "model.safetensors"]
    assert reports == [(0, 100, "config.json"), (10, 100, "model.safetensors"), (100, 100, "")]


def test_a_failed_download_says_how_to_get_the_model_elsewhere(monkeypatch, tmp_path):
    import huggingface_hub

    class Api:
        def model_info(self, model_id, files_metadata):
            raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    with pytest.raises(HubError, match="download gpt2 --to models/"):
        download(CURATED[0], folder=tmp_path)
