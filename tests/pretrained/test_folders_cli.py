"""Model folders are described from their headers; the command line downloads and describes them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import (
    inspect_folder,
    list_cached_models,
    list_model_folders,
    load_pretrained,
    models_dir,
)
from transformer_core.pretrained.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def test_list_model_folders_describes_valid_ones_and_skips_the_rest(tmp_path):
    hf_gpt2 = gpt2_folder(tmp_path / "tiny-gpt2", tied=False)
    hf_vit = vit_folder(tmp_path / "tiny-vit")
    bert_folder(tmp_path / "broken-bert")
    (tmp_path / "broken-bert" / "model.safetensors").unlink()
    (tmp_path / "notes").mkdir()
    (tmp_path / "readme.txt").write_text("not a folder")
    scan = list_model_folders(tmp_path)
    assert [(m.name, m.family, m.n_params) for m in scan.models] == [
        ("tiny-gpt2", "gpt2", hf_gpt2.num_parameters()), ("tiny-vit", "vit", hf_vit.num_parameters())]
    assert scan.models[0].n_bytes == 4 * hf_gpt2.num_parameters()
    assert scan.models[1].file_bytes == (tmp_path / "tiny-vit" / "model.safetensors").stat().st_size
    reasons = dict((p.name, r) for p, r in scan.skipped)
    assert set(reasons) == {"broken-bert", "notes"}
    assert "model.safetensors is missing" in reasons["broken-bert"] and "no config.json" in reasons["notes"]
    assert list_model_folders(tmp_path / "absent").models == []


def test_info_counts_what_the_loader_builds(tmp_path):
    for make in (gpt2_folder, bert_folder, vit_folder):
        folder = tmp_path / make.__name__
        make(folder)
        assert inspect_folder(folder).n_params == load_pretrained(folder).n_params


def test_cli_info_and_list(tmp_path, capsys):
    bert_folder(tmp_path / "tiny-bert")
    assert main(["info", str(tmp_path / "tiny-bert")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tiny-bert: bert (BertForMaskedLM), ") and "parameters" in out
    assert re.search(r"\d kB in memory, \d+\.\d kB on disk", out)
    assert main(["list", str(tmp_path)]) == 0
    assert "tiny-bert: bert" in capsys.readouterr().out
    assert main(["info", str(tmp_path)]) == 1
    assert "error: " in capsys.readouterr().err


def test_cli_download_fails_clearly_without_network(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-m", "transformer_core.pretrained", "download", "gpt2", "--to",
                           str(tmp_path / "models")], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 1
    assert "Could not reach the Hugging Face Hub to fetch 'gpt2'" in done.stderr
    assert "HF_HUB_OFFLINE is set" in done.stderr and "download gpt2 --to models/" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "models" / "gpt2").exists()


def _cached(cache: Path, model_id: str, make=gpt2_folder):
    """A model as the Hugging Face cache keeps it: models--owner--name/refs/main -> snapshots/<revision>/."""
    repo = cache / ("models--" + model_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    return make(repo / "snapshots" / "0123abcd")


@pytest.mark.slow
def test_cached_models_are_listed_by_id_and_load_offline(tmp_path):
    cache = tmp_path / "hub"
    hf = _cached(cache, "someone/tiny-gpt2")
    (cache / "models--someone--half-done" / "snapshots").mkdir(parents=True)
    scan = list_cached_models(cache)
    assert [(m.name, m.family, m.n_params) for m in scan.models] == [("someone/tiny-gpt2", "gpt2",
                                                                      hf.num_parameters())]
    assert [(p.name, reason) for p, reason in scan.skipped] == [("models--someone--half-done",
                                                                 "no downloaded revision")]
    code = ("from transformer_core.pretrained import load_pretrained\n"
            "pre = load_pretrained('someone/tiny-gpt2')\nprint(pre.family, pre.name, pre.n_params)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.stdout.split() == ["gpt2", "someone/tiny-gpt2", str(hf.num_parameters())], done.stderr


def test_models_dir_follows_te_models_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("TE_MODELS_DIR", raising=False)
    assert models_dir() == Path("models")
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path))
    assert models_dir() == tmp_path
