"""A tiny English-like grammar that writes the built-in corpus for the character-level language model.

The sentences are simple but full of structure a student can spot in what the model writes: capital letters
after a line break, "a" before consonants and "an" before vowels, verbs that agree with their subject
("the cat sees", "the cats see"), and a full stop at the end of every line. :func:`is_grammatical` checks a
sentence against the same rules, so generated text can be marked right or wrong.
"""

from __future__ import annotations

import random

NAMES = ("Anna", "Ben", "Carla", "Dan", "Eva", "Finn", "Ida", "Omar")
NOUNS = {  # singular -> plural
    "cat": "cats", "dog": "dogs", "bird": "birds", "fox": "foxes", "child": "children", "teacher": "teachers",
    "robot": "robots", "mouse": "mice", "owl": "owls", "farmer": "farmers",
}
THINGS = {"ball": "balls", "apple": "apples", "box": "boxes", "book": "books", "egg": "eggs", "tree": "trees"}
ADJECTIVES = ("small", "big", "red", "happy", "old", "clever", "quiet", "hungry", "orange", "sleepy")
TRANSITIVE = {  # plural / base form -> third person singular
    "see": "sees", "like": "likes", "find": "finds", "chase": "chases", "follow": "follows", "help": "helps",
    "watch": "watches", "carry": "carries",
}
INTRANSITIVE = {"sleep": "sleeps", "run": "runs", "sing": "sings", "wait": "waits", "laugh": "laughs",
                "jump": "jumps"}
ADVERBS = ("quickly", "slowly", "today", "again", "loudly")
PREPOSITIONS = ("near", "behind", "under", "with")
VOWELS = "aeiou"


def _article(word: str) -> str:
    return "an" if word[0] in VOWELS else "a"


def _noun_phrase(rng: random.Random, plural: bool, nouns: dict[str, str], allow_name: bool) -> str:
    if allow_name and not plural and rng.random() < 0.2:
        return rng.choice(NAMES)
    noun = rng.choice(list(nouns))
    noun = nouns[noun] if plural else noun
    adjective = rng.choice(ADJECTIVES) if rng.random() < 0.4 else ""
    words = [adjective, noun] if adjective else [noun]
    det = rng.choice(("the", "some") if plural else ("the", _article(words[0])))
    return " ".join([det, *words])


def _object(rng: random.Random) -> str:
    nouns = THINGS if rng.random() < 0.5 else NOUNS
    return _noun_phrase(rng, rng.random() < 0.3, nouns, allow_name=True)


def sentence(rng: random.Random) -> str:
    """One random sentence, capitalised and ending with a full stop."""
    plural = rng.random() < 0.35
    subject = _noun_phrase(rng, plural, NOUNS, allow_name=True)
    form = rng.randrange(4)
    if form < 2:
        verb = rng.choice(list(TRANSITIVE))
        words = [subject, verb if plural else TRANSITIVE[verb], _object(rng)]
        if form == 1:
            words += [rng.choice(PREPOSITIONS), _object(rng)]
    else:
        verb = rng.choice(list(INTRANSITIVE))
        words = [subject, verb if plural else INTRANSITIVE[verb]]
        words.append(rng.choice(ADVERBS) if form == 2 else f"{rng.choice(PREPOSITIONS)} {_object(rng)}")
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def generate_corpus(n_sentences: int, seed: int = 0) -> str:
    """``n_sentences`` sentences, one per line; the same ``seed`` always gives the same text."""
    rng = random.Random(seed)
    return "".join(sentence(rng) + "\n" for _ in range(n_sentences))


def _parse_np(words: list[str], i: int, nouns: dict[str, str]) -> tuple[int, bool] | None:
    """Parse a noun phrase at ``words[i]``; returns (next index, is plural) or None."""
    if i < len(words) and words[i] in NAMES:
        return i + 1, False
    if i + 1 >= len(words):
        return None
    det, j = words[i].lower(), i + 1
    adjective = words[j] if words[j] in ADJECTIVES else None
    j += adjective is not None
    if j >= len(words):
        return None
    noun = words[j]
    plural = noun in nouns.values()
    if not plural and noun not in nouns:
        return None
    first = adjective or noun
    allowed = ("the", "some") if plural else ("the", _article(first))
    return (j + 1, plural) if det in allowed else None


def _parse_object(words: list[str], i: int) -> int | None:
    for nouns in (NOUNS, THINGS):
        parsed = _parse_np(words, i, nouns)
        if parsed is not None:
            return parsed[0]
    return None


def is_grammatical(text: str) -> bool:
    """Whether one line of text is a complete sentence of the corpus grammar (capital letter and full stop)."""
    text = text.strip()
    if not text.endswith(".") or not text[:1].isupper():
        return False
    words = text[:-1].split(" ")
    if words[0] not in NAMES:
        words[0] = words[0].lower()
    subject = _parse_np(words, 0, NOUNS)
    if subject is None or subject[0] >= len(words):
        return False
    i, plural = subject
    verb = words[i]
    forms = {**TRANSITIVE, **INTRANSITIVE}
    expected = set(forms) if plural else set(forms.values())
    if verb not in expected:
        return False
    rest = words[i + 1 :]
    if verb in TRANSITIVE or verb in TRANSITIVE.values():
        j = _parse_object(words, i + 1)
        if j is None:
            return False
        rest = words[j:]
        return not rest or (rest[0] in PREPOSITIONS and _parse_object(words, j + 1) == len(words))
    if len(rest) == 1:
        return rest[0] in ADVERBS
    return bool(rest) and rest[0] in PREPOSITIONS and _parse_object(words, i + 2) == len(words)


def vocabulary() -> frozenset[str]:
    """Every word the grammar writes, in lower case."""
    words = {*NAMES, *NOUNS, *NOUNS.values(), *THINGS, *THINGS.values(), *ADJECTIVES, *TRANSITIVE,
             *TRANSITIVE.values(), *INTRANSITIVE, *INTRANSITIVE.values(), *ADVERBS, *PREPOSITIONS,
             "the", "some", "a", "an"}
    return frozenset(w.lower() for w in words)


def grammar_problem(text: str) -> str:
    """Why one line is not a sentence of the grammar, in a few words ("" when it is one).

    Says the first made-up word, else a missing full stop or capital, else that the words break the rules.
    """
    text = text.strip()
    if is_grammatical(text):
        return ""
    known = vocabulary()
    unknown = [w for w in text.rstrip(".").split() if w.lower() not in known]
    if unknown:
        return f"'{unknown[0]}' is not a word of the grammar"
    if not text.endswith("."):
        return "the sentence does not end"
    if not text[:1].isupper():
        return "no capital letter at the start"
    return "real words, but they break the grammar's rules"
