"""A model's own tokenizer, read from its ``tokenizer.json`` with the ``tokenizers`` library (or, for BERTs that
ship only a WordPiece ``vocab.txt``, such as Google's small BERTs, built from that).

A thin wrapper: ``encode`` gives the ids the model expects (special tokens included, as the model was trained)
together with the token strings to label heatmaps with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

TOKENIZER_FILE = "tokenizer.json"
VOCAB_FILE = "vocab.txt"  # BERT's WordPiece vocabulary, one token a line
_MASKS = ("[MASK]", "<mask>")  # BERT's and RoBERTa's mask tokens


@dataclass(frozen=True)
class Encoded:
    """One encoded text."""

    ids: list[int]  # token ids, special tokens included
    tokens: list[str]  # the token strings, one per id (GPT-2 shows a leading space as "Ġ")
    type_ids: list[int]  # segment ids: 0 for the first text, 1 for the pair (BERT)


class TextTokenizer:
    """Encodes text as a pretrained model's token ids.

    Args:
        tokenizer: a ``tokenizers.Tokenizer``.
    """

    def __init__(self, tokenizer) -> None:  # a tokenizers.Tokenizer, or a tokenizers implementation wrapping one
        self._tokenizer = tokenizer

    @classmethod
    def from_folder(cls, folder: Path) -> TextTokenizer:
        """Read ``tokenizer.json`` from a model folder, or build BERT's WordPiece tokenizer from ``vocab.txt``.

        Raises:
            ValueError: when neither file is there or the file is not a tokenizer.
        """
        from tokenizers import Tokenizer

        path, vocab = Path(folder) / TOKENIZER_FILE, Path(folder) / VOCAB_FILE
        if not path.is_file() and vocab.is_file():
            return cls(_wordpiece(vocab))
        if not path.is_file():
            raise ValueError(f"This model folder has no {TOKENIZER_FILE}, so its text cannot be turned into tokens.")
        try:
            return cls(Tokenizer.from_file(str(path)))
        except Exception as exc:  # tokenizers raises a plain Exception for bad files
            raise ValueError(f"{TOKENIZER_FILE} is not a valid tokenizer file ({exc}).") from exc

    @property
    def vocab_size(self) -> int:
        """Number of distinct ids the tokenizer can produce (added tokens included)."""
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def mask_token(self) -> str | None:
        """The token a masked language model fills in (``"[MASK]"`` for BERT), or ``None``."""
        return next((t for t in _MASKS if self._tokenizer.token_to_id(t) is not None), None)

    def encode(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Encoded:
        """Token ids, token strings and segment ids of ``text`` (and ``pair`` as the second segment)."""
        if not isinstance(text, str) or (pair is not None and not isinstance(pair, str)):
            raise ValueError("Only text can be encoded.")
        enc = self._tokenizer.encode(text, pair, add_special_tokens=add_special_tokens)
        return Encoded(list(enc.ids), list(enc.tokens), list(enc.type_ids))

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """The text of ``ids``."""
        return self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int | None:
        """The id of one token string, or ``None`` when it is not in the vocabulary."""
        return self._tokenizer.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of one id, or ``None`` when the id is out of range."""
        return self._tokenizer.id_to_token(token_id)


def _wordpiece(vocab: Path):
    """BERT's tokenizer from its ``vocab.txt``; lower-cased unless ``tokenizer_config.json`` says otherwise."""
    from tokenizers.implementations import BertWordPieceTokenizer

    lowercase = True
    settings = vocab.parent / "tokenizer_config.json"
    if settings.is_file():
        try:
            lowercase = json.loads(settings.read_text(encoding="utf-8")).get("do_lower_case", True) is not False
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
            raise ValueError(f"tokenizer_config.json is not a readable JSON object ({exc}).") from exc
    try:
        return BertWordPieceTokenizer(str(vocab), lowercase=lowercase)
    except Exception as exc:  # tokenizers raises a plain Exception for bad files
        raise ValueError(f"{VOCAB_FILE} is not a valid WordPiece vocabulary ({exc}).") from exc
