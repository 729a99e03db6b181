"""A tokenizer file cannot make a text explode: amplifying normalizer chains are refused, output is capped."""

from __future__ import annotations

import json
import time

import pytest

from transformer_core.pretrained.tokenizer import TextTokenizer
from transformer_core.pretrained.tokenizer_growth import MAX_IDS_PER_CHAR, normalizer_growth

tokenizers = pytest.importorskip("tokenizers")


def _save(folder, normalizer) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "[UNK]": 2}, merges=[], unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(tokenizers.Regex("."), behavior="isolated")
    tok.normalizer = normalizer
    tok.save(str(folder / "tokenizer.json"))


def test_a_chain_of_replace_normalizers_that_doubles_the_text_is_refused(tmp_path) -> None:
    from tokenizers import normalizers

    _save(tmp_path, normalizers.Sequence([normalizers.Replace("a", "aa") for _ in range(22)]))
    assert (tmp_path / "tokenizer.json").stat().st_size < 4000  # a small file ...
    started = time.monotonic()
    with pytest.raises(ValueError, match="normalizers can make one character into 4,194,304"):
        TextTokenizer.from_folder(tmp_path)  # ... refused as it is read: nothing is encoded
    assert time.monotonic() - started < 5


def test_a_tokenizer_that_makes_too_many_tokens_a_character_is_stopped(tmp_path) -> None:
    from tokenizers import normalizers

    _save(tmp_path, normalizers.Replace("a", "a" * 40))  # within the growth a file may declare ...
    tok = TextTokenizer.from_folder(tmp_path)
    assert tok.encode("bbb").ids == [1, 1, 1]
    with pytest.raises(ValueError, match=f"more than {MAX_IDS_PER_CHAR} a character"):
        tok.encode("a" * 100)  # ... but not what this text would make


def test_published_normalizers_stay_within_the_bound() -> None:
    nfkc = {"type": "NFKC"}
    bert = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
            "lowercase": True}
    llama = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    assert normalizer_growth(nfkc) == (18.0, 0) and normalizer_growth(bert)[0] == 3.0
    assert normalizer_growth(llama) == (1.0, 1) and normalizer_growth(None) == (1.0, 0)
    regex = {"type": "Replace", "pattern": {"Regex": ""}, "content": "xy"}  # matches between every character
    assert normalizer_growth(json.loads(json.dumps(regex)))[0] == 3.0
