"""Shared test set-up: the repository root is importable and random generators start from a fixed seed."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@pytest.fixture
def rng_seed() -> int:
    """Seed Python's and torch's random generators; return the seed for tests that make their own."""
    import torch

    seed = 1234
    random.seed(seed)
    torch.manual_seed(seed)
    return seed
