"""The positional encodings as the page names them, in the reader's language.

The registry in :mod:`transformer_core.positional` stays English (its titles are also option values and URL
values); these tables hold the same words marked for translation, keyed by encoding kind. A kind missing here
(one registered later) shows the registry's English words.
"""

from __future__ import annotations

from explorer.i18n import N_, _
from transformer_core import positional

TITLES = {  # the registry's ``title``: its name in a menu
    "none": N_("none"),
    "sinusoidal": N_("sinusoidal"),
    "learned": N_("learned"),
    "rope": N_("rotary (RoPE)"),
    "alibi": N_("ALiBi"),
}
SHORTS = {  # the registry's ``short``: its short name, a panel's title
    "none": N_("None"),
    "sinusoidal": N_("Sinusoidal"),
    "learned": N_("Learned"),
    "rope": N_("RoPE"),
    "alibi": N_("ALiBi"),
}
SUMMARIES = {  # the registry's ``summary``: one sentence on what it does
    "none": N_("leaves every token vector as it is, so all positions look the same"),
    "sinusoidal": N_("adds a fixed row of sines and cosines to each token vector"),
    "learned": N_("adds a trained vector per position to each token vector"),
    "rope": N_("rotates each pair of numbers in the queries and keys by an angle proportional to the position"),
    "alibi": N_("adds nothing to the vectors; each head subtracts slope × distance from its attention scores, "
                "so it works past max_len"),
}


def title(kind: str) -> str:
    """The encoding's name in a menu, translated (the registry's English title for a kind not listed here)."""
    return _(TITLES[kind]) if kind in TITLES else positional.get(kind).title


def short(kind: str) -> str:
    """The encoding's short name, translated."""
    return _(SHORTS[kind]) if kind in SHORTS else positional.get(kind).short


def summary(kind: str) -> str:
    """One sentence on what the encoding does, translated."""
    return _(SUMMARIES[kind]) if kind in SUMMARIES else positional.get(kind).summary
