"""Seeded randomness that several browser sessions in one process can share safely.

Weight initialisation and dropout draw from torch's one process-wide random generator. Two sessions seeding it
at the same time would interleave their draws, so each seeded block holds a lock; the generator's state is
restored afterwards, so code outside a seeded block is not affected either.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np
import torch

# Re-entrant, so a seeded helper may call another one; other threads wait until the outer block ends.
_RNG_LOCK = threading.RLock()


def stream_seed(seed: int, stream: int, index: int = 0) -> int:
    """A well-mixed 63-bit seed for item ``index`` of random stream ``stream`` of a run seeded with ``seed``."""
    state = np.random.SeedSequence([int(seed) % 2**32, stream, index]).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with the global torch RNG seeded, restoring it afterwards; one thread at a time."""
    with _RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
