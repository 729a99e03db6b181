"""Bad model folders are refused with clear messages, before anything unsafe or large happens."""

from __future__ import annotations

import json
import pathlib
import pickle

import pytest
from safetensors.torch import load_file, save_file

from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import HubError, inspect_folder, load_pretrained


class _Payload:
    """Unpickling this creates a marker file: proof that a pickle was opened."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def _edit_config(folder, **changes):
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def test_pickle_only_folder_is_refused_without_opening_it(tmp_path):
    gpt2_folder(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    marker = tmp_path / "unpickled"
    (tmp_path / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(ValueError, match=r"only as pickles \(pytorch_model.bin\).*never opened"):
        load_pretrained(tmp_path)
    assert not marker.exists()


def test_remote_code_is_never_run(tmp_path):
    gpt2_folder(tmp_path)
    marker = tmp_path / "ran"
    (tmp_path / "modeling_evil.py").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n")
    _edit_config(tmp_path, auto_map={"AutoModelForCausalLM": "modeling_evil.Evil"}, trust_remote_code=True)
    assert load_pretrained(tmp_path).family == "gpt2"
    assert not marker.exists()


@pytest.mark.parametrize("change, message", [
    ({"model_type": "mamba"}, r"Model type 'mamba' is not supported; supported are gpt2 .*llama .*qwen2 .*bert .*vit"),
    ({"model_type": "llama"}, "Architecture 'GPT2LMHeadModel' is not supported"),
    ({"architectures": ["GPT2ForSequenceClassification"]}, "Architecture 'GPT2ForSequenceClassification' is not"),
    ({"activation_function": "swish"}, "activation_function='swish' is not supported"),
    ({"n_head": 3}, "not divisible by n_heads=3"),
    ({"n_layer": "two"}, "'n_layer' must be a whole number, got 'two'"),
])
def test_unsupported_or_invalid_configs_name_the_problem(tmp_path, change, message):
    gpt2_folder(tmp_path)
    _edit_config(tmp_path, **change)
    with pytest.raises(ValueError, match=message):
        load_pretrained(tmp_path)


def test_budget_is_checked_before_the_weights_are_read(tmp_path):
    gpt2_folder(tmp_path)
    _edit_config(tmp_path, n_layer=48, n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024)  # GPT-2 XL
    (tmp_path / "model.safetensors").write_bytes(b"not read")  # reading it would fail differently
    with pytest.raises(ValueError, match=r"1,557,611,200 parameters; the limit here is 200,000,000"):
        load_pretrained(tmp_path, max_params=200_000_000)
    with pytest.raises(ValueError, match=r"needs 5,942 MB of memory; the limit here is 1,024 MB"):
        load_pretrained(tmp_path, max_bytes=2**30)


def test_small_models_pass_the_budget(tmp_path):
    hf = vit_folder(tmp_path)
    assert load_pretrained(tmp_path, max_params=hf.num_parameters(), max_bytes=4 * hf.num_parameters()).model


def test_truncated_weights_are_refused(tmp_path):
    gpt2_folder(tmp_path)
    path = tmp_path / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="model.safetensors is truncated"):
        load_pretrained(tmp_path)


def test_damaged_header_is_refused(tmp_path):
    gpt2_folder(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="not a safetensors file"):
        load_pretrained(tmp_path)


def test_shapes_that_do_not_fit_the_config_are_refused(tmp_path):
    bert_folder(tmp_path, positions=24)
    _edit_config(tmp_path, max_position_embeddings=32)
    with pytest.raises(ValueError, match=r"wrong shapes: bert.embeddings.position_embeddings.weight \(24, 16\) "
                                         r"\(config.json implies \(32, 16\)\)"):
        load_pretrained(tmp_path)


def test_missing_tensors_are_named(tmp_path):
    vit_folder(tmp_path)
    path = tmp_path / "model.safetensors"
    tensors = load_file(path)
    del tensors["vit.encoder.layer.1.output.dense.weight"]
    save_file(tensors, path)
    with pytest.raises(ValueError, match="lacks tensors this model needs: vit.encoder.layer.1.output.dense.weight"):
        load_pretrained(tmp_path)


def test_tokenizer_of_another_model_is_refused(tmp_path):
    gpt2 = tmp_path / "gpt2"
    gpt2_folder(gpt2, vocab=40)
    bert_folder(tmp_path)  # a vocabulary of 23
    (tmp_path / "tokenizer.json").write_text((gpt2 / "tokenizer.json").read_text())
    with pytest.raises(ValueError, match=r"tokenizer knows \d\d tokens but the model only 23"):
        load_pretrained(tmp_path)


def test_text_models_need_their_tokenizer(tmp_path):
    bert_folder(tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="no tokenizer.json"):
        load_pretrained(tmp_path)


@pytest.mark.parametrize("content, message", [(None, "has no config.json"), ("{oops", "not a readable JSON"),
                                              ("[1, 2]", "must hold a JSON object")])
def test_missing_or_broken_config(tmp_path, content, message):
    (tmp_path / "model.safetensors").write_bytes(b"")
    if content is not None:
        (tmp_path / "config.json").write_text(content)
    with pytest.raises(ValueError, match=message):
        inspect_folder(tmp_path)


def test_hub_ids_fail_clearly_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(HubError, match=r"not in the local cache.*python -m transformer_core.pretrained download "
                                       r"someone/tiny-gpt2 --to models/"):
        load_pretrained("someone/tiny-gpt2")


def test_sources_that_are_neither_folders_nor_ids(tmp_path):
    with pytest.raises(ValueError, match="neither a model folder nor a Hugging Face model id"):
        load_pretrained(str(tmp_path / "missing" / "../x y"))


def test_a_forged_layer_count_is_refused_before_the_weight_map_is_made(tmp_path):
    gpt2_folder(tmp_path, layers=2)
    _edit_config(tmp_path, n_layer=10**9)
    with pytest.raises(ValueError, match=r"describes 1,000,000,000 layers, but the weights file holds only 28 "):
        inspect_folder(tmp_path)
    with pytest.raises(ValueError, match="1,000,000,000 layers"):
        load_pretrained(tmp_path)


def test_a_header_with_too_many_tensors_is_refused(tmp_path):
    import torch

    gpt2_folder(tmp_path)
    save_file({f"t{i}": torch.zeros(1) for i in range(20_001)}, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match="describes 20,001 tensors; supported models have at most 20,000"):
        inspect_folder(tmp_path)
