"""The MLP half of every block: what each neuron of each feed-forward network computes for each token.

A neuron's activation is one entry of the input of the MLP's down projection: ``activation(x · W_in + b_in)``
(GELU for GPT-2, BERT and ViT, ReLU for the 2017 Transformer) or, in SwiGLU (Llama, Qwen2), the gated product
``SiLU(x · W_gate) · (x · W_up)``. It is read at a context-local probe point (:mod:`.probes`).
"""

from __future__ import annotations

import torch
from torch import nn

from .probes import probing, recorder
from .readout import blocks, readout

__all__ = ["neuron_activations"]


def neuron_activations(model: nn.Module, ids, *, stack: str | None = None) -> torch.Tensor:
    """Every neuron of every MLP on every position of one input.

    Args:
        model: a decoder-only, encoder-only (BERT, regressor) or vision model of this package; not modified.
        ids: the text's token ids ``(T,)``, a ViT's image ``(C, H, W)``, the encoder–decoder's ``(source, target)``.
        stack: the encoder–decoder's ``"encoder"`` or ``"decoder"``; None for other models.

    Returns:
        ``(L, T, d_ff)`` float tensor on the model's device, detached; T counts the stream's positions (a ViT's
        CLS token first, then the patches).

    Raises:
        ValueError: for a missing or unknown stack, or an input the model cannot read.
    """
    layers = blocks(model, "Reading the neurons", stack)
    run = readout(model, ids)
    store: dict = {}
    with torch.no_grad(), probing({(b.ff, "hidden"): recorder(store, i) for i, b in enumerate(layers)}):
        run.outputs(1, -1 if run.per_position else 0)
    return torch.stack([store[i][0] for i in range(len(layers))])  # (L, T, d_ff)
