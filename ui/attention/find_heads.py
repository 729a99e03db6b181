"""The Attention Lab's *Find the heads*: three scores of every head of a pretrained model, as layers × heads maps."""

from __future__ import annotations

import streamlit as st

from explorer.i18n import _, num, percent
from explorer.pretrained.find_heads import SCORES, HeadScores, head_scores
from transformer_core.pretrained import Pretrained
from ui.attention.keys import FIND_SEED, HEAD, JUMP_TO_HEAD, LAYER, VIEW
from ui.common import charts
from ui.common.pretrained import cache_key

REPEAT = 20  # random tokens in the part that is repeated (fewer when the model has fewer positions)
MAX_NUMBERED_HEADS = 6  # with more heads per map the percentages do not fit in the cells; hover shows them


@st.cache_data(max_entries=8, show_spinner=False)
def _scores(_pre: Pretrained, name: str, seed: int) -> HeadScores:
    """The scores (``name`` is the model's :func:`cache_key`; the model itself is not hashed)."""
    length = min(REPEAT, (_pre.config.max_len - 2) // 2)
    return head_scores(_pre, length=length, seed=seed)


def _show_head(layer: int, head: int) -> None:
    """Open the head in the One head view, far up the page: the next run scrolls there (``ui.attention.views``)."""
    st.session_state[LAYER], st.session_state[HEAD], st.session_state[VIEW] = layer + 1, head + 1, "head"
    st.session_state[JUMP_TO_HEAD] = True


def find_heads_section(pre: Pretrained) -> None:
    """Previous-token, first-token and induction score maps, with a button to each map's best head."""
    st.subheader(_("Find the heads"))
    st.columns([1, 3])[0].number_input(_("Sequence seed"), 0, 9999, key=FIND_SEED,
                    help=_("Seed of the random tokens the model reads twice; another seed checks that a head's "
                           "score is not luck."))
    with st.spinner(_("Scoring every head…")):
        result = _scores(pre, cache_key(pre), int(st.session_state.get(FIND_SEED, 0)))
    st.caption(_("{model} reads {n} random tokens twice ({total} tokens in all). A previous-token head looks at the "
                 "token just before; a first-token head parks its attention on position 0 (an “attention sink”); "
                 "an induction head, in the second copy, looks at the token that followed the current one last "
                 "time, which is how a model continues a pattern (Olsson et al. 2022). Each cell is the mean "
                 "attention on the pattern's target, from 0 to 1.").format(model=pre.name, n=num(result.repeat),
                                                                          total=num(len(result.ids))))
    names = list(SCORES)
    layers = [f"L{i + 1}" for i in range(result.scores[names[0]].shape[0])]
    heads = [f"H{i + 1}" for i in range(result.scores[names[0]].shape[1])]
    fig = charts.heatmap_row([result.scores[n] for n in names], [_(SCORES[n]) for n in names], x=heads, y=layers,
                             zmin=0.0, zmax=1.0, diverging=False, numbers=len(heads) <= MAX_NUMBERED_HEADS)
    charts.show(fig, key="attn.find_heads")
    cols = st.columns(len(names))
    for col, name in zip(cols, names, strict=True):
        layer, head, score = result.best(name)
        col.button(_("Best {kind} head: layer {layer}, head {head} ({score})").format(
                       kind=_(SCORES[name]), layer=layer + 1, head=head + 1, score=percent(score, 0)),
                   key=f"attn.find.{name}", on_click=_show_head, args=(layer, head), width="stretch",
                   help=_("Shows this head's attention on your text in the One head view above, and scrolls "
                          "there."))
