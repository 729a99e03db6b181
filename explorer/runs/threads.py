"""Torch's thread count for one block of work: :func:`torch_threads`.

Every run trains, samples and measures with a fixed number of torch threads (a live run's ``threads``, usually
:data:`~explorer.runs.live.LIVE_THREADS`): several sessions training at once on a few cores each keep one, and a
run gives the same numbers wherever it trains, since the thread count orders a product's sums. Live runs,
replays and heads switched off all set it the same way, through this one context manager.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run a block with ``threads`` torch intra-op threads in the calling thread, then restore the setting.

    The setting is per thread (and inherited by threads started meanwhile), so other sessions' script
    threads keep theirs.
    """
    if threads is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
