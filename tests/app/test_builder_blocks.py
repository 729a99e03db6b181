"""Model Builder: *GPT-2 block vs Llama block* counts one block of each at the Builder's width and heads."""

from __future__ import annotations

from explorer.i18n.quantities import human_bytes
from explorer.lab.block_compare import compare_blocks
from tests.app.conftest import app_at, assert_no_exception, opened_from_link
from ui.builder import controls as bc

PAGE = "pages/builder.py"


def _blocks(at):
    return next(t.value for t in at.table if "Llama block" in t.value.columns)


def test_the_two_blocks_are_counted_at_the_builders_width_and_follow_the_kv_heads():
    at = app_at(PAGE)
    assert_no_exception(at)
    table = _blocks(at)
    gpt2, llama = compare_blocks(64, 4, 256, 2, context=64)  # the Builder's defaults, 2 K/V heads
    assert table.loc["Parameters per block", "GPT-2 block"] == f"{gpt2.parameters:,}"
    assert table.loc["Parameters per block", "Llama block"] == f"{llama.parameters:,}"
    assert table.loc["KV cache per token, one block", "Llama vs GPT-2"] == "-50%"
    at.select_slider(key=bc.BLOCK_KV).set_value(1).run()
    assert_no_exception(at)
    one = compare_blocks(64, 4, 256, 1, context=64)[1]
    assert _blocks(at).loc["KV cache per token, whole model", "Llama block"] == human_bytes(2 * one.kv_bytes_per_token)
    assert at.query_params.get(bc.BLOCK_KV) == "1"


def test_a_link_with_kv_heads_that_do_not_divide_the_heads_is_settled_with_a_notice():
    at = opened_from_link(PAGE, {bc.BLOCK_KV: "3"})
    assert at.select_slider(key=bc.BLOCK_KV).value == 2
    assert "The link's setting mb.block_kv='3' was changed to 2: K/V heads must divide the 4 query heads." in [
        i.value for i in at.info]


def test_a_vit_says_the_comparison_is_for_text_blocks():
    at = app_at(PAGE)
    at.radio(key=bc.KIND).set_value("vit").run()
    assert_no_exception(at)
    assert not any("Llama block" in t.value.columns for t in at.table)
    assert any("compare the two text blocks" in c.value for c in at.caption)
