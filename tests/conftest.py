"""Shared test set-up: the repository root is importable, random generators start from a fixed seed, AppTest
starts cheaper (:mod:`tests.apptest_speed`), and every figure built as a dict is checked by Plotly's validators
(:data:`ui.common.figure_dict.CHECK_ENV`, inherited by the app servers the browser tests start)."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ["TE_CHECK_FIGURES"] = "1"  # ui.common.figure_dict.CHECK_ENV: a misspelt chart property fails its test


def pytest_configure(config: pytest.Config) -> None:
    from tests.apptest_speed import speed_up_apptest

    speed_up_apptest()


@pytest.fixture
def rng_seed() -> int:
    """Seed Python's and torch's random generators; return the seed for tests that make their own."""
    import torch

    seed = 1234
    random.seed(seed)
    torch.manual_seed(seed)
    return seed
