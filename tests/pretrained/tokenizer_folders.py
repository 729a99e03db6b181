"""Tokenizer folders in the forms published models have, with transformers' own tokenizer as the reference.

The vocabularies are trained here with the ``tokenizers`` trainers (a byte-level BPE as GPT-2's and RoBERTa's, a
WordPiece as BERT's) on :data:`CORPUS`; each folder is then what transformers reads with ``from_pretrained``:
vocabulary files only, or the ``tokenizer.json`` transformers saves, rewritten with ``padding`` and
``truncation`` set as some published files have them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

CORPUS = [
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "Café crème, naïve résumé, señor, Ångström, Zoë and Œuvre.", "ÉCOLE ÉLÉMENTAIRE À PARIS",
    "東京は日本の首都です。", "我喜欢学习自然语言处理", "한국어 문장도 있습니다", "Привет, как дела?",
    "Emoji: 🤖🎉👍🏽 and 👨‍👩‍👧 family", "多言語 mixed with English and émojis 😀",
    "Runs   of   spaces    here", "  leading and trailing spaces  ", "tabs\tand\nnew lines\n\nhere",
    "supercalifragilisticexpialidocious", "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word",
    "antidisestablishmentarianism" * 3, "The capital of France is [MASK].", "The [MASK] sat on the [MASK].",
    "[MASK]", "The capital of France is <mask>.", "I love <mask> and <mask>!", "numbers 12345 and 3.14159",
    "punctuation!!! ??? ... --- (brackets) [square] {curly}", "e-mail: someone@example.com, https://x.y/z?q=1",
    "it's don't won't y'all", "UPPER lower MiXeD CaSe", "a", "", "The quick brown fox jumps over the lazy dog.",
    "Hello world", "<|endoftext|> after the end", "[CLS] [SEP] [PAD] [UNK] in text", "ﬁnance ligature and ½ fraction",
]
LONG = " ".join(CORPUS)  # longer than the truncation some tokenizer.json files were saved with
PAIRS = [("A man is eating food.", "A man is eating a piece of bread."), ("東京", "Tokyo 🤖"),
         ("The [MASK] is here.", "  spaced   out  "), ("short", "a much longer second sentence than the first")]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
GPT2_SPECIALS = ["<|endoftext|>"]
CONFIGS = {
    "gpt2": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]},
    "roberta": {"model_type": "roberta", "architectures": ["RobertaForMaskedLM"]},
    "bert": {"model_type": "bert", "architectures": ["BertForMaskedLM"]},
}
FORMS = ("gpt2-files", "gpt2-json", "roberta-files", "roberta-json", "bert-files-lower", "bert-files-cased",
         "bert-json")


def _bpe_files(folder: Path, specials: list[str]) -> None:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.model.save(str(folder))  # vocab.json + merges.txt


def _wordpiece_files(folder: Path, lowercase: bool) -> None:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=400, special_tokens=BERT_SPECIALS, show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.model.save(str(folder))  # vocab.txt
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase}))
    (folder / "special_tokens_map.json").write_text(json.dumps(
        {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
         "mask_token": {"content": "[MASK]", "lstrip": False, "rstrip": False, "normalized": False}}))


def tokenizer_folder(form: str, folder: Path, *, padding: int = 128, truncation: int = 50):
    """Write ``form``'s tokenizer files into ``folder`` (with a config.json); returns transformers' tokenizer.

    ``*-json`` forms hold only the ``tokenizer.json`` transformers saves, rewritten with padding to ``padding``
    tokens and truncation at ``truncation``.
    """
    from transformers import AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    family = form.split("-")[0]
    (folder / "config.json").write_text(json.dumps(CONFIGS[family]))
    if family == "bert":
        _wordpiece_files(folder, lowercase=form != "bert-files-cased")
    else:
        _bpe_files(folder, GPT2_SPECIALS if family == "gpt2" else ROBERTA_SPECIALS)
    reference = AutoTokenizer.from_pretrained(folder)
    if form.endswith("-json"):
        reference.save_pretrained(folder)
        for name in ("vocab.json", "merges.txt", "vocab.txt"):
            (folder / name).unlink(missing_ok=True)
        set_padding_and_truncation(folder / "tokenizer.json", padding, truncation)
        reference = AutoTokenizer.from_pretrained(folder)
    assert reference("Hello world")["input_ids"], "the reference tokenizer must not be empty"
    return reference


def set_padding_and_truncation(path: Path, padding: int, truncation: int) -> None:
    """Rewrite a ``tokenizer.json`` with fixed padding and truncation on, as some published files are."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data["padding"] = {"strategy": {"Fixed": padding}, "direction": "Right", "pad_to_multiple_of": None,
                       "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"}
    data["truncation"] = {"direction": "Right", "max_length": truncation, "strategy": "LongestFirst", "stride": 0}
    path.write_text(json.dumps(data), encoding="utf-8")


def model_folder(family: str, form: str, folder: Path, *, layout: str = "today"):
    """A whole model folder: ``form``'s tokenizer and a random ``family`` model (see :mod:`real_layouts`) whose
    vocabulary fits it; returns (transformers model, transformers tokenizer)."""
    from tests.pretrained.real_layouts import write_layout

    reference = tokenizer_folder(form, folder)
    model = write_layout(family, layout, folder, vocab=len(reference))
    return model, reference
