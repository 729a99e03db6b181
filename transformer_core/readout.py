"""How each model family is run for the interpretability methods (:mod:`.attribution`, :mod:`.patching`,
:mod:`.neurons`): its input, the probe points where its input rows enter, its blocks, and the output a method reads.

A :class:`Readout` holds one input (a text's token ids, an encoder–decoder's ``(source, target)`` pair or a ViT's
image) checked against the model, and runs it as a batch of identical copies, so that a method can patch or scale
each copy differently through :mod:`.probes` and read every copy's output at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import torch
from torch import nn

from .bert import BertEncoder
from .models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from .probes import Point, probing
from .vit import VisionTransformer

Ids = torch.Tensor | Sequence[int]  # one text: token ids (T,) or (1, T)


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def token_ids(ids: Ids, model: nn.Module, *, what: str = "text", reserved: int = 0) -> torch.Tensor:
    """``ids`` as a 1-D long tensor on the model's device, checked against its vocabulary and length."""
    t = torch.as_tensor(ids, dtype=torch.long)
    if t.dim() == 2 and t.size(0) == 1:
        t = t[0]
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"The {what} must be one non-empty sequence of token ids, shape (T,); got "
                         f"{tuple(t.shape)}.")
    config = model.config
    if t.numel() + reserved > config.max_len:
        raise ValueError(f"The {what} has {t.numel()} tokens; the model reads at most {config.max_len - reserved}.")
    if int(t.min()) < 0 or int(t.max()) >= config.vocab_size:
        raise ValueError(f"Token ids must lie in 0..{config.vocab_size - 1}.")
    return t.to(_device(model))


@dataclass(frozen=True)
class Readout:
    """One input of ``model``, ready to run as a batch of copies."""

    model: nn.Module
    inputs: tuple[torch.Tensor, ...]  # the forward's positional inputs, batch 1: (1, T) ids each, or (1, C, H, W)
    points: tuple[Point, ...]  # where the rows a method scales enter: one per input stream
    rows: tuple[torch.Tensor, ...]  # the input rows at those points, (N, C) each, detached
    per_position: bool  # whether the output has a position axis (text logits) or one vector (ViT, regressor)

    @property
    def lengths(self) -> tuple[int, ...]:
        """Tokens (or patches) per input stream."""
        return tuple(r.size(0) for r in self.rows)

    def check_position(self, position: int) -> int:
        """``position`` (negative counts from the end) as an index of the output, checked."""
        if not self.per_position:
            return 0
        n = self.inputs[-1].size(1)
        if isinstance(position, bool) or not isinstance(position, Integral) or not -n <= position < n:
            raise ValueError(f"position={position!r} must be a token index from {-n} to {n - 1}.")
        return int(position) % n

    def outputs(self, batch: int, position: int) -> torch.Tensor:
        """Run ``batch`` copies of the input (probes set in this context act on them): outputs ``(B, V)``.

        A text model's last block hands only ``position`` on to the final norm and the head (both act on each
        position alone), so a large vocabulary is projected once per copy, not once per token.
        """
        inputs = [x.expand(batch, *x.shape[1:]) for x in self.inputs]
        if not self.per_position:
            return self.model(*inputs)  # (B, V)
        p = self.check_position(position)
        with probing({(self.last_block, "resid_post"): lambda x: x[:, p:p + 1]}):  # (B, 1, C)
            return self.model(*inputs)[:, 0]  # (B, V)

    @property
    def last_block(self) -> nn.Module:
        """The block whose output the final norm and the head read."""
        model = self.model
        return (model.decoder if isinstance(model, Seq2SeqTransformer) else model.blocks)[-1]


def readout(model: nn.Module, ids) -> Readout:
    """The :class:`Readout` of ``ids`` for ``model``: token ids for the text models, ``(source, target)`` ids for
    the encoder–decoder, an image ``(C, H, W)`` or ``(1, C, H, W)`` for a ViT.

    Raises:
        ValueError: for a model that is not one of this package's transformers or an input it cannot read.
    """
    if isinstance(model, VisionTransformer):
        return _vit(model, ids)
    if isinstance(model, Seq2SeqTransformer):
        if not isinstance(ids, tuple | list) or len(ids) != 2:
            raise ValueError("The encoder–decoder reads a pair (source ids, target ids).")
        src = token_ids(ids[0], model, what="source")
        tgt = token_ids(ids[1], model, what="target")
        embeds = (model.src_embed, model.tgt_embed)
        return Readout(model, (src[None], tgt[None]), tuple((e, "tokens") for e in embeds),
                       (_rows(model.src_embed, src), _rows(model.tgt_embed, tgt)), True)
    if isinstance(model, CausalLM | BertEncoder | SequenceRegressor):
        cls = isinstance(model, SequenceRegressor) and model.pool == "cls"
        t = token_ids(ids, model, reserved=int(cls))
        return Readout(model, (t[None],), ((model.embed, "tokens"),), (_rows(model.embed, t),),
                       not isinstance(model, SequenceRegressor))
    raise ValueError(f"{type(model).__name__} is not a transformer of this package.")


def _rows(embed: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    return embed.tokens.weight[ids].detach()  # (T, C): the table's rows, unscaled


def _vit(model: VisionTransformer, image) -> Readout:
    x = torch.as_tensor(image, dtype=model.pos_embed.dtype)
    if x.dim() == 3:
        x = x[None]
    c, size = model.config.in_channels, model.config.image_size
    if x.shape != (1, c, size, size):
        raise ValueError(f"The ViT reads one image of shape ({c}, {size}, {size}); got {tuple(x.shape)}.")
    x = x.to(_device(model))
    with torch.no_grad():
        patches = model.patch_embed(x)[0]  # (N, C)
    return Readout(model, (x,), ((model, "patches"),), (patches,), False)


STACKS = ("encoder", "decoder", "cross")  # the encoder–decoder's stacks, as its attention dict names them


def blocks(model: nn.Module, method: str, stack: str | None = None) -> list[nn.Module]:
    """The blocks of one residual stream of ``model``, first to last.

    Args:
        stack: the encoder–decoder's ``"encoder"`` (the source stream), ``"decoder"`` or ``"cross"`` (the target
            stream's blocks, for their self- or cross-attention); None for every other model, which has one.

    Raises:
        ValueError: for a missing or unknown stack, or a model that is not one of this package's transformers.
    """
    if isinstance(model, Seq2SeqTransformer):
        if stack not in STACKS:
            raise ValueError(f"{method} of the encoder–decoder needs stack='encoder' (the source stream) or "
                             f"'decoder' (the target stream); got {stack!r}.")
        return list(model.encoder if stack == "encoder" else model.decoder)
    if isinstance(model, CausalLM | BertEncoder | SequenceRegressor | VisionTransformer):
        if stack is not None:
            raise ValueError(f"{type(model).__name__} has one stack of blocks; leave stack out (got {stack!r}).")
        return list(model.blocks)
    raise ValueError(f"{type(model).__name__} is not a transformer of this package.")
