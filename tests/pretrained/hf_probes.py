"""transformers' models as the oracle of the interpretability methods: where each family's residual stream, head
outputs (before W_O), MLP outputs, down-projection inputs and final norm are, read and patched with PyTorch hooks.

Hooks are fine here: each test owns its transformers model, which no one else runs.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class HFParts:
    """Where a transformers model keeps the pieces the methods read, per layer."""

    layers: Callable[[nn.Module], list[nn.Module]]  # the blocks; their input is the residual stream entering them
    out_proj: Callable[[nn.Module], nn.Module]  # a block's W_O; its input is the heads' outputs, (B, T, H·D)
    mlp: Callable[[nn.Module], nn.Module]  # a block's MLP; its output is what it adds to the stream
    down: Callable[[nn.Module], nn.Module]  # a block's down projection; its input is the neurons
    final_norm: Callable[[nn.Module], nn.Module] | None = None  # the norm before the unembedding (pre-norm models)
    unembed: Callable[[nn.Module], nn.Module] | None = None  # the linear map to the logits


PARTS = {
    "gpt2": HFParts(lambda m: list(m.transformer.h), lambda b: b.attn.c_proj, lambda b: b.mlp,
                    lambda b: b.mlp.c_proj, lambda m: m.transformer.ln_f, lambda m: m.lm_head),
    "llama": HFParts(lambda m: list(m.model.layers), lambda b: b.self_attn.o_proj, lambda b: b.mlp,
                     lambda b: b.mlp.down_proj, lambda m: m.model.norm, lambda m: m.lm_head),
    "bert": HFParts(lambda m: list(m.bert.encoder.layer), lambda b: b.attention.output.dense, lambda b: b.output,
                    lambda b: b.output.dense),
    "vit": HFParts(lambda m: list(m.vit.layers), lambda b: b.attention.o_proj, lambda b: b.mlp,
                   lambda b: b.mlp.fc2, lambda m: m.vit.layernorm, lambda m: m.classifier),
}


def _first(args: tuple, kwargs: dict) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


def _replace_first(args: tuple, kwargs: dict, x: torch.Tensor):
    if args:
        return (x, *args[1:]), kwargs
    return args, {**kwargs, "hidden_states": x}


@contextmanager
def hooked(pre: dict[nn.Module, Callable] | None = None, post: dict[nn.Module, Callable] | None = None):
    """Forward pre-hooks ``fn(input) -> input or None`` and forward hooks ``fn(output)``, removed on exit."""
    handles = []

    def pre_hook(fn):
        def hook(module, args, kwargs):
            new = fn(_first(args, kwargs))
            return None if new is None else _replace_first(args, kwargs, new)
        return hook

    try:
        for module, fn in (pre or {}).items():
            handles.append(module.register_forward_pre_hook(pre_hook(fn), with_kwargs=True))
        for module, fn in (post or {}).items():
            handles.append(module.register_forward_hook(lambda mod, args, out, fn=fn: fn(out)))
        yield
    finally:
        for h in handles:
            h.remove()


def keep(store: dict, key) -> Callable[[torch.Tensor], None]:
    """A hook function that keeps a detached copy of what it sees."""
    def fn(x: torch.Tensor) -> None:
        store[key] = (x[0] if isinstance(x, tuple) else x).detach().clone()
    return fn


def check_oracle(x: torch.Tensor) -> None:
    """The oracle's numbers are real: present, finite, not all equal."""
    assert x.numel() > 1, "empty oracle"
    assert torch.isfinite(x).all(), "NaN or infinite oracle"
    assert x.double().std() > 0, "flat oracle"
