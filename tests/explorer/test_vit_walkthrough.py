"""The ViT walk-through keeps the same numbers the model computes, checked against independent references."""

from __future__ import annotations

import torch

from explorer.lab.vit_walkthrough import attention_scores, random_vit, valid_patch_sizes, walk_through
from transformer_core import VisionTransformer, ViTConfig, attention_rollout, patchify
from transformer_core.vit import conv_patch_embedding

CONFIG = ViTConfig(image_size=16, patch_size=4, d_model=32, n_heads=4, n_layers=2, d_ff=64)


def image() -> torch.Tensor:
    return torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(0))


def test_valid_patch_sizes():
    assert valid_patch_sizes(64) == [4, 8, 16, 32]
    assert valid_patch_sizes(224) == [14, 16, 28, 32, 56, 112]
    assert all(4 <= (96 // p) ** 2 <= 400 and 96 % p == 0 for p in valid_patch_sizes(96))


def test_attention_scores():
    assert attention_scores(196) == 197**2
    assert attention_scores(196, with_cls=False) == 196**2


def test_random_vit_is_reproducible_and_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    before = torch.get_rng_state()
    a, b = random_vit(CONFIG, seed=3), random_vit(CONFIG, seed=3)
    assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(random_vit(CONFIG, seed=4).pos_embed, a.pos_embed)
    assert not a.training


def test_walkthrough_matches_the_model():
    model = random_vit(CONFIG, seed=0)
    x = image()
    walk = walk_through(model, x)
    batch = x[None]
    assert walk.grid_size == 4 and walk.num_layers == 2 and walk.num_heads == 4
    torch.testing.assert_close(walk.patches, patchify(batch, 4)[0])
    torch.testing.assert_close(walk.patch_tokens, conv_patch_embedding(batch, model.patch_embed)[0].detach())
    torch.testing.assert_close(walk.embedded[0], model.cls_token[0, 0].detach())
    torch.testing.assert_close(walk.tokens, walk.embedded + walk.positions)
    with torch.no_grad():
        logits, att = model.forward_with_attention(batch)
    torch.testing.assert_close(walk.logits, logits[0])
    for mine, ref in zip(walk.attention, att["encoder"], strict=True):
        torch.testing.assert_close(mine, ref[0])
        torch.testing.assert_close(mine.sum(-1), torch.ones(4, 17))
    torch.testing.assert_close(walk.rollout, attention_rollout(att["encoder"])[0])


def test_cls_maps():
    walk = walk_through(random_vit(CONFIG, seed=1), image())
    att = walk.attention[1]
    torch.testing.assert_close(walk.cls_attention(1, 2), att[2, 0, 1:].reshape(4, 4))
    torch.testing.assert_close(walk.cls_attention(1), att[:, 0, 1:].mean(0).reshape(4, 4))
    total = walk.cls_attention(1, 2).sum() + walk.cls_self_attention(1, 2)
    torch.testing.assert_close(total, torch.tensor(1.0))
    torch.testing.assert_close(walk.cls_rollout(), walk.rollout[0, 1:].reshape(4, 4))


def test_preprocess_and_training_mode():
    model = VisionTransformer(CONFIG).train()
    x = image()
    walk = walk_through(model, x, preprocess=lambda t: (t - 0.5) / 0.5)
    assert model.training  # restored
    torch.testing.assert_close(walk.patches, patchify(x[None], 4)[0])  # pixels, not the model's input
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(walk.logits, model(((x - 0.5) / 0.5)[None])[0])
