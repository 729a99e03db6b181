"""The Attention Lab's sentence similarity: a sentence-embedding model's cosine matrix of a few lines of text,
shown instead of fill-ins for models without a masked-LM head."""

from __future__ import annotations

import streamlit as st

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
from ui.attention.controls import SIMILARITY_LINES
from ui.common import charts

LABEL_CHARS = 28  # a line is labelled by its first characters


@st.cache_data(max_entries=6, show_spinner="Embedding the lines…")
def _similarity(_pre: Pretrained, name: str, lines: tuple[str, ...]) -> Similarity:
    """The similarity (``name`` identifies the model in the cache key; the model is not hashed)."""
    return sentence_similarity(_pre, list(lines))


def _label(i: int, line: str) -> str:
    short = line if len(line) <= LABEL_CHARS else line[: LABEL_CHARS - 1] + "…"
    return f"{i + 1}. {short}"


def similarity_section(pre: Pretrained, name: str) -> None:
    """A box of lines and their cosine-similarity matrix; ``name`` tells loaded models apart in the cache."""
    st.subheader("How alike are these sentences?")
    st.session_state.setdefault(SIMILARITY_LINES, "\n".join(EXAMPLE_LINES))
    text = st.text_area(f"Lines to compare (one per line, up to {MAX_LINES})", key=SIMILARITY_LINES, height=150,
                        max_chars=MAX_CHARS,
                        help="Each line becomes one vector: the model's token vectors, pooled and scaled to length "
                             "1. Two lines' cosine similarity is the dot product of their vectors.")
    lines = split_lines(text)
    if not lines:
        st.info("Write a few lines, one per line, to compare them.", icon="⌨️")
        return
    result = _similarity(pre, name, tuple(lines))
    for notice in result.notices:
        st.info(notice, icon="✂️")
    labels = [_label(i, line) for i, line in enumerate(result.lines)]
    spec = hm.matrix_spec(result.cosine.numpy(), labels, labels, scale=charts.colorscale(), diverging=True,
                          zmin=-1.0, zmax=1.0, title="Cosine similarity of the lines' embeddings",
                          hover_name="cosine")
    height = 220 + 44 * len(labels)  # room for the slanted line labels below the cells
    charts.show(charts.spec_figure(spec, numbers=True, height=height), key="attn.similarity_chart")
    pooling = {"mean": "the mean of its token vectors", "cls": "its first token's vector ([CLS])",
               "max": "the largest value of each dimension over its tokens",
               "mean_sqrt_len": "the sum of its token vectors over √(tokens)"}[result.pooling.mode]
    where = "" if result.pooling.source == "default" else f" (from {result.pooling.source})"
    st.caption(f"{pre.name} has no masked-LM head: it is read as a sentence-embedding model. Each line is "
               f"{pooling}{where}, scaled to length 1; each cell is cos(line i, line j), from −1 to 1. Lines read "
               f"as {', '.join(str(n) for n in result.n_tokens)} tokens.")
