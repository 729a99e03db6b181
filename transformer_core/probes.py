"""Context-local probe points inside the models: read or replace a tensor where the model computes it.

The models pass a few intermediate tensors through :func:`probe` (each a named point of one module):

- ``"tokens"`` on a text embedding (``TextEmbedding``, ``SegmentEmbedding``): the rows of the token-embedding table
  the text looks up, ``(B, T, C)``, before positions are added or anything is scaled;
- ``"patches"`` on a ``VisionTransformer``: the patch embeddings ``(B, N, C)``, before the CLS token and positions;
- ``"resid_pre"`` and ``"resid_post"`` on a block: the residual stream entering and leaving it, ``(B, T, C)``;
- ``"hidden"`` on a feed-forward network: the input of its down projection, ``(B, T, d_ff)``.

:func:`probing` sets functions for some points in the current context only (a context variable, not a hook on
the module), so each thread sees only its own probes of a shared model and nothing is stored on the model. The
heads' outputs have their own point in :mod:`.head_edits`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

Probe = Callable[[torch.Tensor], torch.Tensor]  # the tensor at a point -> the tensor the model goes on with
Point = tuple[nn.Module, str]  # (module, point name), e.g. (model.blocks[3], "resid_pre")
# The probes of the current context; None when none is set (the common case costs one lookup).
PROBES: ContextVar[Mapping[Point, Probe] | None] = ContextVar("probes", default=None)


def probe(module: nn.Module, point: str, x: torch.Tensor) -> torch.Tensor:
    """``x`` at ``module``'s ``point``, as a probe set in this context reads or replaces it (else unchanged)."""
    probes = PROBES.get()
    if probes is None:
        return x
    fn = probes.get((module, point))
    return x if fn is None else fn(x)


@contextmanager
def probing(probes: Mapping[Point, Probe]) -> Iterator[None]:
    """Apply ``probes`` to the forward passes run inside the ``with`` block, in this context only.

    A probe set on a point that already has one (nested blocks) runs after it.
    """
    merged = dict(PROBES.get() or {})
    for point, fn in probes.items():
        outer = merged.get(point)
        merged[point] = fn if outer is None else (lambda x, a=outer, b=fn: b(a(x)))
    token = PROBES.set(merged)
    try:
        yield
    finally:
        PROBES.reset(token)


def recorder(store: dict, key: object) -> Probe:
    """A probe that keeps the tensor it sees in ``store[key]`` and lets it pass unchanged."""
    def record(x: torch.Tensor) -> torch.Tensor:
        store[key] = x
        return x

    return record
