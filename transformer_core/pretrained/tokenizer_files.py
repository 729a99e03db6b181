"""A model folder's tokenizer files read into a ``tokenizers.Tokenizer``, with padding and truncation off.

Published folders hold a tokenizer in one of three forms, tried in this order:

- ``tokenizer.json``: the whole tokenizer. Files saved with ``padding`` (e.g. to a fixed 128) or ``truncation``
  (e.g. ``max_length`` 50) set are read with both switched off: transformers does not apply them when it encodes
  one text, and a viewer must show the text, not the padding.
- ``vocab.json`` + ``merges.txt``: a byte-level BPE (GPT-2, and RoBERTa with ``<s> … </s>`` around the text).
- ``vocab.txt``: a WordPiece vocabulary (BERT), lower-cased as ``tokenizer_config.json``'s ``do_lower_case`` says,
  with the special tokens ``special_tokens_map.json`` names.

Every file is size-capped before it is read, so a damaged or forged file cannot exhaust memory, and a
``tokenizer.json`` whose normalizers amplify the text is refused (:mod:`.tokenizer_growth`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .tokenizer_growth import check_normalizer

TOKENIZER_FILE = "tokenizer.json"
BPE_FILES = ("vocab.json", "merges.txt")  # GPT-2's and RoBERTa's byte-level BPE
VOCAB_FILE = "vocab.txt"  # BERT's WordPiece vocabulary, one token a line
SETTINGS_FILES = ("tokenizer_config.json", "special_tokens_map.json")
MAX_FILE_BYTES = 64 * 2**20  # a tokenizer file larger than this is no supported model's (GPT-2's: 1.4 MB)
MAX_SETTINGS_BYTES = 2**20  # tokenizer_config.json and special_tokens_map.json are a few kB
_BERT_SPECIALS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "cls_token": "[CLS]", "pad_token": "[PAD]",
                  "mask_token": "[MASK]"}
_GPT2_SPECIALS = {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
_ROBERTA_SPECIALS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
                     "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"}


def _checked(path: Path, limit: int = MAX_FILE_BYTES) -> Path:
    size = path.stat().st_size
    if size > limit:
        raise ValueError(f"{path.name} is {size / 2**20:,.1f} MB; tokenizer files of supported models are at most "
                         f"{limit / 2**20:,.0f} MB.")
    return path


def _read_text(path: Path, limit: int) -> str:
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        _checked(path, limit)  # says how large it is
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name} is not a UTF-8 text file ({exc}).") from exc


def _settings(folder: Path) -> dict[str, Any]:
    """``tokenizer_config.json`` and ``special_tokens_map.json`` merged (the map wins); missing files are empty."""
    merged: dict[str, Any] = {}
    for name in SETTINGS_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            value = json.loads(_read_text(path, MAX_SETTINGS_BYTES))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name} is not a readable JSON file ({exc}).") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{name} must hold a JSON object.")
        merged.update(value)
    return merged


def _token(value: object) -> str | None:
    # special_tokens_map.json writes a token as a string or as {"content": ..., "lstrip": ...}
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def _specials(settings: dict[str, Any], defaults: dict[str, str]) -> dict[str, str]:
    return {key: _token(settings.get(key)) or default for key, default in defaults.items()}


def read_tokenizer(folder: Path, *, family: str | None = None):
    """The folder's tokenizer as a ``tokenizers.Tokenizer`` with padding and truncation off.

    Args:
        family: the model's family; ``"roberta"`` wraps a BPE fallback's texts in ``<s> … </s>``.

    Raises:
        ValueError: when the folder has no tokenizer files, or they are too large, unreadable or invalid.
    """
    from tokenizers import Tokenizer

    folder = Path(folder)
    path = folder / TOKENIZER_FILE
    try:
        if path.is_file():
            text = _read_text(path, MAX_FILE_BYTES)
            described = json.loads(text)
            check_normalizer(described.get("normalizer") if isinstance(described, dict) else None)
            tokenizer = Tokenizer.from_str(text)
        elif all((folder / name).is_file() for name in BPE_FILES):
            tokenizer = _byte_level_bpe(folder, roberta=family == "roberta")
        elif (folder / VOCAB_FILE).is_file():
            tokenizer = _wordpiece(folder)
        else:
            raise ValueError(f"This model folder has no {TOKENIZER_FILE} (nor {' + '.join(BPE_FILES)} or "
                             f"{VOCAB_FILE}), so its text cannot be turned into tokens.")
    except ValueError:
        raise
    except Exception as exc:  # tokenizers raises a plain Exception for bad files
        raise ValueError(f"The tokenizer files of this folder are not valid ({exc}).") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _byte_level_bpe(folder: Path, *, roberta: bool):
    """GPT-2's byte-level BPE from ``vocab.json`` + ``merges.txt`` (RoBERTa's adds ``<s> … </s>``)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab, merges = (str(_checked(folder / name)) for name in BPE_FILES)
    tokenizer = Tokenizer(models.BPE.from_file(vocab, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = _specials(_settings(folder), _ROBERTA_SPECIALS if roberta else _GPT2_SPECIALS)
    known = [t for t in dict.fromkeys(specials.values()) if tokenizer.token_to_id(t) is not None]
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in known])
    if roberta:
        sep, cls = specials["sep_token"], specials["cls_token"]
        if tokenizer.token_to_id(sep) is None or tokenizer.token_to_id(cls) is None:
            raise ValueError(f"vocab.json lacks RoBERTa's {cls} or {sep} token.")
        tokenizer.post_processor = processors.RobertaProcessing(
            (sep, tokenizer.token_to_id(sep)), (cls, tokenizer.token_to_id(cls)), add_prefix_space=False)
    else:
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def _wordpiece(folder: Path):
    """BERT's WordPiece tokenizer from ``vocab.txt``; lower-cased unless ``tokenizer_config.json`` says otherwise."""
    from tokenizers.implementations import BertWordPieceTokenizer

    settings = _settings(folder)
    specials = _specials(settings, _BERT_SPECIALS)
    lowercase = settings.get("do_lower_case", True) is not False
    strip = settings.get("strip_accents")
    wrapped = BertWordPieceTokenizer(
        str(_checked(folder / VOCAB_FILE)), lowercase=lowercase,
        strip_accents=strip if isinstance(strip, bool) else None,
        handle_chinese_chars=settings.get("tokenize_chinese_chars", True) is not False, **specials)
    return wrapped._tokenizer  # the tokenizers.Tokenizer it configures
