"""Live Training builds and trains a Llama block (RMSNorm, SwiGLU, RoPE, shared K/V heads) for the decoder-only
tasks; the block and its K/V heads travel in the link like the other settings."""

from __future__ import annotations

from tests.app.conftest import assert_no_exception
from tests.app.test_live_training import heatmap_maps, live_at, metric, run_of
from ui.attention import keys as lab
from ui.training import controls as tc
from ui.training import specs as ts

LLAMA = {"task": "induction", "d_model": "16", "heads": "4", "layers": "1", "d_ff": "32", "batch": "8",
         "steps": "10", "block": "llama", "kv_heads": "2"}


def test_a_link_builds_a_llama_block_with_its_kv_heads_and_it_trains():
    at = live_at(**LLAMA)
    config = run_of(at).specs[0].model_config
    assert (config.norm_type, config.feed_forward, config.positional, config.n_kv_heads) == (
        "rmsnorm", "swiglu", "rope", 2)
    assert not config.bias and config.norm_position == "pre"
    assert at.selectbox(key=tc.KV_HEADS).value == 2 and at.selectbox(key=tc.KV_HEADS).options == ["1", "2", "4"]
    assert not [s for s in at.selectbox if s.key == tc.POSITIONAL]  # the Llama block brings its own positions
    assert heatmap_maps(at) == 1 * 4  # every query head has its own map
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert metric(at, "Step") == "10 / 10" and run_of(at).status == "done"


def test_the_block_and_kv_heads_follow_the_controls_and_the_url():
    at = live_at(task="induction", d_model="16", heads="4", layers="1", d_ff="32", batch="8", steps="10")
    assert at.selectbox(key=tc.BLOCK).value == "gpt" and not [s for s in at.selectbox if s.key == tc.KV_HEADS]
    at.selectbox(key=tc.BLOCK).set_value("llama").run()
    at.selectbox(key=tc.KV_HEADS).set_value(1).run()
    assert_no_exception(at)
    assert at.query_params["block"] == "llama" and at.query_params["kv_heads"] == "1"
    assert run_of(at).specs[0].model_config.n_kv_heads == 1
    assert "Llama block (1 K/V head)" in ts.describe(run_of(at).specs[0].model_config)


def test_kv_heads_that_do_not_divide_the_heads_are_settled_with_a_notice():
    at = live_at(**{**LLAMA, "kv_heads": "3"})
    assert at.selectbox(key=tc.KV_HEADS).value in (2, 4)
    assert any("the K/V heads must divide the 4 query heads" in i.value for i in at.info)


def test_tasks_that_are_not_decoder_only_offer_no_block_choice():
    at = live_at(block="llama")  # the reverse task trains an encoder-decoder model
    assert not [s for s in at.selectbox if s.key in (tc.BLOCK, tc.KV_HEADS)]
    assert getattr(run_of(at).specs[0].model_config, "norm_type", "layernorm") == "layernorm"


def test_a_trained_llama_block_shows_its_kv_groups_in_the_attention_lab():
    at = live_at(**{**LLAMA, "heads": "4", "kv_heads": "2", "steps": "10"})
    at.button(key="live.start").click().run()
    at.session_state[lab.SOURCE] = "causal_lm"
    at.session_state[lab.TEXT] = "ABCAB"
    at.switch_page("pages/attention.py").run()
    assert_no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "K/V 1 → H1, H2; K/V 2 → H3, H4" in captions and "4 heads sharing 2 K/V heads" in captions
    at.button_group(key=f"{lab.OFF_KV}0").set_value([0]).run()
    assert_no_exception(at)
    assert at.button_group(key=f"{lab.OFF_PICK}0").value == [0, 1]


def test_the_block_and_kv_heads_are_kept_across_a_visit_to_another_page():
    at = live_at(**LLAMA)
    at.switch_page("pages/builder.py").run()
    at.switch_page("pages/training.py").run()
    assert_no_exception(at)
    assert (at.selectbox(key=tc.BLOCK).value, at.selectbox(key=tc.KV_HEADS).value) == ("llama", 2)
