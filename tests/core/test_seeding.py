"""Seeded building shares one lock: the same seed gives the same weights even while another session (thread)
seeds and draws from torch's global generator, and seeded helpers may nest."""

from __future__ import annotations

import threading

import pytest
import torch

from explorer.lab.internals import build_lab_encoder
from explorer.lab.positional import position_views
from explorer.lab.vit_walkthrough import random_vit
from transformer_core import TransformerConfig, ViTConfig
from transformer_core.seeding import seeded
from transformer_core.training import seeded as training_seeded

TEXT = TransformerConfig(vocab_size=64, max_len=16, d_model=32, n_heads=2, n_layers=2, d_ff=64)
VIT = ViTConfig(image_size=16, patch_size=4, d_model=32, n_heads=2, n_layers=2, d_ff=64)
BUILDERS = {  # what each page builds from a seed, as one flat tensor of numbers
    "lab encoder": lambda seed: _flat(build_lab_encoder(TEXT, seed)),
    "random vit": lambda seed: _flat(random_vit(VIT, seed)),
}


def _flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def _other_session(stop: threading.Event) -> None:
    """Another visitor's page: seeds the global generator and draws from it, over and over."""
    while not stop.is_set():
        with seeded(123):
            torch.randn(2_000)


@pytest.mark.parametrize("name", BUILDERS)
def test_same_seed_same_weights_while_another_thread_draws(name):
    build = BUILDERS[name]
    reference = build(7)
    stop = threading.Event()
    other = threading.Thread(target=_other_session, args=(stop,), daemon=True)
    other.start()
    try:
        results = [build(7) for _ in range(15)]
    finally:
        stop.set()
        other.join(timeout=10)
    assert all(torch.equal(r, reference) for r in results)
    assert not torch.equal(build(8), reference)


def test_seeded_helpers_leave_the_global_generator_where_it_was():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    with seeded(99):
        torch.rand(100)
    learned = position_views("learned", 16, 32, seed=4)[0]
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(position_views("learned", 16, 32, seed=4)[0], learned)


def test_seeded_blocks_nest_without_deadlock():
    out = []

    def nested() -> None:
        with seeded(1):
            out.append(_flat(build_lab_encoder(TEXT, 7)))  # build_lab_encoder takes the lock again

    worker = threading.Thread(target=nested, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive() and torch.equal(out[0], BUILDERS["lab encoder"](7))
    assert training_seeded is seeded  # the trainer uses the same lock


def test_loading_checkpoints_leaves_other_sessions_seeded_builds_alone():
    from transformer_core.checkpoint import load_checkpoint, save_checkpoint
    from transformer_core.models import Seq2SeqTransformer

    data = save_checkpoint(Seq2SeqTransformer(TEXT), TEXT, task_name="reverse")
    reference = BUILDERS["lab encoder"](7)
    stop = threading.Event()

    def other_session() -> None:  # another visitor uploads checkpoints over and over
        while not stop.is_set():
            load_checkpoint(data)

    other = threading.Thread(target=other_session, daemon=True)
    other.start()
    try:
        results = [BUILDERS["lab encoder"](7) for _ in range(150)]
    finally:
        stop.set()
        other.join(timeout=10)
    assert all(torch.equal(r, reference) for r in results)
