"""The head counts the pages offer: divisors of d_model, capped so that per-head pictures stay readable."""

from __future__ import annotations

from explorer.heads import MAX_HEADS, head_choices
from transformer_core import divisors


def test_head_choices_are_the_divisors_up_to_the_cap():
    assert MAX_HEADS == 16
    assert head_choices(64) == [1, 2, 4, 8, 16]
    assert head_choices(12) == divisors(12)
    assert head_choices(128, max_heads=128) == divisors(128)
    assert head_choices(48, max_heads=5) == [1, 2, 3, 4]
