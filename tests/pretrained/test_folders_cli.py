"""Model folders are described from their headers; the command line downloads and describes them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import inspect_folder, list_model_folders, load_pretrained
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
    assert out.startswith("tiny-bert: bert (BertForMaskedLM), ") and "parameters" in out and "MB on disk" in out
    assert main(["list", str(tmp_path)]) == 0
    assert "tiny-bert: bert" in capsys.readouterr().out
    assert main(["info", str(tmp_path)]) == 1
    assert "error: " in capsys.readouterr().err


def test_cli_download_fails_clearly_without_network(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-m", "transformer_core.pretrained", "download", "gpt2", "--to",
                           str(tmp_path / "models")], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 1
    assert "Could not fetch 'gpt2' from the Hugging Face Hub" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "models" / "gpt2").exists()
