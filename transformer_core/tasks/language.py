"""Character-level language modelling (decoder-only model) on the built-in corpus or on the user's own text.

The built-in corpus comes from the small grammar in :mod:`.grammar`; a model that has learned it writes new
sentences that follow its rules, which :func:`.grammar.is_grammatical` can check. With ``text=...`` the task
trains on any text instead (its characters become the vocabulary).
"""

from __future__ import annotations

import codecs
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import patterns
from ..config import TransformerConfig
from ..models import CausalLM
from .base import Batch, Sample, Task, check_config_type, evaluating, generator_for, model_device, squeeze_attention
from .grammar import generate_corpus, grammar_problem
from .registry import CliOption, TaskEntry, TaskOption, register

MAX_CHARS = 1_000_000  # longer user texts are cut to this many characters
MAX_VOCAB = 256  # distinct characters kept; rarer ones become UNKNOWN
MIN_CHARS = 20  # shortest user text we can learn anything from
BLOCK_SIZE = 64  # characters of context, unless the text is too short for them
SAMPLE_TEMPERATURE = 0.8  # sample predictions: a little safer than the model's own distribution
UNKNOWN = "\ufffd"
CORPUS_SENTENCES = (4000, 400)  # training and validation sentences of the built-in corpus
SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥"}


def show_char(ch: str) -> str:
    """A visible label for one character (spaces and line breaks become symbols)."""
    return SHOWN.get(ch, ch)


def normalise_text(text: str) -> str:
    """Unix line breaks and composed Unicode characters (NFC), so "é" is one character however it was typed."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be trained on, in words for students, or ``None`` when it can.

    :class:`CharLMTask` can use any text of ``MIN_CHARS`` characters with at least two different ones: it keeps
    90% for training and 10% for validation, shortens its context when the training part is shorter than
    ``block_size + 1`` characters, and validates on the training text when the validation part is shorter than
    the context (both with a notice).
    """
    if not isinstance(text, str):
        return "The training text must be text (a string)."
    return _problem(normalise_text(text))


def _problem(text: str) -> str | None:
    """:func:`text_problem` of an already normalised text."""
    if not text.strip():
        return "The text is empty. Paste or upload some text to train on (a few paragraphs work best)."
    if len(text) < MIN_CHARS:
        return (f"The text is too short: {len(text)} characters. Use at least {MIN_CHARS}, so that there are "
                "windows of text to learn from (a few paragraphs work best).")
    if len(set(text)) < 2:
        return f"The text repeats one character ({show_char(text[0])!r}), so there is nothing to predict."
    return None


def clean_text(text: str, *, max_chars: int = MAX_CHARS) -> tuple[str, str | None]:
    """Normalise user text and cut it to ``max_chars``; returns ``(text, notice or None)``.

    Raises:
        ValueError: with :func:`text_problem`'s message when the text cannot be trained on.
    """
    if not isinstance(text, str):
        raise ValueError(text_problem(text))
    text = normalise_text(text)
    problem = _problem(text)
    if problem:
        raise ValueError(problem)
    if len(text) > max_chars:
        return text[:max_chars], f"The text was cut to its first {max_chars:,} of {len(text):,} characters."
    return text, None


def decode_text(data: bytes) -> str:
    """The text of an uploaded file, which must be UTF-8 (a byte-order mark is dropped). Nothing else is parsed.

    Raises:
        ValueError: with a message for students when the bytes are not UTF-8 text (another encoding, or not text).
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ValueError("This file is saved as UTF-16. Save it as UTF-8 text (most editors offer the encoding "
                         "under 'Save as') and upload it again.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"This file is not UTF-8 text: byte {err.start:,} (0x{data[err.start]:02X}) is not "
                         "valid UTF-8. Save it as UTF-8 plain text and upload it again (documents such as .docx "
                         "or .pdf must be exported as plain text first).") from None
    if "\x00" in text:
        raise ValueError("This file contains NUL bytes, so it is not plain text. Upload a .txt file.")
    return text


def split_point(text: str, near: int = 200) -> int:
    """Where the validation part starts: 90% into the text, moved on to the next line (or else word) start when
    one is within ``near`` characters, so that the sample prompts taken from it begin with whole words."""
    cut = len(text) * 9 // 10
    for separator in ("\n", " "):
        start = text.find(separator, cut - 1, cut + near) + 1  # from cut - 1: already at a start is fine
        if 0 < start < len(text):
            return start
    return cut


def build_vocab(text: str) -> tuple[str, str | None]:
    """The vocabulary (a string of distinct characters, most frequent first if capped) and an optional notice."""
    counts = Counter(text)
    if len(counts) <= MAX_VOCAB:
        return "".join(sorted(counts)), None
    kept = [ch for ch, _ in counts.most_common(MAX_VOCAB - 1)]
    notice = (f"The text has {len(counts)} different characters; "
              f"the {len(counts) - len(kept)} rarest became '{UNKNOWN}'.")
    return "".join(sorted(kept)) + UNKNOWN, notice


class CharLMTask(Task):
    """Predict the next character; sample new text with a temperature and top-k.

    Args:
        text: the user's text, or ``None`` for the built-in grammar corpus.
        block_size: characters of context the model sees.
        eval_windows: held-out windows per evaluation.
    """

    name = "char_lm"
    family = "causal_lm"
    metric_name = "val_loss"
    higher_is_better = False
    pattern_names = ("decoder:previous_token",)

    def __init__(self, text: str | None = None, *, block_size: int = BLOCK_SIZE, eval_windows: int = 128) -> None:
        if not 4 <= block_size <= 1024:
            raise ValueError(f"block_size={block_size} must be between 4 and 1024.")
        self.user_text = text is not None
        notices = []
        if text is None:
            train, val = generate_corpus(CORPUS_SENTENCES[0], seed=0), generate_corpus(CORPUS_SENTENCES[1], seed=1)
        else:
            text, notice = clean_text(text)
            notices.append(notice)
            cut = split_point(text)
            train, val = text[:cut], text[cut:]
        self.vocab, notice = build_vocab(train + val)
        notices.append(notice)
        self.stoi = {ch: i for i, ch in enumerate(self.vocab)}
        self.block_size = min(block_size, len(train) - 1)  # a window is block_size + 1 characters
        if self.block_size < block_size:
            notices.append(f"The text is short, so the model reads {self.block_size} characters of context "
                           f"instead of {block_size}.")
        if len(val) <= self.block_size:
            val = train
            notices.append("The text is short, so validation reuses the training text.")
        self.train_text, self.val_text = train, val
        self.known_words = frozenset(train.split())  # judges generated words; a set once, not per sample
        self.train_ids, self.val_ids = self.encode(train), self.encode(val)
        self.eval_windows = eval_windows
        self.notice = " ".join(n for n in notices if n) or None
        self.title = "Character language model" + (" (your text)" if self.user_text else "")
        self.metric_target = 2.0 if self.user_text else 0.75
        self.description = ("Predict the next character of the text, then write new text one character at a time."
                            + ("" if self.user_text else " The corpus comes from a tiny grammar: watch the model "
                               "learn spelling, capital letters, 'a' versus 'an' and verb agreement."))

    def options(self) -> dict[str, Any]:
        return {"block_size": self.block_size}

    def checkpoint_extra(self) -> dict[str, Any]:
        return {"vocab": self.vocab}

    def train_defaults(self) -> dict[str, Any]:
        return {"steps": 400, "batch_size": 32, "lr": 3e-3, "schedule": "cosine", "warmup_steps": 30}

    def encode(self, text: str) -> torch.Tensor:
        """Character ids of ``text`` (unknown characters map to ``UNKNOWN`` if it exists, else are dropped)."""
        unk = self.stoi.get(UNKNOWN)
        ids = [self.stoi.get(ch, unk) for ch in text]
        return torch.tensor([i for i in ids if i is not None], dtype=torch.long)

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """Text of character ids."""
        return "".join(self.vocab[int(i)] for i in ids)

    def default_model_config(self) -> TransformerConfig:
        return TransformerConfig(vocab_size=len(self.vocab), max_len=self.block_size, d_model=64, n_heads=4,
                                 n_layers=2, d_ff=256, norm_position="pre", activation="gelu")

    def build_model(self, config: TransformerConfig) -> nn.Module:
        check_config_type(config, TransformerConfig, self)
        if config.vocab_size < len(self.vocab):
            raise ValueError(f"vocab_size={config.vocab_size} is too small: the text has {len(self.vocab)} "
                             "different characters.")
        if config.max_len < self.block_size:  # rotary tables are built for max_len positions too
            raise ValueError(f"max_len={config.max_len} is shorter than the context of {self.block_size} characters.")
        return CausalLM(config)

    def _windows(self, ids: torch.Tensor, n: int, generator: torch.Generator) -> Batch:
        starts = torch.randint(0, len(ids) - self.block_size, (n,), generator=generator)
        idx = starts[:, None] + torch.arange(self.block_size + 1)  # (B, block + 1)
        chunk = ids[idx]
        return {"idx": chunk[:, :-1], "targets": chunk[:, 1:]}

    def sample_batch(self, batch_size: int, generator: torch.Generator) -> Batch:
        return self._windows(self.train_ids, batch_size, generator)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        logits = model(batch["idx"])  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten())

    def evaluate(self, model: nn.Module, *, seed: int = 0) -> dict[str, float]:
        """Loss (also as ``val_loss``, the headline metric), bits per character and next-character accuracy
        (how often the likeliest character is the right one) on windows of the validation text."""
        batch = self._windows(self.val_ids, self.eval_windows, generator_for(seed))
        device = model_device(model)
        idx, targets = batch["idx"].to(device), batch["targets"].to(device)
        with evaluating(model):
            logits = model(idx)  # (B, T, V)
            loss = float(F.cross_entropy(logits.flatten(0, 1), targets.flatten()))
            accuracy = float((logits.argmax(dim=-1) == targets).float().mean())
        return {"loss": loss, "val_loss": loss, "bits_per_char": loss / float(np.log(2)), "accuracy": accuracy}

    def attention_example(self) -> dict[str, Any]:
        text = self.val_text[: min(self.block_size, 48)]
        ids = self.encode(text)[None, :]
        tokens = [show_char(ch) for ch in self.decode(ids[0])]
        return {"idx": ids, "text": text, "tokens": {"decoder": tokens}, "labels": {"decoder": (tokens, tokens)}}

    def attention(self, model: nn.Module, example: dict[str, Any]) -> dict[str, list[torch.Tensor]]:
        with evaluating(model):
            _, att = model.forward_with_attention(example["idx"].to(model_device(model)))
        return squeeze_attention(att)

    def pattern_scores(self, attention: dict[str, Any], example: dict[str, Any]) -> dict[str, np.ndarray]:
        weights = patterns.as_array(attention["decoder"])  # (L, H, T, T)
        target = patterns.previous_token_target(weights.shape[-1])
        return {"decoder:previous_token": patterns.mask_score(weights, target)}

    def generate_text(self, model: nn.Module, prompt: str = "", n: int = 200, *, temperature: float = 1.0,
                      top_k: int | None = None, seed: int = 0, stop: str | None = None) -> str:
        """Continue ``prompt`` with ``n`` sampled characters and return only the new characters.

        ``temperature`` below 1 makes the text safer and more repetitive, above 1 more surprising; 0 always
        takes the likeliest character. ``top_k`` samples only among the k likeliest characters. ``stop`` (one
        character of the text, e.g. a newline) ends the text early once it is written, stop included.
        """
        ids = self.encode(prompt)
        if len(ids) == 0:  # start as if at the beginning of a line
            ids = self.encode("\n") if "\n" in self.stoi else self.train_ids[:1]
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k={top_k} must be at least 1 (or None for no limit).")
        with evaluating(model):
            out = model.generate(ids[None, :].to(model_device(model)), n, temperature=temperature, top_k=top_k,
                                 generator=generator_for(seed), stop_id=self.stoi.get(stop) if stop else None)
        return self.decode(out[0, len(ids):].cpu())

    def _judge(self, line: str) -> tuple[bool, str]:
        if not self.user_text:
            problem = grammar_problem(line)
            return not problem, problem or "a sentence of the grammar"
        words = line.split()
        real = sum(w in self.known_words for w in words)
        return real == len(words), f"{real} of {len(words)} words appear in the text"

    def samples(self, model: nn.Module, n: int = 8, *, seed: int = 0, temperature: float = SAMPLE_TEMPERATURE,
                top_k: int | None = None, interrupted: Callable[[], bool] | None = None) -> list[Sample]:
        """Held-out lines cut after two words, continued by the model (``temperature``, ``top_k``: see
        :meth:`generate_text`) up to the end of the line.

        Writing text takes one forward pass a character, so ``interrupted`` is asked before each sample: when it
        returns True, the samples made so far are returned (fewer than ``n``) and the caller can give way.
        """
        lines = [line for line in self.val_text.split("\n") if len(line.split()) >= 3] or [self.val_text[:80]]
        rng = np.random.default_rng(seed)
        out = []
        for i in range(n):
            if interrupted is not None and interrupted():
                break
            line = lines[int(rng.integers(len(lines)))]
            cut = len(" ".join(line.split(" ")[:2])) if " " in line else len(line) // 2
            prompt = line[:cut]
            text = self.generate_text(model, prompt, 80, temperature=temperature, top_k=top_k, seed=seed + i,
                                      stop="\n")
            continuation = text.split("\n")[0]
            ok, detail = self._judge(prompt + continuation)
            out.append(Sample(prompt, line[cut:], continuation, ok, detail))
        return out


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


register(TaskEntry("char_lm", CharLMTask, (CliOption("--text-file", "text", Path, "train on this UTF-8 text file",
                                                     read=_read_text),), writes_text=True,
                   options=(TaskOption("block_size", int, 4, 1024),)))
