"""The one hook through which :mod:`.interventions` reaches inside attention: edits of the heads' outputs.

``MultiHeadAttention.forward`` passes its per-head outputs ``(B, H, T, D)`` (before the heads are concatenated and
mixed by W_O) through :func:`edit_heads`; it changes nothing unless ``interventions.ablate_heads`` (or
``head_means``) has set an edit for that module in :data:`HEAD_EDITS`. A context variable, not a hook registered
on the module: each thread (each browser session) sees only its own edits of a shared model, and nothing is stored
on the model. The hook sits in its own module because ``interventions.py`` finds the heads through the model
families, which import attention.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar

import torch
from torch import nn

HeadEdit = Callable[[torch.Tensor], torch.Tensor]  # per-head outputs (B, H, T, D) -> the same, edited
# The edits of the current context: attention module -> its edit; None when no intervention is active.
HEAD_EDITS: ContextVar[Mapping[nn.Module, HeadEdit] | None] = ContextVar("head_edits", default=None)


def edit_heads(module: nn.Module, out: torch.Tensor) -> torch.Tensor:
    """``out`` ``(B, H, T, D)`` of attention ``module``, edited when an intervention in this context asks for it."""
    edits = HEAD_EDITS.get()
    if edits is None or module not in edits:
        return out
    return edits[module](out)
