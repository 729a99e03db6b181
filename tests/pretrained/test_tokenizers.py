"""Pretrained tokenizers give transformers' ids for the text as the model reads it: never padded, cut only at
the model's own position limit (with a note), whatever the tokenizer files say."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from tests.pretrained.tokenizer_folders import CORPUS, FORMS, LONG, PAIRS, model_folder, tokenizer_folder
from transformer_core.pretrained import TextTokenizer, load_pretrained, tokenizer_files


@pytest.mark.parametrize("form", FORMS)
def test_ids_equal_transformers(tmp_path, form):
    reference = tokenizer_folder(form, tmp_path)
    ours = TextTokenizer.from_folder(tmp_path, family=form.split("-")[0])
    assert len(CORPUS) >= 30
    for text in [*CORPUS, LONG]:
        enc = ours.encode(text)
        assert enc.ids == reference(text)["input_ids"], text
        assert enc.tokens == reference.convert_ids_to_tokens(enc.ids) and not enc.cut and enc.note is None
    for pair in PAIRS:
        assert ours.encode(*pair).ids == reference(*pair)["input_ids"], pair
        if form.startswith("bert"):
            assert ours.encode(*pair).type_ids == reference(*pair)["token_type_ids"]
    assert ours.mask_token == {"gpt2": None, "roberta": "<mask>", "bert": "[MASK]"}[form.split("-")[0]]


@pytest.mark.parametrize("form", ["gpt2-json", "roberta-files", "bert-json"])
def test_the_models_position_limit_cuts_the_text_with_a_note(tmp_path, form):
    reference = tokenizer_folder(form, tmp_path)
    ours = TextTokenizer.from_folder(tmp_path, max_length=20, family=form.split("-")[0])
    full = len(reference(LONG)["input_ids"])
    enc = ours.encode(LONG)
    assert enc.ids == reference(LONG, truncation=True, max_length=20)["input_ids"]  # special tokens kept
    assert enc.full_length == full and enc.cut
    assert enc.note == f"This model reads at most 20 tokens; your text has {full}, the first 20 are shown."
    pair = (LONG, "A man is eating food.")
    assert ours.encode(*pair).ids == reference(*pair, truncation="longest_first", max_length=20)["input_ids"]
    shorter = ours.encode(LONG, max_length=8)  # a viewer's own, smaller limit
    assert shorter.ids == reference(LONG, truncation=True, max_length=8)["input_ids"]
    assert shorter.note == f"Your text makes {full} tokens; the first 8 are shown."
    assert ours.encode("A man is eating food.").note is None


def test_a_sentence_embedding_berts_padded_tokenizer_gives_the_texts_own_tokens(tmp_path):
    _, reference = model_folder("bert-model", "bert-json", tmp_path, layout="int-buffers")
    pre = load_pretrained(tmp_path)
    enc = pre.tokenizer.encode("A man is eating food.")
    assert enc.ids == reference("A man is eating food.")["input_ids"]
    assert len(enc.ids) < 12 and "[PAD]" not in enc.tokens  # the file pads to 128


@pytest.mark.parametrize("family, form", [("gpt2", "gpt2-files"), ("roberta", "roberta-files"),
                                          ("distilbert", "bert-files-lower")])
def test_folders_without_tokenizer_json_load(tmp_path, family, form):
    _, reference = model_folder(family, form, tmp_path)
    assert not (tmp_path / "tokenizer.json").exists()
    pre = load_pretrained(tmp_path)
    for text in CORPUS:  # cut at the model's positions, as transformers' truncation does
        expected = reference(text, truncation=True, max_length=pre.config.max_len)["input_ids"]
        assert pre.tokenizer.encode(text).ids == expected


def test_a_tiny_file_padding_to_millions_encodes_only_the_text(tmp_path):
    tok = Tokenizer(models.WordLevel({"[PAD]": 0, "hello": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(length=5_000_000)
    tok.save(str(tmp_path / "tokenizer.json"))
    assert (tmp_path / "tokenizer.json").stat().st_size < 1000
    assert TextTokenizer.from_folder(tmp_path).encode("hello").ids == [1]


def test_oversized_and_missing_tokenizer_files_are_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="has no tokenizer.json"):
        TextTokenizer.from_folder(tmp_path)
    tokenizer_folder("gpt2-json", tmp_path)
    monkeypatch.setattr(tokenizer_files, "MAX_FILE_BYTES", 1000)
    with pytest.raises(ValueError, match=r"tokenizer.json is .* MB; tokenizer files of supported models are at most"):
        TextTokenizer.from_folder(tmp_path)
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": "nothing"}))
    monkeypatch.setattr(tokenizer_files, "MAX_FILE_BYTES", 2**20)
    with pytest.raises(ValueError, match="tokenizer files of this folder are not valid"):
        TextTokenizer.from_folder(tmp_path)
