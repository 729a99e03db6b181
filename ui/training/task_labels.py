"""Live Training page: the words the core's registries give in English, in the page's language.

:mod:`transformer_core` stays English: its tasks' titles and descriptions, its model families' names for their
attention, its pattern names and its positional encodings' titles. This table marks each of them for translation,
keyed by what the core calls the thing; where the core's text is not the one written here (a task built with other
options, a name added later), the core's own English text is shown.
"""

from __future__ import annotations

import re
from typing import Any

from explorer.i18n import N_, _, ngettext
from ui.positional import labels as encoding_labels

# Task name -> (title, description), exactly as the task registry's default build writes them.
TASKS: dict[str, tuple[str, str]] = {
    "reverse": (
        N_("Reverse"),
        N_(
            "Write the digits backwards. The first output digit is the last input digit, so the cross-attention should "
            "become an anti-diagonal."
        ),
    ),
    "copy": (
        N_("Copy"),
        N_(
            "Write the digits back unchanged. Each output digit copies the input digit at the same position, so the "
            "cross-attention should become a diagonal."
        ),
    ),
    "sort": (
        N_("Sort"),
        N_(
            "Write the digits in ascending order. Each output digit has to find where that digit sits in the input, so "
            "the cross-attention jumps to the matching source positions."
        ),
    ),
    "induction": (
        N_("Induction (repeat a sequence)"),
        N_(
            "A random string of letters is followed by its repeat. The model can only predict the repeat by looking "
            "back at the first copy: the attention draws a stripe that an 'induction head' makes."
        ),
    ),
    "char_lm": (
        N_("Character language model"),
        N_(
            "Predict the next character of the text, then write new text one character at a time. The corpus comes "
            "from a tiny grammar: watch the model learn spelling, capital letters, 'a' versus 'an' and verb "
            "agreement."
        ),
    ),
    "protein": (
        N_("Protein GRAVY hydropathy"),
        N_(
            "Read a made-up protein sequence and predict its GRAVY hydropathy. The answer depends on every residue, so "
            "the model has to gather information from the whole sequence."
        ),
    ),
    "vit_shapes": (
        N_("Shapes (Vision Transformer)"),
        N_(
            "Name the shape in a small noisy picture (circle, square, triangle, cross). The picture is cut into "
            "patches; the CLS token's attention shows which patches the model looks at."
        ),
    ),
}
# Titles of tasks built another way than the menu's (the character model on the user's own text).
OTHER_TITLES = (N_("Character language model (your text)"),)

# The model families' names for their kinds of attention (transformer_core.families), by their English text.
ATTENTION_TITLES = (
    N_("Self-attention"),
    N_("Self-attention (causal)"),
    N_("Encoder self-attention"),
    N_("Decoder self-attention (causal)"),
    N_("Cross-attention (decoder reads the encoder)"),
    N_("Where the CLS token looks"),
)
# ... and the same inside a sentence ("in the cross-attention (decoder reads the encoder)").
ATTENTION_NAMES = {
    "Self-attention": N_("self-attention"),
    "Self-attention (causal)": N_("self-attention (causal)"),
    "Encoder self-attention": N_("encoder self-attention"),
    "Decoder self-attention (causal)": N_("decoder self-attention (causal)"),
    "Cross-attention (decoder reads the encoder)": N_("cross-attention (decoder reads the encoder)"),
    "Where the CLS token looks": N_("where the CLS token looks"),
}
# Pattern names (transformer_core.patterns.PATTERN_TITLES), by their English text.
PATTERN_TITLES = (
    N_("diagonal"),
    N_("anti-diagonal"),
    N_("sorted-source"),
    N_("previous-token"),
    N_("induction"),
    N_("on the object"),
)
# Positional encodings' menu titles (transformer_core.positional), by their English text.
POSITIONAL_TITLES = tuple(encoding_labels.TITLES.values())
# The Block menu's labels (explorer.lab.block_compare.BLOCKS), by their English text.
BLOCK_TITLES = (N_("GPT-2 block"), N_("Llama block"))
KNOWN = frozenset((*ATTENTION_TITLES, *PATTERN_TITLES, *POSITIONAL_TITLES, *BLOCK_TITLES, *OTHER_TITLES))


def known(text: str) -> str:
    """``text``, one of the core's English labels above, in the page's language (itself when not listed)."""
    return _(text) if text in KNOWN else text


def attention_name(title: str) -> str:
    """The core's attention title ``title`` as a sentence names it, in the page's language."""
    return _(ATTENTION_NAMES[title]) if title in ATTENTION_NAMES else title.lower()


def task_title(task: Any) -> str:
    """The task's menu title in the page's language (the core's own, when it was built another way)."""
    entry = TASKS.get(task.name)
    if entry is not None and entry[0] == task.title:
        return _(entry[0])
    return known(task.title)


def task_description(task: Any) -> str:
    """The task's description for students in the page's language (the core's own as a fallback)."""
    entry = TASKS.get(task.name)
    if entry is not None and entry[1] == task.description:
        return _(entry[1])
    return task.description


_LABEL = re.compile(r"(?P<lane>\w+) · (?P<layers>\d+) layers?, (?P<heads>\d+) heads?(?P<rest>.*)")
_LLAMA = re.compile(r", Llama block \((?P<kv>\d+) K/V heads?\)")
_POSITIONS = re.compile(r", (?:no positions|(?P<title>.+) positions), (?P<norm>pre|post)-norm")


def shown_label(label: str) -> str:
    """A configuration's label (English, as :func:`describe` wrote it into the run) in the page's language; any
    other label as it is."""
    found = _LABEL.fullmatch(label)
    if found is None:
        return label
    layers, heads = int(found["layers"]), int(found["heads"])
    words = ", ".join(
        (
            ngettext("{n} layer", "{n} layers", layers).format(n=layers),
            ngettext("{n} head", "{n} heads", heads).format(n=heads),
        )
    )
    rest = found["rest"]
    if llama := _LLAMA.fullmatch(rest):
        kv = int(llama["kv"])
        words += ", " + ngettext("Llama block ({n} K/V head)", "Llama block ({n} K/V heads)", kv).format(n=kv)
    elif positions := _POSITIONS.fullmatch(rest):
        shown = (
            _("no positions")
            if positions["title"] is None
            else _("{kind} positions").format(kind=known(positions["title"]))
        )
        words += ", " + shown + ", " + (_("pre-norm") if positions["norm"] == "pre" else _("post-norm"))
    elif rest:
        return label
    return f"{found['lane']} · {words}"
