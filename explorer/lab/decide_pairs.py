"""Curated text pairs for *Where does it decide?*: two texts that differ in one word, for each kind of model.

A pair is only useful when both texts have the same number of tokens (patching swaps position for position), so
each list is filtered by the model's own tokenizer before it is offered (:func:`fitting_pairs`). Subword pairs
change one word for a word that GPT-2's byte-level BPE writes as one token too (" is"/" are", " Mary"/" John",
" 4"/" 7", " France"/" Italy"); character models get pairs of equal character counts written in their task's
alphabet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from explorer.i18n import N_


@dataclass(frozen=True)
class TextPair:
    """Two texts that differ in a word, and what the difference should change."""

    key: str  # its name in the picker and the link, e.g. "agreement"
    title: str  # the picker's label (English, marked with N_: shown through _())
    clean: str  # the text whose answer patching tries to bring back
    corrupt: str  # the same text with one word changed
    about: str  # what a student should expect, one sentence (English, marked with N_)

    def __post_init__(self) -> None:
        if not self.key.isidentifier() or not self.clean or not self.corrupt:
            raise ValueError(f"A text pair needs a plain key and two texts, got {self.key!r}.")


CAUSAL_PAIRS = (  # GPT-2, Llama, Qwen2: the next token after the text
    TextPair("agreement", N_("Agreement: is / are"), "The keys to the cabinet", "The key to the cabinet",
             N_("A plural subject asks for “are”, a singular one for “is”; the verb is three words away.")),
    TextPair("name", N_("A name (who gets the drink)"), "When Mary and John went to the store, John gave a drink to",
             "When Mary and John went to the store, Mary gave a drink to",
             N_("The answer is the name that was not repeated: Mary on the first text, John on the second.")),
    TextPair("count", N_("A count"), "1 2 3 4 5", "1 2 3 4 7",
             N_("The next number follows the last one: 6 after 5, 8 after 7.")),
    TextPair("fact", N_("A fact (a capital)"), "The capital of France is", "The capital of Italy is",
             N_("A stored fact: Paris for France, Rome for Italy.")),
)
MASKED_PAIRS = (  # BERT-family models: the fill-in for [MASK]
    TextPair("agreement", N_("Agreement: is / are"), "the keys to the cabinet [MASK] on the table.",
             "the key to the cabinet [MASK] on the table.",
             N_("A plural subject asks for “are”, a singular one for “is”.")),
    TextPair("fact", N_("A fact (a capital)"), "paris is the capital of [MASK].", "rome is the capital of [MASK].",
             N_("A stored fact: France for Paris, Italy for Rome.")),
)
GRAMMAR_PAIRS = (  # the character model trained on the built-in grammar corpus: the next character
    TextPair("agreement", N_("Agreement: sing / sings"), "The robot sing", "The birds sing",
             N_("One robot sings (an “s” comes next), several birds sing (a space or a full stop).")),
    TextPair("article", N_("a / an"), "The cat likes an", "The cat likes a ",
             N_("After “an” the next word starts with a vowel; after “a ” with a consonant.")),
)
INDUCTION_PAIRS = (  # the induction task: letters, then their repeat
    TextPair("repeat", N_("One letter of the string changed"), "KDHAPBMCJOELKDHAP", "KDHAPFMCJOELKDHAP",
             N_("The repeat copies the first string: after “KDHAP” comes B on the first text, F on the second.")),
)
DIGIT_PAIRS = (  # the encoder–decoder digit tasks (copy, reverse, sort): the answer's first changed digit
    TextPair("digit", N_("One digit changed"), "31415926", "31475926",
             N_("The answer moves the changed digit where the task puts it; the first output digit that differs is "
                "read.")),
    TextPair("first", N_("The first digit changed"), "52718364", "92718364",
             N_("Only the first input digit changes; copy writes it first, reverse last.")),
)
PAIRS_BY_TASK = {"char_lm": GRAMMAR_PAIRS, "induction": INDUCTION_PAIRS, "copy": DIGIT_PAIRS,
                 "reverse": DIGIT_PAIRS, "sort": DIGIT_PAIRS}


def fitting_pairs(pairs: Sequence[TextPair], lengths: Callable[[str], int | None]) -> list[TextPair]:
    """The pairs whose two texts the model reads as the same, non-zero number of tokens.

    Args:
        lengths: a text's token count for the model, or ``None`` when the model cannot read it (unknown
            characters, too long).
    """
    kept = []
    for pair in pairs:
        a, b = lengths(pair.clean), lengths(pair.corrupt)
        if a and a == b:
            kept.append(pair)
    return kept


def differing(clean: Sequence[str], corrupt: Sequence[str]) -> list[int]:
    """The positions where two token lists of the same length differ."""
    if len(clean) != len(corrupt):
        raise ValueError(f"The token lists have different lengths ({len(clean)} and {len(corrupt)}).")
    return [i for i, (a, b) in enumerate(zip(clean, corrupt, strict=True)) if a != b]
