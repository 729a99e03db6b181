"""One small model of every family (the pretrained GPT-2 and BERT with random weights), a fixed input for each,
and the hand-made counterpart of an ablation: a copy whose value projection does what the ablation does."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

import torch
from torch import nn

from transformer_core.bert import BertEncoder
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.interventions import HeadRef, attention_stacks
from transformer_core.models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from transformer_core.pretrained.gpt2 import GPT2LM
from transformer_core.vit import VisionTransformer

Run = Callable[..., torch.Tensor]


def _config(**kw) -> TransformerConfig:
    base = dict(vocab_size=11, max_len=8, d_model=16, n_heads=4, n_layers=2, d_ff=32)
    return TransformerConfig(**{**base, **kw})


def _tokens(b: int, t: int, seed: int, low: int = 1) -> torch.Tensor:
    return torch.randint(low, 11, (b, t), generator=torch.Generator().manual_seed(seed))


def _seq2seq():
    src, tgt = _tokens(3, 6, 1), _tokens(3, 5, 2)
    src[0, 4:] = 0  # padding: the encoder and the cross-attention hide it
    return Seq2SeqTransformer(_config(pad_id=0)), _runner(lambda f: f(src, tgt))


def _causal_lm():
    idx = _tokens(2, 7, 3, low=0)
    return CausalLM(_config(positional="rope")), _runner(lambda f: f(idx))


def _regressor():
    tokens = _tokens(3, 6, 4)
    tokens[1, 3:] = 0
    model = SequenceRegressor(_config(pad_id=0, norm_position="post", positional="alibi"), num_outputs=2, pool="cls")
    return model, _runner(lambda f: f(tokens))


def _vit():
    images = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(5))
    config = ViTConfig(image_size=16, patch_size=4, num_classes=5, d_model=16, n_heads=4, n_layers=2, d_ff=32)
    return VisionTransformer(config), _runner(lambda f: f(images))


def _bert():
    tokens = _tokens(2, 6, 6)
    valid = torch.ones(2, 6, dtype=torch.bool)
    valid[1, 4:] = False
    config = _config(norm_position="post", positional="learned", activation="gelu", embed_scale=False, tie_weights=True)
    return BertEncoder(config), _runner(lambda f: f(tokens, valid=valid))


def _gpt2():
    idx = _tokens(2, 7, 7, low=0)
    config = _config(positional="learned", activation="gelu_tanh", tie_weights=True, embed_scale=False)
    return GPT2LM(config), _runner(lambda f: f(idx))


_BUILDERS = {"seq2seq": _seq2seq, "causal_lm": _causal_lm, "regressor": _regressor, "vit": _vit, "bert": _bert,
             "gpt2": _gpt2}
MODELS = tuple(_BUILDERS)


def _runner(call):
    """``run(model)``: the model's output; ``run(model, with_attention=True)``: its ``forward_with_attention``."""
    return lambda m, with_attention=False: call(m.forward_with_attention if with_attention else m)


def build(name: str) -> tuple[nn.Module, Run]:
    """A seeded model of family ``name`` in eval mode and ``run(model, **kw)`` on its fixed input."""
    torch.manual_seed(0)
    model, run = _BUILDERS[name]()
    return model.eval(), run


def value_edited(model: nn.Module, heads: Mapping[HeadRef, torch.Tensor | None]) -> nn.Module:
    """A copy of ``model`` whose listed heads read constant values: their value rows are zeroed and their value
    bias is the given vector (zeros for ``None``), so each head outputs that vector at every position."""
    edited = copy.deepcopy(model)
    stacks = attention_stacks(edited)
    with torch.no_grad():
        for (stack, layer, head), mean in heads.items():
            attn = stacks[stack][layer]
            rows = slice(head * attn.head_dim, (head + 1) * attn.head_dim)
            attn.v_proj.weight[rows] = 0.0
            attn.v_proj.bias[rows] = 0.0 if mean is None else mean
    return edited
