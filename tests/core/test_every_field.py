"""Every text model honours every TransformerConfig field or refuses it: no setting is silently ignored."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
import torch
from torch import nn

from transformer_core.bert import BertEncoder
from transformer_core.config import TransformerConfig
from transformer_core.models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from transformer_core.norms import RMSNorm
from transformer_core.positional import RopeScaling

BASE = TransformerConfig(vocab_size=16, max_len=8, d_model=16, n_heads=4, n_layers=2, d_ff=32)
ROPE = replace(BASE, positional="rope")
# One other value per field; rope_scaling is compared on a rotary model (it needs positional="rope").
OTHER = dict(vocab_size=24, max_len=6, d_model=24, n_heads=2, n_layers=1, n_decoder_layers=1, d_ff=40, dropout=0.5,
             norm_position="post", norm_type="rmsnorm", positional="learned", activation="gelu", bias=False,
             pad_id=0, tie_weights=True, pos_base=100.0, layer_norm_eps=0.5, embed_scale=False,
             feed_forward="swiglu", n_kv_heads=2, qkv_bias=False, rope_scaling=RopeScaling("linear", factor=4.0))
TOKENS = torch.tensor([[3, 1, 4, 1, 5, 9, 0]])  # 7 tokens, the last one the padding id of pad_id=0
MODELS = {
    "seq2seq": (Seq2SeqTransformer, lambda m: m(TOKENS, TOKENS)),
    "decoder": (CausalLM, lambda m: m(TOKENS)),
    "regressor": (SequenceRegressor, lambda m: m(TOKENS)),
    "bert": (BertEncoder, lambda m: m(TOKENS)),
}
# A decoder-only model reads padding from `valid` (its tasks pad after the text, where causal attention cannot look
# back from the real tokens); pad_id serves their loss. The regressor and BERT read it from the tokens.
EXEMPT = {("decoder", "pad_id")}


def _output(model: nn.Module, run) -> torch.Tensor | None:
    torch.manual_seed(1)  # the same dropout draws for both models
    try:
        return run(model.train())
    except ValueError:  # e.g. a sequence longer than max_len
        return None


def _honoured(cls, run, base: TransformerConfig, name: str) -> bool:
    try:
        variant_config = replace(base, **{name: OTHER[name]})
        torch.manual_seed(0)
        variant = cls(variant_config)
    except ValueError:
        return True  # refused with a message
    torch.manual_seed(0)
    model = cls(base)
    a, b = model.state_dict(), variant.state_dict()
    if a.keys() != b.keys() or any(a[k].shape != b[k].shape for k in a):
        return True
    variant.load_state_dict(a)
    out, other = _output(model, run), _output(variant, run)
    return other is None or out.shape != other.shape or not torch.allclose(out, other)


@pytest.mark.parametrize("kind", MODELS)
def test_each_field_changes_the_model_or_is_refused(kind):
    cls, run = MODELS[kind]
    assert set(OTHER) == {f.name for f in fields(TransformerConfig)}
    ignored = [name for name in OTHER if (kind, name) not in EXEMPT
               and not _honoured(cls, run, ROPE if name == "rope_scaling" else BASE, name)]
    assert not ignored, f"{cls.__name__} ignores {ignored}"


def test_bert_asked_for_rmsnorm_has_no_layernorm_left():
    bert = BertEncoder(replace(BASE, norm_type="rmsnorm", norm_position="post", positional="learned"))
    kinds = {type(m) for m in bert.modules() if isinstance(m, (nn.LayerNorm, RMSNorm))}
    assert kinds == {RMSNorm}
