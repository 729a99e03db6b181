"""Hub model ids: config first, budget checked before the weights, only safe files fetched, cache first."""

from __future__ import annotations

import fnmatch
import shutil

import huggingface_hub
import pytest

from tests.pretrained.hf_folders import gpt2_folder
from transformer_core.pretrained import load_pretrained
from transformer_core.pretrained.__main__ import main


class FakeHub:
    """Serves one repository from a local folder, like huggingface_hub would, and records every request."""

    def __init__(self, repo, cache, *, cached: bool = False) -> None:
        self.repo, self.cache, self.cached, self.calls = repo, cache, cached, []

    def hf_hub_download(self, repo_id, filename, *, cache_dir=None, local_files_only=False):
        self.calls.append(("file", filename, local_files_only))
        if local_files_only and not self.cached:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        self.cache.mkdir(exist_ok=True)
        return str(shutil.copy(self.repo / filename, self.cache / filename))

    def snapshot_download(self, repo_id, *, allow_patterns, cache_dir=None, local_dir=None, local_files_only=False):
        self.calls.append(("snapshot", tuple(allow_patterns), local_files_only))
        if local_files_only and not self.cached:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        target = local_dir or self.cache
        target.mkdir(parents=True, exist_ok=True)
        for path in self.repo.iterdir():
            if any(fnmatch.fnmatch(path.name, p) for p in allow_patterns):
                shutil.copy(path, target / path.name)
        return str(target)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    gpt2_folder(repo)
    (repo / "pytorch_model.bin").write_bytes(b"pickle")
    (repo / "modeling_gpt2.py").write_text("raise SystemExit")
    fake = FakeHub(repo, tmp_path / "cache")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake.hf_hub_download)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake.snapshot_download)
    return fake


def test_model_ids_fetch_the_config_then_only_safe_files(hub):
    pre = load_pretrained("someone/tiny-gpt2")
    assert pre.family == "gpt2" and pre.name == "someone/tiny-gpt2"
    assert [c[0] for c in hub.calls] == ["file", "file", "snapshot", "snapshot"]  # cache first, each time
    assert sorted(p.name for p in hub.cache.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]


def test_over_budget_models_are_refused_before_downloading_weights(hub):
    with pytest.raises(ValueError, match="parameters; the limit here is 1,000"):
        load_pretrained("someone/tiny-gpt2", max_params=1000)
    assert all(kind == "file" for kind, *_ in hub.calls)
    assert not (hub.cache / "model.safetensors").exists()


def test_cached_models_load_without_going_online(hub):
    load_pretrained("someone/tiny-gpt2")
    hub.cached, hub.calls = True, []
    load_pretrained("someone/tiny-gpt2")
    assert all(local_only for *_, local_only in hub.calls)


def test_cli_download_writes_a_model_folder(hub, tmp_path, capsys):
    assert main(["download", "someone/tiny-gpt2", "--to", str(tmp_path / "models")]) == 0
    folder = tmp_path / "models" / "tiny-gpt2"
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert "tiny-gpt2: gpt2 (GPT2LMHeadModel)" in capsys.readouterr().out
    assert load_pretrained(folder).family == "gpt2"
