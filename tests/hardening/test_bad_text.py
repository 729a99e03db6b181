"""Awkward text: empty, whitespace, very long, unicode and emoji, characters outside a vocabulary.

Each one gives a clear message (or a correct result), never a crash, and long inputs are capped with a notice —
in the Attention Lab's tokenizer and page, and in the character language model's user text.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from explorer.lab.text_input import INPUT_KINDS, MAX_TOKENS, encode_for_task, tokenize
from tests.app.conftest import app_at, assert_no_exception
from transformer_core.tasks import get_task
from transformer_core.tasks.language import MAX_CHARS, UNKNOWN
from transformer_core.tasks.language import MAX_VOCAB as CHAR_LM_MAX_VOCAB
from transformer_core.training import TrainConfig, Trainer
from ui.common import state

LONG = "the quick brown fox jumps over the lazy dog " * 150  # 6,750 characters, 1,350 words
EMOJI = "I ❤️ transformers 🤖🚀 — naïve café, 東京, Ελληνικά 👩‍🔬 🇫🇷"
TEXTS = {
    "empty": "",
    "whitespace": " \t\n   \u00a0 \n",
    "long": LONG,
    "emoji": EMOJI,
    "control": "a\x00b\x1bc\u200bd",
}


@pytest.mark.parametrize("kind", INPUT_KINDS)
@pytest.mark.parametrize("name", ["empty", "whitespace"])
def test_blank_text_gives_no_tokens(kind: str, name: str) -> None:
    lab = tokenize(TEXTS[name], kind)
    assert lab.empty and lab.ids == () and lab.notices() == []


@pytest.mark.parametrize("kind", INPUT_KINDS)
def test_long_text_is_capped_with_a_notice(kind: str) -> None:
    text = {"sentence": LONG, "protein": "MKTAYIAKQR" * 500, "digits": "0123456789" * 500}[kind]
    lab = tokenize(text, kind)
    assert len(lab.tokens) == len(lab.ids) == MAX_TOKENS
    assert lab.original_length is not None and lab.original_length > MAX_TOKENS
    assert any(f"only the first {MAX_TOKENS}" in n for n in lab.notices())


def test_unicode_and_emoji_are_tokens_of_a_sentence() -> None:
    lab = tokenize(EMOJI, "sentence")
    for token in ("❤️", "🤖", "🚀", "naïve", "café", "東京", "Ελληνικά", "👩‍🔬", "🇫🇷"):
        assert token in lab.tokens, token
    assert all(0 < i < lab.vocab_size for i in lab.ids)
    assert tokenize("Café", "sentence").ids == tokenize("café", "sentence").ids  # case-insensitive words


@pytest.mark.parametrize(("kind", "text", "kept", "dropped"), [
    ("protein", "mktay BJOUXZ 🧬 1", "MKTAY", ("B", "J", "O", "U", "X", "Z", "🧬", "1")),
    ("digits", "3.14 is π 🥧", "314", (".", "i", "s", "π", "🥧")),
])
def test_characters_outside_the_vocabulary_are_dropped_and_named(kind, text, kept, dropped) -> None:
    lab = tokenize(text, kind)
    assert "".join(lab.tokens) == kept
    assert lab.dropped == dropped
    notice = " ".join(lab.notices())
    assert "Dropped characters" in notice and all(repr(ch) in notice for ch in dropped)


def test_control_characters_do_not_break_the_tokenizer() -> None:
    for kind in INPUT_KINDS:
        lab = tokenize(TEXTS["control"], kind)
        assert len(lab.tokens) == len(lab.ids)


def _infos(at) -> str:
    return "\n".join(i.value for i in at.info)


def test_attention_lab_handles_every_awkward_text() -> None:
    at = app_at("pages/attention.py")
    assert_no_exception(at)
    for name, text in TEXTS.items():
        at.text_input(key="attn.text").set_value(text)
        at.run()
        assert_no_exception(at)
        if name in ("empty", "whitespace"):
            assert "Type a few words" in _infos(at), name
        else:
            assert at.get("plotly_chart") or at.get("vega_lite_chart") or at.get("image"), f"{name}: nothing is drawn"
        if name == "long":
            assert f"only the first {MAX_TOKENS} are used" in _infos(at)
    at.selectbox(key="attn.kind").set_value("protein")
    at.text_input(key="attn.text").set_value("MKT 🧬 XZ")
    at.run()
    assert_no_exception(at)
    assert "Dropped characters" in _infos(at) and "'🧬'" in _infos(at)
    at.text_input(key="attn.text").set_value("🧬🧬🧬")  # nothing left after dropping
    at.run()
    assert_no_exception(at)
    assert "Type a few words" in _infos(at)


# The character language model trained on the visitor's own text (get_task("char_lm", text=...)).


@pytest.mark.parametrize(("text", "phrase"), [("", "empty"), (" \n\t  ", "empty"), ("too short", "too short")])
def test_char_lm_refuses_blank_or_tiny_text(text: str, phrase: str) -> None:
    with pytest.raises(ValueError, match=phrase):
        get_task("char_lm", text=text)


def test_char_lm_caps_a_very_long_text_with_a_notice() -> None:
    text = "abcdefghij" * (MAX_CHARS // 10 + 500)
    task = get_task("char_lm", text=text)
    assert len(task.train_text) + len(task.val_text) == MAX_CHARS
    assert task.notice and f"{MAX_CHARS:,}" in task.notice


def test_char_lm_learns_unicode_and_emoji_characters() -> None:
    text = EMOJI * 3
    task = get_task("char_lm", text=text)
    for ch in "❤🤖🚀ï東Ελ🇫":
        assert ch in task.vocab, ch
    ids = task.encode("🤖 café")
    assert "".join(task.vocab[i] for i in ids.tolist()) == "🤖 café"
    config = replace(task.default_model_config(), d_model=16, n_heads=2, n_layers=1, d_ff=32)
    trainer = Trainer(task, config, TrainConfig(steps=2, batch_size=4, eval_every=0, snapshot_every=0))
    for _ in range(2):
        trainer.train_step()
    assert trainer.step == 2 and trainer.status != "diverged"


def test_char_lm_with_too_many_distinct_characters_maps_the_rarest_to_unknown() -> None:
    rare = "".join(chr(0x4E00 + i) for i in range(400))  # 400 different CJK characters, once each
    task = get_task("char_lm", text="the common part " * 50 + rare)
    assert len(task.vocab) == CHAR_LM_MAX_VOCAB and task.vocab.endswith(UNKNOWN)
    assert task.notice and "rarest" in task.notice
    assert task.encode(chr(0x4E00 + 399)).tolist() == [task.stoi[UNKNOWN]]


def test_text_outside_a_trained_models_vocabulary_is_dropped_with_a_notice() -> None:
    task = get_task("char_lm", text="abc abc abc abc abc abc abc")
    lab = encode_for_task(task, "a b 🤖 z c")
    assert "".join(task.vocab[i] for i in lab.ids) == "a b   c"  # the space is in this vocabulary; 🤖 and z not
    assert "'🤖'" in " ".join(lab.notices()) and "'z'" in " ".join(lab.notices())


def test_attention_lab_with_a_trained_char_lm_handles_awkward_text() -> None:
    task = get_task("char_lm")
    config = replace(task.default_model_config(), d_model=16, n_heads=2, n_layers=1, d_ff=32)
    entry = state.TrainedModel("causal_lm", "char_lm", task.title, task.build_model(config), config, 0)
    at = app_at("pages/attention.py")
    at.session_state[state.TRAINED] = {"causal_lm": entry}
    at.run()
    at.radio(key="attn.source").set_value("causal_lm")
    at.run()
    for name, text in TEXTS.items():
        at.text_input(key="attn.text").set_value(text)
        at.run()
        assert_no_exception(at)
        shown = _infos(at) + "\n".join(w.value for w in at.warning)
        if name == "empty":
            assert "Type a few words" in shown, name
        else:  # spaces and line breaks are characters of a character model's vocabulary
            assert at.get("plotly_chart") or at.get("vega_lite_chart") or at.get("image"), f"{name}: nothing is drawn"
        if name == "long":
            assert "only the first" in shown, shown
        if name == "emoji":
            assert "Dropped characters" in shown, shown
