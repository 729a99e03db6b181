"""RoBERTa (Liu et al. 2019) on transformer_core: BERT's encoder, trained without segments and with a byte-level
BPE tokenizer, and positions that start after the padding id.

transformers numbers a RoBERTa's positions from ``padding_idx + 1`` (position ``padding_idx`` is the padding's
own), so a text's first token reads row ``padding_idx + 1`` of the stored table. The loader keeps the rows from
there on as the model's position table: position 0 of our model is that row, and the model reads
``max_position_embeddings - padding_idx - 1`` tokens (514 - 2 = 512 for ``roberta-base``), as transformers does.
"""

from __future__ import annotations

from typing import Any

from .bert import build, encoder_config, encoder_spec, sources, ties
from .families import Family, ModelSpec, setting


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The RoBERTa described by ``config.json``; ``RobertaModel`` means no masked-LM head."""
    pad = setting(raw, "pad_token_id", int, 1)
    stored = setting(raw, "max_position_embeddings", int)
    if pad < 0 or stored <= pad + 1:
        raise ValueError(f"max_position_embeddings={stored} leaves no positions after padding_idx={pad}.")
    if setting(raw, "hidden_act", str, "gelu") != "gelu":
        raise ValueError("RoBERTa's masked-LM head always uses GELU; only hidden_act='gelu' is supported.")
    config = encoder_config(raw, max_len=stored - pad - 1, eps=1e-5)
    segments = setting(raw, "type_vocab_size", int, 1)
    if segments <= 0:
        raise ValueError(f"config.json's type_vocab_size={segments} must be positive.")
    return encoder_spec("roberta", config, architecture, segments, base_model="RobertaModel",
                        position_offset=pad + 1)


FAMILY = Family("roberta", ("roberta",), ("RobertaForMaskedLM", "RobertaModel"), read, build, sources, ties)
