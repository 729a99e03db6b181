"""Random-initialised Llama-family models saved as model folders for the app's page tests (transformers is the
test oracle only; nothing downloads)."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402

from tests.pretrained.hf_folders import _bpe_tokenizer  # noqa: E402


def llama_folder(path: Path, *, layers: int = 2, heads: int = 6, kv_heads: int = 2, width: int = 48,
                 ff: int = 64, vocab: int = 40, positions: int = 64, tied: bool = True, seed: int = 0,
                 qwen: bool = False):
    """A random LlamaForCausalLM (or Qwen2ForCausalLM, with its Q/K/V biases) saved with a small byte-level BPE
    tokenizer, SmolLM2's kind; returns the HF model."""
    torch.manual_seed(seed)
    config_class, model_class = ((transformers.Qwen2Config, transformers.Qwen2ForCausalLM) if qwen
                                 else (transformers.LlamaConfig, transformers.LlamaForCausalLM))
    config = config_class(vocab_size=vocab, hidden_size=width, intermediate_size=ff, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=positions,
                          tie_word_embeddings=tied, bos_token_id=0, eos_token_id=0, rope_theta=10000.0,
                          attn_implementation="eager")
    model = model_class(config).eval()
    model.save_pretrained(path)
    _bpe_tokenizer(vocab).save(str(path / "tokenizer.json"))
    return model
