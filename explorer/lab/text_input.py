"""Turn a short text typed by a learner into tokens and ids for the Attention Lab.

Three kinds of input: a sentence (word-level: words, punctuation marks and emoji are tokens), an amino-acid
sequence (one residue per token) and a digit sequence (one digit per token). Whitespace separates tokens and is
never a token itself. Characters outside a kind's alphabet are dropped and named, and long inputs are cut to
``max_tokens``, with a notice for each, so the caller can tell the learner what happened.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from explorer.i18n import _, ngettext, num

INPUT_KINDS = ("sentence", "protein", "digits")
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # the 20 standard residues, one-letter codes
DIGITS = "0123456789"
PAD_TOKEN = "<pad>"
PAD_ID = 0  # id of PAD_TOKEN in every lab vocabulary
MAX_TOKENS = 48  # longest input the lab shows; longer ones are cut
# Characters a box of one text takes: far more than MAX_TOKENS tokens need, because the browser drops a paste
# longer than a box's limit without a word; a pasted paragraph is taken and cut to its first tokens with a notice.
MAX_TEXT_CHARS = 2_000
SENTENCE_BUCKETS = 1023  # words are hashed into this many ids (after the padding id)
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}  # labels of whitespace tokens in a character vocabulary

# A word, a flag (two regional indicators), or one symbol with its emoji modifiers and zero-width-joined parts.
# Invisible format characters (zero-width spaces and joiners, direction marks, a lone variation selector, a
# byte-order mark) start no token: a text of them alone is as empty as one of spaces.
_MODS = "\ufe0f\U0001f3fb-\U0001f3ff"
_INVISIBLE = "\u200b-\u200f\u2060-\u2064\ufe0f\ufeff"
_SENTENCE = re.compile(
    rf"\w+|[\U0001f1e6-\U0001f1ff]{{2}}|[^\w\s{_INVISIBLE}][{_MODS}]*(?:\u200d[^\w\s][{_MODS}]*)*"
)


@dataclass(frozen=True)
class LabInput:
    """Tokens and ids of one input, with what had to be changed to get them."""

    tokens: tuple[str, ...]  # the tokens shown to the learner, in order
    ids: tuple[int, ...]  # one id per token
    vocab_size: int  # size of the vocabulary the ids come from
    dropped: tuple[str, ...] = ()  # distinct characters removed because the vocabulary lacks them
    original_length: int | None = None  # token count before cutting to max_tokens, when it was cut
    valid: tuple[bool, ...] | None = None  # after pad_input: True for real tokens, False for padding

    @property
    def empty(self) -> bool:
        """True when nothing is left to show."""
        return not self.tokens

    @property
    def real_count(self) -> int:
        """How many of :attr:`tokens` are the input's own (padding left out)."""
        return len(self.tokens) if self.valid is None else sum(self.valid)

    def notices(self) -> list[str]:
        """Friendly sentences about dropped characters and cut inputs (empty when nothing changed)."""
        out = []
        if self.dropped:
            shown = " ".join(repr(ch) for ch in self.dropped[:12])
            if len(self.dropped) > 12:
                out.append(_("Dropped characters this vocabulary does not contain: {shown} and {n} more.").format(
                    shown=shown, n=num(len(self.dropped) - 12)))
            else:
                out.append(_("Dropped characters this vocabulary does not contain: {shown}.").format(shown=shown))
        if self.original_length is not None:
            kept = self.real_count
            out.append(ngettext("The input has {total} tokens; only the first {n} is used.",
                                "The input has {total} tokens; only the first {n} are used.",
                                kept).format(total=num(self.original_length), n=num(kept)))
        return out


def tokenize(text: str, kind: str = "sentence", max_tokens: int = MAX_TOKENS) -> LabInput:
    """Split ``text`` into the tokens of ``kind`` (one of :data:`INPUT_KINDS`) and give each an id.

    Sentence words are hashed to ids (case-insensitively), so the same word always gets the same id;
    residues and digits have fixed ids. Id 0 is reserved for padding.
    """
    if kind not in INPUT_KINDS:
        raise ValueError(f"Input kind {kind!r} is not one of {', '.join(INPUT_KINDS)}.")
    if max_tokens <= 0:
        raise ValueError(f"max_tokens={max_tokens} must be positive.")
    if kind == "sentence":
        tokens = _SENTENCE.findall(text)
        ids = [_word_id(tok) for tok in tokens]
        return _cut(LabInput(tuple(tokens), tuple(ids), SENTENCE_BUCKETS + 1), max_tokens)
    alphabet = AMINO_ACIDS if kind == "protein" else DIGITS
    chars = text.upper() if kind == "protein" else text
    vocab = {ch: i + 1 for i, ch in enumerate(alphabet)}
    return encode_chars(chars, vocab, max_tokens=max_tokens, vocab_size=len(alphabet) + 1)


def _word_id(token: str) -> int:
    return 1 + zlib.crc32(token.lower().encode("utf-8")) % SENTENCE_BUCKETS


def encode_chars(text: str, vocab: Mapping[str, int], *, max_tokens: int = MAX_TOKENS,
                 vocab_size: int | None = None) -> LabInput:
    """One token per character of ``text`` that ``vocab`` knows; other characters are dropped (and named,
    except whitespace). Whitespace that ``vocab`` knows is a token, labelled ␣, ↵ or ⇥."""
    chars, dropped = [], []
    for ch in text:
        if ch in vocab:
            chars.append(ch)
        elif not ch.isspace() and ch not in dropped:
            dropped.append(ch)
    size = vocab_size if vocab_size is not None else max(vocab.values(), default=0) + 1
    tokens = tuple(_VISIBLE.get(ch, ch) for ch in chars)
    lab = LabInput(tokens, tuple(vocab[ch] for ch in chars), size, tuple(dropped))
    return _cut(lab, max_tokens)


def _cut(lab: LabInput, max_tokens: int) -> LabInput:
    if len(lab.tokens) <= max_tokens:
        return lab
    return replace(lab, tokens=lab.tokens[:max_tokens], ids=lab.ids[:max_tokens],
                   original_length=len(lab.tokens))


def pad_input(lab: LabInput, length: int) -> LabInput:
    """Append :data:`PAD_TOKEN` up to ``length`` tokens and record which positions are real."""
    n_pad = max(0, length - len(lab.tokens))
    return replace(lab, tokens=lab.tokens + (PAD_TOKEN,) * n_pad, ids=lab.ids + (PAD_ID,) * n_pad,
                   valid=(True,) * len(lab.tokens) + (False,) * n_pad)


def padded_length(n_tokens: int, multiple: int = 4, min_pads: int = 2) -> int:
    """A fixed batch length for the padding demo: at least ``min_pads`` pads, rounded up to ``multiple``."""
    return -(-(n_tokens + min_pads) // multiple) * multiple


def task_vocabulary(task: object) -> dict[str, int] | None:
    """The character -> id map of a built-in task's inputs, or None when the task does not expose one.

    Looks for, in order: a ``stoi`` mapping, a ``vocab`` mapping or list, an ``itos`` list, then the task's own
    ``input_vocabulary()`` (the digit, protein and induction tasks).
    """
    for name in ("stoi", "vocab", "itos"):
        table = getattr(task, name, None)
        if isinstance(table, Mapping):
            return {str(k): int(v) for k, v in table.items() if isinstance(k, str) and len(k) == 1}
        if isinstance(table, Sequence) and not isinstance(table, str):
            return {str(s): i for i, s in enumerate(table) if isinstance(s, str) and len(s) == 1}
    declared = getattr(task, "input_vocabulary", None)  # a Task says so itself
    return declared() if callable(declared) else None


def encode_for_task(task: object, text: str, *, max_tokens: int = MAX_TOKENS) -> LabInput:
    """Encode ``text`` character by character in the vocabulary of a trained model's task.

    Raises:
        ValueError: when the task has no character vocabulary the lab can use.
    """
    vocab = task_vocabulary(task)
    if not vocab:
        title = getattr(task, "title", "") or type(task).__name__
        raise ValueError(_("The {title} task does not expose a character vocabulary, so the lab cannot encode "
                           "your text for this model.").format(title=title))
    if any(ch.isalpha() for ch in vocab) and not any(ch.islower() for ch in vocab):
        text = text.upper()  # e.g. amino acids: accept lowercase input
    return encode_chars(text, vocab, max_tokens=max_tokens, vocab_size=max(vocab.values()) + 1)
