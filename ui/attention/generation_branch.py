"""*Branch the writing*: at a written token of *Watch it write*, take another of its candidates and write on from
there, beside the first text.

The branch (:func:`explorer.lab.generation_branch.branch_writing`) reuses the first writing's key/value cache up to
the chosen token, so the model reads only the new tokens; it is written live by the section's loop, stopped by the
same Stop button, and kept in ``st.session_state`` beside the writing it came from (per session only).
"""

from __future__ import annotations

import html

import streamlit as st

from explorer.i18n import _, percent
from explorer.lab.generation import Writing
from explorer.lab.generation_branch import Branch, alternatives, branch_writing
from explorer.lab.writing_limit import WRITINGS, WritingRefused
from ui.attention.writers import Writer
from ui.common.chart_style import strong_colour
from ui.training.visitor import visitor

BRANCH = "attn.gen.branch"  # (first Writing, Branch): this session's branch of its writing
BRANCH_TO = "attn.gen.branch.to"  # the candidate's token id the branch writes instead
BRANCH_REFUSED = "attn.gen.branch.refused"  # why the last Branch did not start, once
MARK = "rgba(255, 196, 0, 0.35)"  # background of the tokens where the two texts differ


def current_branch(first: Writing | None) -> Branch | None:
    """This session's branch of ``first``; a branch of another writing is let go."""
    held = st.session_state.get(BRANCH)
    if held is None:
        return None
    if held[0] is not first:
        drop_branch()
        return None
    return held[1]


def running_writing(first: Writing) -> Writing:
    """The writing the section's loop advances: ``first``'s branch while it writes, else ``first``."""
    branch = current_branch(first)
    return branch.writing if branch is not None and not branch.writing.finished else first


def stop_branch() -> None:
    """Stop the branch (Stop's callback): what it wrote stays."""
    held = st.session_state.get(BRANCH)
    if held is not None:
        held[1].writing.stop()
        WRITINGS.release(held[1].writing)


def drop_branch() -> None:
    """Stop and forget the branch (a new writing replaces the first)."""
    stop_branch()
    st.session_state.pop(BRANCH, None)


def _branch(writer: Writer, first: Writing, step: int) -> None:
    """Branch's callback: a new branch (replacing the last one), or the reason why not, kept for the section."""
    drop_branch()
    try:
        branch = branch_writing(writer.model, first, step, int(st.session_state[BRANCH_TO]))
        if not branch.writing.finished:
            WRITINGS.admit(visitor().key, branch.writing)
    except (ValueError, WritingRefused) as err:
        st.session_state[BRANCH_REFUSED] = str(err)
        return
    st.session_state[BRANCH] = (first, branch)


def branch_controls(writer: Writer, first: Writing, step: int) -> None:
    """Under a finished writing: another of ``step``'s candidates (1-based) and the Branch button."""
    st.markdown("**" + _("Branch the writing") + "**")
    token = first.written[step - 1]
    others = alternatives(first, step)
    if not others:
        st.caption(_("Step {step} had no other candidate to write.").format(step=step))
        return
    if st.session_state.get(BRANCH_TO) not in others:
        st.session_state[BRANCH_TO] = others[0]
    names = {c.token_id: f"{c.token} ({percent(c.probability, 1)})" for c in token.candidates}
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        st.selectbox(_("At step {step}, write instead of “{token}”").format(step=step, token=token.token), others,
                     format_func=names.get, key=BRANCH_TO,
                     help=_("One of the step's likeliest tokens (the chart's bars). The model then writes on from "
                            "it with the same settings and seed, beside the first text; the tokens before it are "
                            "not read again (their keys and values are reused)."))
    with right:
        st.button(_("Branch"), icon=":material/call_split:", key="attn.gen.branch.go", on_click=_branch,
                  args=(writer, first, step), width="stretch",
                  help=_("Write on from the chosen token, live; Stop stops the branch too."))
    refused = st.session_state.pop(BRANCH_REFUSED, None)
    if refused:
        st.warning(refused, icon="✋")


def _tokens_html(writing: Writing, differs: list[bool], colour: str) -> str:
    vocab = writing.vocabulary
    parts = [html.escape(vocab.decode(list(writing.prompt_ids)))]
    for token, other in zip(writing.written, differs, strict=True):
        piece = html.escape(vocab.decode([token.token_id]) or token.token)
        style = f"color:{colour}" + (f"; background:{MARK}; border-radius:3px" if other else "")
        parts.append(f'<b style="{style}">{piece}</b>')
    return "".join(parts)


def branch_text(place, first: Writing, branch: Branch) -> None:
    """The first text and the branch in two columns, the tokens where they differ marked, into ``place``."""
    colour = strong_colour()
    box = (f'<div style="font-size:1.05rem; line-height:1.6; padding:0.4rem 0.7rem; white-space:pre-wrap; '
           f'border-left:4px solid {colour}">')
    mine = branch.differs(first)
    theirs = [i >= len(branch.writing.written) or mine[i] for i in range(len(first.written))]
    replaced = first.written[branch.step - 1].token
    with place.container():
        left, right = st.columns(2)
        with left:
            st.caption(_("First writing"))
            st.markdown(box + _tokens_html(first, theirs, colour) + "</div>", unsafe_allow_html=True)
        with right:
            st.caption(_("Branch at step {step}: “{token}” instead of “{replaced}”").format(
                step=branch.step, token=branch.writing.written[branch.step - 1].token, replaced=replaced)
                + f" · {branch.writing.describe()}")
            st.markdown(box + _tokens_html(branch.writing, mine, colour) + "</div>", unsafe_allow_html=True)
