"""Shared key/value heads in the Lab's words: groups, names, and switching a K/V head off as its whole group."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from explorer.lab.kv_groups import (
    groups_caption,
    groups_off,
    head_title,
    heads_text,
    kv_groups,
    kv_head_of,
    kv_heads_of,
    with_groups,
)


def test_groups_follow_the_contract_head_over_group_size():
    assert kv_groups(9, 3) == ((0, 1, 2), (3, 4, 5), (6, 7, 8))
    assert kv_groups(4, 1) == ((0, 1, 2, 3),)
    assert kv_groups(4, 4) == ((0,), (1,), (2,), (3,))
    assert all(kv_head_of(h, 14, 2) == h // 7 for h in range(14))
    with pytest.raises(ValueError, match="cannot be shared evenly"):
        kv_groups(9, 2)


def test_a_config_without_kv_heads_has_one_per_query_head():
    assert kv_heads_of(SimpleNamespace(n_heads=12)) == 12
    assert kv_heads_of(SimpleNamespace(n_heads=12, n_kv_heads=None)) == 12
    assert kv_heads_of(SimpleNamespace(n_heads=9, n_kv_heads=3)) == 3


def test_the_caption_lists_each_group_and_names_multi_query():
    assert groups_caption(12, 12) == ""
    text = groups_caption(9, 3)
    assert "9 query heads share 3 K/V heads, 3 query heads per group" in text
    assert "K/V 1 → H1–H3; K/V 2 → H4–H6; K/V 3 → H7–H9" in text
    assert "multi-query attention: one K/V head" in groups_caption(4, 1)
    assert heads_text([0, 3]) == "H1, H4" and heads_text([4, 5]) == "H5, H6"


def test_head_titles_carry_their_group_only_when_heads_share():
    assert head_title(4, 9, 3) == "H5 · K/V 2"
    assert head_title(4, 9, 9) == "H5"


def test_switching_a_kv_head_off_switches_its_whole_group_and_back():
    off = with_groups([0], [], [1], 9, 3)
    assert off == [0, 3, 4, 5]
    assert groups_off(off, 9, 3) == [1]
    assert with_groups(off, [1], [], 9, 3) == [0]
    assert groups_off([3, 4], 9, 3) == []  # a group only partly off is not its K/V head off
