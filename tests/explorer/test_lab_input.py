"""Tokenising learners' text: words, emoji, residues and digits; dropped characters, long and empty inputs."""

from __future__ import annotations

import pytest

from explorer.lab.text_input import (
    MAX_TOKENS,
    PAD_ID,
    PAD_TOKEN,
    encode_chars,
    encode_for_task,
    pad_input,
    padded_length,
    task_vocabulary,
    tokenize,
)
from transformer_core.tasks import get_task
from transformer_core.tasks.sequences import DIGIT0


def test_sentence_words_punctuation_and_emoji() -> None:
    lab = tokenize("Héllo, wörld! 👍🏽 🇫🇷 👨‍👩‍👧 日本語")
    assert lab.tokens == ("Héllo", ",", "wörld", "!", "👍🏽", "🇫🇷", "👨‍👩‍👧", "日本語")
    assert len(lab.ids) == len(lab.tokens) and PAD_ID not in lab.ids
    assert all(0 < i < lab.vocab_size for i in lab.ids)
    assert not lab.notices()


def test_invisible_characters_make_no_tokens() -> None:
    assert tokenize("\u200b\u200b\u200b").empty  # three zero-width spaces: nothing to show, as for spaces
    assert tokenize("a\u200bb \ufeffc \u200e\ufe0f").tokens == ("a", "b", "c")
    assert tokenize("🏽 👨\u200d👩\u200d👧").tokens == ("🏽", "👨\u200d👩\u200d👧")  # visible ones stay


def test_same_word_same_id_whatever_its_case() -> None:
    lab = tokenize("The cat saw the dog")
    assert lab.ids[0] == lab.ids[3]
    assert lab.ids[1] != lab.ids[4]


def test_digits_drop_and_name_other_characters() -> None:
    lab = tokenize("3 1 4x1-5x", "digits")
    assert lab.tokens == ("3", "1", "4", "1", "5")
    assert lab.dropped == ("x", "-")
    assert lab.ids == (4, 2, 5, 2, 6)  # digit d has id d + 1
    assert "'x'" in lab.notices()[0] and "'-'" in lab.notices()[0]


def test_protein_accepts_lowercase_and_names_non_residues() -> None:
    lab = tokenize("mktay bzx", "protein")
    assert lab.tokens == ("M", "K", "T", "A", "Y")
    assert set(lab.dropped) == {"B", "Z", "X"}
    assert lab.vocab_size == 21


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_and_whitespace(text: str) -> None:
    for kind in ("sentence", "protein", "digits"):
        lab = tokenize(text, kind)
        assert lab.empty and lab.notices() == []


def test_long_input_is_cut_with_a_notice() -> None:
    lab = tokenize(" ".join(["word"] * 100))
    assert len(lab.tokens) == MAX_TOKENS and lab.original_length == 100
    assert "100 tokens" in lab.notices()[0]


def test_padding() -> None:
    lab = pad_input(tokenize("a b c"), padded_length(3))
    assert padded_length(3) == 8 and padded_length(6) == 8 and padded_length(7) == 12
    assert lab.tokens[3:] == (PAD_TOKEN,) * 5 and lab.ids[3:] == (PAD_ID,) * 5
    assert lab.valid == (True,) * 3 + (False,) * 5


def test_a_cut_input_padded_for_the_padding_mask_counts_only_its_own_tokens() -> None:
    lab = tokenize(" ".join(["word"] * 105))
    padded = pad_input(lab, padded_length(len(lab.tokens)))
    assert len(padded.tokens) > MAX_TOKENS and padded.real_count == lab.real_count == MAX_TOKENS
    assert padded.notices() == lab.notices() and f"only the first {MAX_TOKENS} are used" in padded.notices()[0]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="Input kind"):
        tokenize("x", "music")
    with pytest.raises(ValueError, match="max_tokens"):
        tokenize("x", max_tokens=0)


def test_task_vocabularies() -> None:
    reverse = get_task("reverse")
    vocab = task_vocabulary(reverse)
    assert vocab == {str(d): DIGIT0 + d for d in range(10)}
    lab = encode_for_task(reverse, "12 3a")
    assert lab.ids == (DIGIT0 + 1, DIGIT0 + 2, DIGIT0 + 3) and lab.dropped == ("a",)

    class CharTask:
        stoi = {"<pad>": 0, "a": 1, "b": 2}

    class ListTask:
        itos = ["<pad>", "A", "C"]

    assert encode_for_task(CharTask(), "abba c").ids == (1, 2, 2, 1)
    spaced = encode_for_task(type("SpaceTask", (), {"stoi": {"a": 0, " ": 1}})(), "a a")
    assert spaced.tokens == ("a", "␣", "a") and spaced.ids == (0, 1, 0)  # a known space is a token
    assert encode_for_task(get_task("protein"), "mkx").ids == (11, 9)  # residues are ids 1..20 in ACDEF… order
    assert encode_for_task(get_task("induction", num_symbols=4), "abce").tokens == ("A", "B", "C")
    assert encode_for_task(ListTask(), "acx").tokens == ("A", "C")  # upper-case vocabulary accepts lowercase
    with pytest.raises(ValueError, match="vocabulary"):
        encode_for_task(object(), "abc")


def test_encode_chars_caps_length() -> None:
    lab = encode_chars("abcabc", {"a": 1, "b": 2, "c": 3}, max_tokens=4)
    assert lab.tokens == tuple("abca") and lab.original_length == 6 and lab.vocab_size == 4
