"""A model's own tokenizer (see :mod:`.tokenizer_files` for the files it is read from), giving the text as the
model reads it.

``encode`` gives the ids the model expects (special tokens included, as the model was trained) together with the
token strings to label heatmaps with. Nothing is padded; a text longer than the model's positions is cut to them,
as transformers' truncation does (the special tokens stay), and the result says so in plain words. A tokenizer
that makes more than a few tokens a character (:mod:`.tokenizer_growth`) is stopped before it encodes: the text
is normalized first, and a text that grows too much is refused with a ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .tokenizer_files import read_tokenizer
from .tokenizer_growth import check_output

_MASKS = ("[MASK]", "<mask>")  # BERT's and RoBERTa's mask tokens


@dataclass(frozen=True)
class Encoded:
    """One encoded text."""

    ids: list[int]  # token ids, special tokens included
    tokens: list[str]  # the token strings, one per id (GPT-2 shows a leading space as "Ġ")
    type_ids: list[int]  # segment ids: 0 for the first text, 1 for the pair (BERT)
    full_length: int = 0  # tokens the whole text makes (special tokens included), before any cut
    note: str | None = None  # why fewer tokens than the text makes are given, in plain words; None when all are

    @property
    def cut(self) -> bool:
        """Whether the text was cut."""
        return self.full_length > len(self.ids)


class TextTokenizer:
    """Encodes text as a pretrained model's token ids.

    Args:
        tokenizer: a ``tokenizers.Tokenizer``; its padding and truncation are switched off.
        max_length: the most tokens the model reads (its positions); ``None`` for no limit.
    """

    def __init__(self, tokenizer, *, max_length: int | None = None) -> None:
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self.max_length = max_length

    @classmethod
    def from_folder(cls, folder: Path, *, max_length: int | None = None, family: str | None = None) -> TextTokenizer:
        """Read a model folder's tokenizer: ``tokenizer.json``, else ``vocab.json`` + ``merges.txt``, else
        ``vocab.txt`` (see :func:`~.tokenizer_files.read_tokenizer`).

        Raises:
            ValueError: when there is no tokenizer file or it is too large or not a tokenizer.
        """
        return cls(read_tokenizer(Path(folder), family=family), max_length=max_length)

    @property
    def vocab_size(self) -> int:
        """Number of distinct ids the tokenizer can produce (added tokens included)."""
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def mask_token(self) -> str | None:
        """The token a masked language model fills in (``"[MASK]"`` for BERT), or ``None``."""
        return next((t for t in _MASKS if self._tokenizer.token_to_id(t) is not None), None)

    def encode(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True,
               max_length: int | None = None) -> Encoded:
        """Token ids, token strings and segment ids of ``text`` (and ``pair`` as the second segment).

        Args:
            max_length: cut to fewer tokens than the model reads (a viewer's own limit).

        The result holds at most ``min(max_length, self.max_length)`` tokens, the special tokens kept; its
        ``note`` says when and why the text was cut.
        """
        if not isinstance(text, str) or (pair is not None and not isinstance(pair, str)):
            raise ValueError("Only text can be encoded.")
        characters = len(text) + len(pair or "")
        normalizer = self._tokenizer.normalizer
        if normalizer is not None:  # the growth happens here: measure it before any token is made
            check_output(characters, sum(len(normalizer.normalize_str(t)) for t in (text, pair) if t),
                         "characters")
        enc = self._tokenizer.encode(text, pair, add_special_tokens=add_special_tokens)
        check_output(characters, len(enc.ids))
        limits = [n for n in (max_length, self.max_length) if n is not None]
        limit = min(limits) if limits else None
        if limit is None or len(enc.ids) <= limit:
            return Encoded(list(enc.ids), list(enc.tokens), list(enc.type_ids), len(enc.ids))
        full = len(enc.ids)
        enc = self._cut(text, pair, add_special_tokens, limit)
        if self.max_length is not None and limit == self.max_length:
            note = (f"This model reads at most {limit:,} tokens; your text has {full:,}, the first {limit:,} are "
                    "shown.")
        else:
            note = f"Your text makes {full:,} tokens; the first {limit:,} are shown."
        return Encoded(list(enc.ids), list(enc.tokens), list(enc.type_ids), full, note)

    def _cut(self, text: str, pair: str | None, add_special_tokens: bool, limit: int):
        """The encoding cut to ``limit`` tokens before the special tokens are added, longest text first."""
        first = self._tokenizer.encode(text, add_special_tokens=False)
        second = self._tokenizer.encode(pair, add_special_tokens=False) if pair is not None else None
        specials = self._tokenizer.num_special_tokens_to_add(pair is not None) if add_special_tokens else 0
        keep = _longest_first(len(first.ids), len(second.ids) if second else 0, max(0, limit - specials))
        first.truncate(keep[0])
        if second is not None:
            second.truncate(keep[1])
        return self._tokenizer.post_process(first, second, add_special_tokens=add_special_tokens)

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """The text of ``ids``."""
        return self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int | None:
        """The id of one token string, or ``None`` when it is not in the vocabulary."""
        return self._tokenizer.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of one id, or ``None`` when the id is out of range."""
        return self._tokenizer.id_to_token(token_id)


def _longest_first(a: int, b: int, budget: int) -> tuple[int, int]:
    """How many tokens of two texts of ``a`` and ``b`` tokens to keep so that at most ``budget`` remain, taking
    them from the longer text first (transformers' ``"longest_first"``)."""
    excess = a + b - budget
    if excess <= 0:
        return a, b
    longer, shorter = max(a, b), min(a, b)
    if longer - excess >= shorter:
        longer -= excess
    else:  # both end up (almost) equally long
        longer, shorter = budget - budget // 2, budget // 2
    return (longer, shorter) if a >= b else (shorter, longer)
