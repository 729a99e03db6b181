"""How much longer a tokenizer can make a text: refuse files whose normalizers amplify, and cap what one text makes.

A ``tokenizer.json`` is data: its normalizers rewrite the text before it is split into tokens, and a chain of
``Replace`` normalizers can double it at every link (22 links turn ``"a"`` into 4.2 million characters, hence
tokens, in a 1.8 kB file). :func:`normalizer_growth` bounds how many characters one input character can become,
from the normalizer's description alone, and :func:`check_normalizer` refuses a file whose bound exceeds
:data:`MAX_NORMALIZER_GROWTH` before anything is encoded. Unicode normalizations legitimately grow a few rare
characters (NFKC writes U+FDFA as 18 characters), so the bound is generous; :data:`MAX_IDS_PER_CHAR` then caps
what one text may actually make (:func:`check_output`), with a friendly message.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_IDS_PER_CHAR", "MAX_NORMALIZER_GROWTH", "check_normalizer", "check_output", "normalizer_growth"]

MAX_NORMALIZER_GROWTH = 64  # characters one input character may become through the normalizers, at most
MAX_IDS_PER_CHAR = 8  # tokens (or normalized characters) one input character may make (byte-level BPE: up to 4)
SLACK = 64  # ... plus this many for the special tokens and prefixes a tokenizer adds once
# Characters one character can become under each normalizer that rewrites characters one by one (Unicode's
# longest decompositions; BertNormalizer puts spaces around Chinese characters; ByteLevel writes up to 4 bytes).
_PER_CHAR = {"NFC": 3, "NFD": 4, "NFKC": 18, "NFKD": 18, "Precompiled": 18, "ByteLevel": 4, "Lowercase": 3,
             "Strip": 1, "StripAccents": 1, "Nmt": 1}


def normalizer_growth(spec: dict[str, Any] | None) -> tuple[float, int]:
    """``(times, plus)``: a text of n characters becomes at most ``times * n + plus`` through the normalizer that
    ``spec`` (the ``"normalizer"`` of a ``tokenizer.json``) describes; unknown kinds count as :data:`_PER_CHAR`'s
    largest."""
    if not spec:
        return 1.0, 0
    kind = spec.get("type")
    if kind == "Sequence":
        times, plus = 1.0, 0
        for child in spec.get("normalizers") or []:
            t, p = normalizer_growth(child)
            times, plus = times * t, int(min(t * plus + p, 2**62))  # each link rewrites what the last one wrote
        return times, plus
    if kind == "Replace":
        pattern, content = spec.get("pattern") or {}, str(spec.get("content") or "")
        if "String" in pattern and pattern["String"]:
            return max(1.0, len(content) / len(str(pattern["String"]))), 0
        return float(len(content) + 1), len(content)  # a regex may match the empty text: between every character
    if kind in ("Prepend", "Append"):
        return 1.0, len(str(spec.get("prepend") or spec.get("append") or ""))
    if kind == "BertNormalizer":
        return (3.0 if spec.get("handle_chinese_chars", True) else 1.0) * (4.0 if spec.get("strip_accents") else 1.0), 0
    return float(_PER_CHAR.get(kind, max(_PER_CHAR.values()))), 0


def check_normalizer(spec: dict[str, Any] | None) -> None:
    """``ValueError`` when the normalizer ``spec`` describes may make one character into more than
    :data:`MAX_NORMALIZER_GROWTH` (a chain that amplifies)."""
    times, _ = normalizer_growth(spec)
    if times > MAX_NORMALIZER_GROWTH:
        raise ValueError(f"This tokenizer's normalizers can make one character into {times:,.0f} or more, more than "
                         f"the {MAX_NORMALIZER_GROWTH} any published tokenizer needs: its file is refused.")


def check_output(characters: int, produced: int, what: str = "tokens") -> None:
    """``ValueError`` when a text of ``characters`` characters made ``produced`` tokens (or normalized characters),
    more than :data:`MAX_IDS_PER_CHAR` a character (plus :data:`SLACK`)."""
    if produced > MAX_IDS_PER_CHAR * characters + SLACK:
        raise ValueError(f"This tokenizer turns your {characters:,} characters into {produced:,} {what}, more than "
                         f"{MAX_IDS_PER_CHAR} a character: it is not shown. Try another model.")
