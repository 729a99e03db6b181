"""The explorer tests use tiny models: one intra-op thread is as fast, and much faster on a busy machine.

The fixtures ``gpt2`` and ``bert`` are small random-initialised pretrained folders: ``(transformers model,
loaded model)``."""

from __future__ import annotations

import pytest
import torch

from transformer_core.pretrained import load_pretrained

torch.set_num_threads(1)


@pytest.fixture(scope="module", name="gpt2")
def gpt2_fixture(tmp_path_factory):
    from tests.pretrained.hf_folders import gpt2_folder  # imports transformers: only for the tests that need it

    folder = tmp_path_factory.mktemp("gpt2")
    return gpt2_folder(folder, layers=2, heads=4, width=16), load_pretrained(folder)


@pytest.fixture(scope="module", name="bert")
def bert_fixture(tmp_path_factory):
    from tests.pretrained.hf_folders import bert_folder, mark_special_tokens

    folder = tmp_path_factory.mktemp("bert")
    hf = bert_folder(folder, layers=2, heads=2)
    mark_special_tokens(folder)
    return hf, load_pretrained(folder)
