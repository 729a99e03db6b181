"""Attention Lab: the words its controls and sentences use for input kinds and masks, in the reader's language.

The tables hold English marked with ``N_`` and are translated where they are shown. A :class:`LabRun` keeps its mask
in English (runs are cached for every visitor), so :func:`shown_mask` turns it into the session's language when the
page writes it; the core's ``ModelFamily.mask_title`` stays English too, and :func:`family_mask` translates it.
"""

from __future__ import annotations

import re

from explorer.i18n import N_, _
from transformer_core.families import family

# The options of the random model's controls: how the text is cut, which mask it uses
KIND_LABELS = {"sentence": N_("Sentence (words)"), "protein": N_("Amino acids"), "digits": N_("Digits")}
MASK_LABELS = {"none": N_("None"), "causal": N_("Causal"), "padding": N_("Padding")}
# How a LabRun's mask reads in a sentence: the random model's mask kinds, and the mask of each trained family (the
# core's ``ModelFamily.mask_title`` stays English; this table, keyed by the family's id, translates it).
MASK_WORDS = {"none": N_("none"), "causal": N_("causal"), "padding": N_("padding")}
FAMILY_MASKS = {"regression": N_("padding (encoder-only model)"), "causal_lm": N_("causal (decoder-only model)"),
                "seq2seq": N_("none (the encoder of the model)"), "masked_lm": N_("none (every position, one segment)")}
# A pretrained model's mask (``ui.attention.pretrained.MASKS``), its model's name filled in
PRETRAINED_MASKS = {"causal": N_("causal ({model} reads left to right)"), "none": N_("none ({model} reads both ways)")}
_PRETRAINED_MASK = re.compile(r"(causal|none) \((.+) reads (?:left to right|both ways)\)")


def family_mask(name: str) -> str:
    """The mask of trained family ``name``, in the session's language (the core's English title when unknown)."""
    title = family(name).mask_title
    return _(FAMILY_MASKS[name]) if name in FAMILY_MASKS else title


def shown_mask(mask: str) -> str:
    """A LabRun's mask (kept in English, since runs are cached for every visitor) in the session's language."""
    if mask in MASK_WORDS:
        return _(MASK_WORDS[mask])
    if mask in FAMILY_MASKS.values():
        return _(mask)
    found = _PRETRAINED_MASK.fullmatch(mask)
    if found:
        return _(PRETRAINED_MASKS[found.group(1)]).format(model=found.group(2))
    return mask
