"""The weight-file layouts published checkpoints really have, written from one random model per family.

transformers (the test oracle) builds each model and saves it as today's ``save_pretrained`` does; the other
layouts rewrite that file the way older transformers versions and converters wrote theirs (see
/work/shared/facts.md): keys without the base model's prefix, LayerNorm ``gamma``/``beta``, int64 ``position_ids``
and ``token_type_ids`` buffers, GPT-2's causal mask ``attn.bias`` as F32, U8 or BOOL beside ``attn.masked_bias``,
F16 and BF16 weights, tied weights stored twice, two shards with an index, and a single file beside its shards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

WIDTH, HEADS, LAYERS, FF, VOCAB, POSITIONS = 16, 2, 2, 32, 48, 24
EAGER = {"attn_implementation": "eager"}  # transformers returns attention weights only from its eager path

# family -> (model class, config, base-model prefix in task-model files, tied copy -> the tensor it copies)
FAMILIES = {
    "gpt2": (transformers.GPT2LMHeadModel, lambda vocab: transformers.GPT2Config(
        n_layer=LAYERS, n_head=HEADS, n_embd=WIDTH, vocab_size=vocab, n_positions=POSITIONS, **EAGER),
        "transformer.", {"lm_head.weight": "transformer.wte.weight"}),
    "bert": (transformers.BertForMaskedLM, lambda vocab: transformers.BertConfig(
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, hidden_size=WIDTH, intermediate_size=FF,
        vocab_size=vocab, max_position_embeddings=POSITIONS, **EAGER),
        "bert.", {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                  "cls.predictions.decoder.bias": "cls.predictions.bias"}),
    "bert-model": (transformers.BertModel, lambda vocab: transformers.BertConfig(
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, hidden_size=WIDTH, intermediate_size=FF,
        vocab_size=vocab, max_position_embeddings=POSITIONS, **EAGER), "", {}),
    "distilbert": (transformers.DistilBertForMaskedLM, lambda vocab: transformers.DistilBertConfig(
        n_layers=LAYERS, n_heads=HEADS, dim=WIDTH, hidden_dim=FF, vocab_size=vocab,
        max_position_embeddings=POSITIONS, **EAGER),
        "distilbert.", {"vocab_projector.weight": "distilbert.embeddings.word_embeddings.weight"}),
    "roberta": (transformers.RobertaForMaskedLM, lambda vocab: transformers.RobertaConfig(
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, hidden_size=WIDTH, intermediate_size=FF,
        vocab_size=vocab, max_position_embeddings=POSITIONS + 2, **EAGER),
        "roberta.", {"lm_head.decoder.weight": "roberta.embeddings.word_embeddings.weight",
                     "lm_head.decoder.bias": "lm_head.bias"}),
}
LAYOUTS = ("today", "no-prefix", "gamma-beta", "int-buffers", "mask-f32", "mask-u8", "mask-bool", "f16", "bf16",
           "tied-twice", "shards", "single-and-shards")
ENCODERS = ("bert", "bert-model", "distilbert", "roberta")


def applies(family: str, layout: str) -> bool:
    """Whether real files of ``family`` come in ``layout`` (GPT-2 has no gamma/beta; the mask is GPT-2's)."""
    _, _, prefix, tied = FAMILIES[family]
    return {"gamma-beta": family in ENCODERS, "no-prefix": bool(prefix), "tied-twice": bool(tied)}.get(
        layout, family == "gpt2" if layout.startswith("mask-") else True)


def write_layout(family: str, layout: str, folder: Path, *, seed: int = 0, vocab: int = VOCAB):
    """Save a random ``family`` model of ``vocab`` tokens into ``folder`` in ``layout``; returns the transformers
    model to compare with (its weights rounded as the file stores them)."""
    cls, config, prefix, tied = FAMILIES[family]
    torch.manual_seed(seed)
    model = cls(config(vocab)).eval()
    model.save_pretrained(folder)
    path = folder / "model.safetensors"
    tensors = load_file(path)
    if layout in ("f16", "bf16"):
        dtype = torch.float16 if layout == "f16" else torch.bfloat16
        tensors = {k: v.to(dtype) for k, v in tensors.items()}
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(dtype).float())
    elif layout == "tied-twice":
        tensors.update({copy: tensors[main].clone() for copy, main in tied.items()})
    elif layout == "no-prefix":
        tensors = {k.removeprefix(prefix): v for k, v in tensors.items()}
    elif layout == "gamma-beta":
        tensors = {_gamma_beta(k): v for k, v in tensors.items()}
    elif layout == "int-buffers" and family in ENCODERS:
        positions = model.config.max_position_embeddings
        tensors[f"{prefix}embeddings.position_ids"] = torch.arange(positions).unsqueeze(0)
        if family != "distilbert":
            tensors[f"{prefix}embeddings.token_type_ids"] = torch.zeros(1, positions, dtype=torch.long)
    elif layout == "int-buffers" or layout.startswith("mask-"):
        kind = {"mask-u8": torch.uint8, "mask-bool": torch.bool}.get(layout, torch.float32)
        causal = torch.tril(torch.ones(POSITIONS, POSITIONS)).view(1, 1, POSITIONS, POSITIONS).to(kind)
        for i in range(LAYERS):
            tensors[f"{prefix}h.{i}.attn.bias"] = causal.clone()
            tensors[f"{prefix}h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    if layout in ("shards", "single-and-shards"):
        write_shards(folder, tensors)
        if layout == "shards":
            path.unlink()
    else:
        save_file(tensors, path, metadata={"format": "pt"})
    return model


def _gamma_beta(name: str) -> str:
    if "LayerNorm" not in name and "layer_norm" not in name:
        return name
    return name.removesuffix(".weight") + ".gamma" if name.endswith(".weight") else name.removesuffix(".bias") + ".beta"


def write_shards(folder: Path, tensors: dict[str, torch.Tensor]) -> None:
    """``tensors`` as two shards and ``model.safetensors.index.json``, as transformers writes large models."""
    names = sorted(tensors)
    half = len(names) // 2
    weight_map = {}
    for i, part in enumerate((names[:half], names[half:]), start=1):
        file = f"model-{i:05d}-of-00002.safetensors"
        save_file({n: tensors[n].contiguous() for n in part}, folder / file, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, file))
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
