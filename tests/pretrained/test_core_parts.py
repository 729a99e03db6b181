"""The core pieces the pretrained families added, checked against their formulas on their own."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_core.bert import BertEncoder
from transformer_core.blocks import FeedForward, activation_function
from transformer_core.config import TransformerConfig
from transformer_core.models import CausalLM


def test_gelu_tanh_is_the_formula_of_gpt2():
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    expected = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    torch.testing.assert_close(activation_function("gelu_tanh")(x), expected)
    assert not torch.allclose(activation_function("gelu")(x), expected)  # exact GELU differs slightly
    assert FeedForward(4, 8, activation="gelu_tanh").activation == "gelu_tanh"


def test_embed_scale_off_adds_raw_embeddings_and_on_keeps_the_paper():
    for scale in (True, False):
        config = TransformerConfig(vocab_size=10, d_model=16, positional="none", embed_scale=scale)
        model = CausalLM(config)
        ids = torch.tensor([[1, 2, 3]])
        factor = 4.0 if scale else 1.0  # √16
        torch.testing.assert_close(model.embed(ids), model.embed.tokens(ids) * factor)
    assert TransformerConfig().embed_scale  # existing models keep √C


def test_bert_encoder_segments_and_head_follow_their_formulas():
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=12, max_len=8, d_model=8, n_heads=2, n_layers=1, d_ff=16,
                               norm_position="post", tie_weights=True,
                               positional="learned", activation="gelu", embed_scale=False, layer_norm_eps=1e-12)
    model = BertEncoder(config, segments=3).eval()
    ids, seg = torch.tensor([[1, 5, 7]]), torch.tensor([[0, 2, 1]])
    e = model.embed
    expected = e.norm(e.tokens(ids) + e.positions.table[:3] + e.segments(seg))
    torch.testing.assert_close(e(ids, seg), expected)
    h = model.head
    hidden = torch.randn(1, 3, 8)
    logits = torch.nn.functional.layer_norm(torch.nn.functional.gelu(h.dense(hidden)), (8,), h.norm.weight,
                                            h.norm.bias, 1e-12) @ e.tokens.weight.T + h.bias
    torch.testing.assert_close(h(hidden), logits)
    assert h.decoder.weight is e.tokens.weight


def test_padding_is_hidden_from_every_query():
    config = TransformerConfig(vocab_size=12, max_len=8, d_model=8, n_heads=2, n_layers=2, d_ff=16,
                               norm_position="post",
                               positional="learned", activation="gelu", embed_scale=False)
    model = BertEncoder(config, mlm_head=False).eval()
    ids = torch.tensor([[1, 5, 7, 0]])
    valid = torch.tensor([[True, True, True, False]])
    out, att = model.forward_with_attention(ids, valid=valid)
    assert all(float(w[..., 3].detach().abs().max()) == 0.0 for w in att["encoder"])
    torch.testing.assert_close(out[:, :3], model(ids[:, :3])[:, :3])  # same as without the padding token


@pytest.mark.slow
def test_the_library_never_imports_transformers_and_fetches_lazily(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT
    from tests.pretrained.hf_folders import bert_folder

    bert_folder(tmp_path)
    code = ("import sys, transformer_core.pretrained as p\n"
            "lazy = [m for m in ('tokenizers', 'huggingface_hub', 'transformers') if m in sys.modules]\n"
            f"p.load_pretrained({str(tmp_path)!r})\n"
            "print(lazy, 'transformers' in sys.modules, 'huggingface_hub' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[] False False", done.stderr
