"""The models on offer: local folders described, bad ones skipped with reasons, host budgets, the Hub check."""

from __future__ import annotations

import dataclasses
import http.server
import threading

import huggingface_hub
import pytest

from explorer.host import GIB, MIB, HostProfile
from explorer.pretrained.catalogue import (
    CURATED,
    catalogue,
    download,
    hub_reachable,
    model_budget_bytes,
    offline_advice,
    public_text,
)
from tests.pretrained.fake_hub import FakeHub
from tests.pretrained.hf_folders import bad_folders, bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained.hub import HubError

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
    assert ok == {"google/bert_uncased_L-2_H-128_A-2", "WinKawaks/vit-tiny-patch16-224"}  # a BERT and a ViT
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


def test_the_hub_check_asks_through_huggingface_hub_at_its_endpoint(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not hub_reachable()
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    asked = []

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            asked.append(self.path)
            self.send_response(429)  # even a refusal means the Hub is there
            self.end_headers()

        def log_message(self, *args):
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)  # what HF_ENDPOINT sets
        assert hub_reachable(timeout=5)
        server.shutdown()
    assert "/api/models/openai-community/gpt2" in asked
    assert not hub_reachable(timeout=5)  # nothing listens there now


def test_offline_advice_gives_the_command_and_no_server_path(monkeypatch, tmp_path):
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path / "srv" / "models"))
    text = offline_advice("google/vit-base-patch16-224")
    assert "python -m transformer_core.pretrained download google/vit-base-patch16-224 --to models/" in text
    assert "models/vit-base-patch16-224" in text and str(tmp_path) not in text


def test_skipped_folders_and_load_errors_name_no_server_path(models, tmp_path):
    root, _, _ = models
    (root / "empty").mkdir(exist_ok=True)  # no config.json: its reason names the folder
    cache = tmp_path / "hub"
    (cache / "models--someone--broken" / "snapshots" / "abc").mkdir(parents=True)
    (cache / "models--someone--broken" / "refs").mkdir()
    (cache / "models--someone--broken" / "refs" / "main").write_text("abc")
    cat = catalogue(folder=root, cache_dir=cache, profile=LAPTOP)
    skipped = dict(cat.skipped)
    assert skipped["empty"] == "empty is not a model folder: it has no config.json."
    assert skipped["someone/broken"] == "someone/broken is not a model folder: it has no config.json."
    assert not any(str(root) in why or str(tmp_path) in why for why in skipped.values())
    offer = cat.offers[0]
    error = f"{offer.info.path / 'tokenizer.json'} is damaged; see {root}"
    expected = f"{offer.info.name}/tokenizer.json is damaged; see the models folder"
    assert public_text(error, offer, folder=root) == expected


def test_org_prefixed_names_in_the_cache_are_the_curated_models(tmp_path):
    cache = tmp_path / "hub"
    for repo in ("openai-community--gpt2", "google-bert--bert-base-uncased"):
        snapshot = cache / f"models--{repo}" / "snapshots" / "abc"
        (gpt2_folder if "gpt2" in repo else bert_folder)(snapshot)
        (cache / f"models--{repo}" / "refs").mkdir()
        (cache / f"models--{repo}" / "refs" / "main").write_text("abc")
    gpt2_folder(tmp_path / "models" / "gpt2")  # the same model in the models folder too
    cat = catalogue(folder=tmp_path / "models", cache_dir=cache, profile=LAPTOP)
    offered = {c.model_id for c, _, _ in cat.downloadable}
    assert "gpt2" not in offered and "bert-base-uncased" not in offered and "distilgpt2" in offered
    assert [o.info.name for o in cat.offers] == ["gpt2", "google-bert/bert-base-uncased"]  # one entry per model
    assert cat.offers[0].where == "models folder"


def test_downloads_report_progress_by_bytes_and_fetch_only_the_weights_and_settings(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    gpt2_folder(repo)
    (repo / "pytorch_model.bin").write_bytes(b"pickle" * 100)
    hub = FakeHub(tmp_path / "cache").install(monkeypatch)
    hub.commit("a" * 40, repo)
    reports = []
    folder = download(CURATED[0], folder=tmp_path / "models", profile=LAPTOP, progress=lambda *a: reports.append(a))
    assert folder == tmp_path / "models" / "gpt2"
    assert hub.fetched() == ["config.json", "tokenizer.json", "model.safetensors"]
    small = sum((repo / n).stat().st_size for n in ("config.json", "tokenizer.json"))
    total = small + (repo / "model.safetensors").stat().st_size
    assert reports == [(small, total, "model.safetensors"), (total, total, "")]


def test_a_download_larger_than_its_catalogue_entry_or_the_host_allows_is_refused(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    gpt2_folder(repo)
    hub = FakeHub(tmp_path / "cache").install(monkeypatch)
    hub.commit("a" * 40, repo)
    tiny = dataclasses.replace(CURATED[0], download_bytes=1000)
    with pytest.raises(HubError, match="its entry in this app's catalogue allows at most 1 kB"):
        download(tiny, folder=tmp_path / "models", profile=LAPTOP)
    starved = HostProfile(cores=1, memory_bytes=GIB, small=True)
    monkeypatch.setattr("explorer.pretrained.catalogue.SMALL_FILES_BYTES", 0)
    monkeypatch.setattr("explorer.pretrained.catalogue.SMALL_HOST_MODEL_BYTES", 2000)
    with pytest.raises(HubError, match="this host's model budget allows at most 2 kB"):
        download(CURATED[0], folder=tmp_path / "models", profile=starved)
    assert hub.fetched() == []


def test_a_failed_download_says_how_to_get_the_model_elsewhere(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path / "cache").install(monkeypatch)
    hub.fail_listing = "offline"
    with pytest.raises(HubError, match="download gpt2 --to models/") as caught:
        download(CURATED[0], folder=tmp_path / "models", profile=LAPTOP)
    assert str(tmp_path) not in str(caught.value)
