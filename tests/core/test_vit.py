"""Vision Transformer pieces: patch order, the patch embedding as a convolution, attention rollout."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_core import PatchEmbedding, VisionTransformer, ViTConfig, attention_rollout, patchify, unpatchify
from transformer_core.vit import conv_patch_embedding


def test_patchify_round_trip_square_and_rectangular():
    images = torch.randn(2, 3, 8, 12)
    patches = patchify(images, 4)
    assert patches.shape == (2, 6, 3 * 4 * 4)
    torch.testing.assert_close(unpatchify(patches, 4, (8, 12), channels=3), images, rtol=0, atol=0)
    square = torch.randn(1, 1, 6, 6)
    torch.testing.assert_close(unpatchify(patchify(square, 3), 3, 6, channels=1), square, rtol=0, atol=0)


def test_patchify_is_row_major_and_channel_major_inside_a_patch():
    c, h, w, p = 2, 4, 6, 2
    image = torch.zeros(1, c, h, w)
    for ch in range(c):
        for y in range(h):
            for x in range(w):
                image[0, ch, y, x] = 100 * ch + 10 * y + x  # each pixel's value spells its coordinates
    patches = patchify(image, p)
    grid_w = w // p
    for n in range(patches.size(1)):
        row, col = divmod(n, grid_w)  # left to right, then top to bottom
        for ch in range(c):
            for i in range(p):
                for j in range(p):
                    expected = 100 * ch + 10 * (row * p + i) + (col * p + j)
                    assert patches[0, n, ch * p * p + i * p + j] == expected
    assert patches[0, 1, 0] == 2  # the second patch starts at x = 2 on the top row
    assert patches[0, 3, 0] == 20  # the fourth starts the second row of patches


def test_linear_patch_embedding_equals_a_strided_convolution():
    torch.manual_seed(0)
    embed = PatchEmbedding(patch_size=4, in_channels=3, d_model=10)
    conv = nn.Conv2d(3, 10, kernel_size=4, stride=4)
    with torch.no_grad():
        conv.weight.copy_(embed.as_conv_weight())
        conv.bias.copy_(embed.proj.bias)
    images = torch.randn(2, 3, 12, 8)
    expected = conv(images).flatten(2).transpose(1, 2)  # NCHW -> NLC
    torch.testing.assert_close(embed(images), expected)
    torch.testing.assert_close(conv_patch_embedding(images, embed), expected)


def test_sizes_that_do_not_divide_are_rejected():
    with pytest.raises(ValueError, match="cannot be cut into 5x5 patches"):
        patchify(torch.randn(1, 3, 32, 32), 5)
    with pytest.raises(ValueError, match="cannot be cut"):
        patchify(torch.randn(1, 3, 8, 10), 4)
    with pytest.raises(ValueError, match="do not make"):
        unpatchify(torch.randn(1, 4, 48), 4, 8, channels=2)
    model = VisionTransformer(ViTConfig(image_size=16, patch_size=8, n_layers=1))
    with pytest.raises(ValueError, match=r"Expected images of shape \(B, 3, 16, 16\)"):
        model(torch.randn(1, 3, 32, 32))


def _random_attention(batch: int, heads: int, n: int) -> torch.Tensor:
    return torch.rand(batch, heads, n, n).softmax(dim=-1)


def test_rollout_rows_sum_to_one():
    torch.manual_seed(0)
    layers = [_random_attention(2, 3, 5) for _ in range(4)]
    for fusion in ("mean", "max", "min"):
        for residual in (True, False):
            rollout = attention_rollout(layers, head_fusion=fusion, add_residual=residual)
            assert rollout.shape == (2, 5, 5)
            torch.testing.assert_close(rollout.sum(-1), torch.ones(2, 5))


def test_rollout_of_identity_attention_is_identity():
    eye = torch.eye(6).expand(1, 2, 6, 6)
    torch.testing.assert_close(attention_rollout([eye, eye, eye]), torch.eye(6).expand(1, 6, 6))


def test_rollout_of_one_layer_is_the_normalised_mix_with_the_residual():
    torch.manual_seed(0)
    a = _random_attention(1, 4, 5)
    mean = a.mean(dim=1)
    mix = 0.5 * mean + 0.5 * torch.eye(5)
    torch.testing.assert_close(attention_rollout([a]), mix / mix.sum(-1, keepdim=True))
    torch.testing.assert_close(attention_rollout([a], add_residual=False), mean)
    b = _random_attention(1, 4, 5)
    torch.testing.assert_close(attention_rollout([a, b], add_residual=False), b.mean(1) @ a.mean(1))
    fused_max = a.amax(dim=1)
    torch.testing.assert_close(attention_rollout([a], "max", False), fused_max / fused_max.sum(-1, keepdim=True))


def test_rollout_errors():
    with pytest.raises(ValueError, match="at least one layer"):
        attention_rollout([])
    with pytest.raises(ValueError, match="head_fusion='median'"):
        attention_rollout([_random_attention(1, 1, 3)], head_fusion="median")


def test_vit_attention_maps_cover_cls_and_patches():
    torch.manual_seed(0)
    config = ViTConfig(image_size=16, patch_size=4, d_model=16, n_heads=2, n_layers=2, d_ff=32, num_classes=3)
    model = VisionTransformer(config).eval()
    images = torch.randn(2, 3, 16, 16)
    logits, attention = model.forward_with_attention(images)
    assert logits.shape == (2, 3) and list(attention) == ["encoder"]
    assert [a.shape for a in attention["encoder"]] == [(2, 2, 17, 17)] * 2
    torch.testing.assert_close(model(images), logits)
    tokens = model.tokens(images)
    torch.testing.assert_close(tokens[:, 0], (model.cls_token[0, 0] + model.pos_embed[0, 0]).expand(2, 16))
    torch.testing.assert_close(tokens[:, 1:], model.patch_embed(images) + model.pos_embed[:, 1:])
    rollout = attention_rollout(attention["encoder"])
    torch.testing.assert_close(rollout.sum(-1), torch.ones(2, 17))
