"""The Attention Lab's sentence similarity: a sentence-embedding model's cosine matrix of a few lines of text,
shown instead of fill-ins for models without a masked-LM head."""

from __future__ import annotations

import streamlit as st

from explorer.i18n import N_, _, num
from explorer.pretrained.similarity import (
    EXAMPLE_LINES,
    MAX_CHARS,
    MAX_LINES,
    Similarity,
    sentence_similarity,
    split_lines,
)
from explorer.render import heatmap as hm
from transformer_core.pretrained import Pretrained
from ui.attention.keys import SIMILARITY_LINES
from ui.common import charts

LABEL_CHARS = 28  # a line is labelled by its first characters


POOLINGS = {"mean": N_("the mean of its token vectors"), "cls": N_("its first token's vector ([CLS])"),
            "max": N_("the largest value of each dimension over its tokens"),
            "mean_sqrt_len": N_("the sum of its token vectors over √(tokens)")}


@st.cache_data(max_entries=6, show_spinner=False)
def _similarity(_pre: Pretrained, name: str, lines: tuple[str, ...]) -> Similarity:
    """The similarity (``name`` identifies the model in the cache key; the model is not hashed)."""
    return sentence_similarity(_pre, list(lines))


def _label(i: int, line: str) -> str:
    short = line if len(line) <= LABEL_CHARS else line[: LABEL_CHARS - 1] + "…"
    return f"{i + 1}. {short}"


def similarity_section(pre: Pretrained, name: str) -> None:
    """A box of lines and their cosine-similarity matrix; ``name`` tells loaded models apart in the cache."""
    st.subheader(_("How alike are these sentences?"))
    st.session_state.setdefault(SIMILARITY_LINES, "\n".join(EXAMPLE_LINES))
    text = st.text_area(_("Lines to compare (one per line, up to {n})").format(n=MAX_LINES), key=SIMILARITY_LINES,
                        height=150, max_chars=MAX_CHARS,
                        help=_("Each line becomes one vector: the model's token vectors, pooled and scaled to "
                               "length 1. Two lines' cosine similarity is the dot product of their vectors."))
    lines = split_lines(text)
    if not lines:
        st.info(_("Write a few lines, one per line, to compare them."), icon="⌨️")
        return
    with st.spinner(_("Embedding the lines…")):
        result = _similarity(pre, name, tuple(lines))
    if len(lines) > MAX_LINES:
        st.info(_("You gave {n} lines; the first {max} are compared.").format(n=num(len(lines)), max=MAX_LINES),
                icon="✂️")
    for notice in result.notices:
        if not notice.startswith("You gave "):  # said above, in the session's language
            st.info(notice, icon="✂️")
    labels = [_label(i, line) for i, line in enumerate(result.lines)]
    spec = hm.matrix_spec(result.cosine.numpy(), labels, labels, scale=charts.colorscale(), diverging=True,
                          zmin=-1.0, zmax=1.0, title=_("Cosine similarity of the lines' embeddings"),
                          hover_name=_("cosine"))
    height = 220 + 44 * len(labels)  # room for the slanted line labels below the cells
    charts.show(charts.spec_figure(spec, numbers=True, height=height), key="attn.similarity_chart")
    pooling = _(POOLINGS[result.pooling.mode])
    if result.pooling.source != "default":
        pooling = _("{pooling} (from {source})").format(pooling=pooling, source=result.pooling.source)
    st.caption(_("{model} has no masked-LM head: it is read as a sentence-embedding model. Each line is {pooling}, "
                 "scaled to length 1; each cell is cos(line i, line j), from −1 to 1. Lines read as {counts} "
                 "tokens.").format(model=pre.name, pooling=pooling,
                                   counts=", ".join(num(n) for n in result.n_tokens)))
