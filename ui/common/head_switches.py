"""A grid of head switches: per attention stack, one row of pills per layer, one pill per head; a pill on = off.

The heads switched off live in one session-state list of link keys (``"cross.1.3"``, see
:func:`explorer.runs.heads_off.head_key`), so they can travel in a share link and outlive reruns; each row of
pills is filled from that list before it is drawn and writes its row back into it when clicked.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from explorer.i18n import _
from explorer.runs.heads_off import HeadRef, head_key, parse_head_key


def _row_key(key: str, stack: str, layer: int) -> str:
    return f"{key}.{stack}.{layer}"


def _keep_row(key: str, stack: str, layer: int) -> None:
    """Write one row's pills back into the list under ``key``."""
    others = [k for k in st.session_state.get(key, ()) if parse_head_key(k)[:2] != (stack, layer)]
    chosen = [head_key((stack, layer, h)) for h in st.session_state[_row_key(key, stack, layer)] or ()]
    st.session_state[key] = [*others, *chosen]


def head_switches(shape: Mapping[str, tuple[int, int]], off: tuple[HeadRef, ...], *, key: str,
                  titles: Mapping[str, str], side_by_side: bool = True, disabled: bool = False) -> None:
    """Pills for every head of a model with ``shape`` (stack -> (layers, heads)); ``off`` are shown switched on.

    ``key`` is the session-state list of head keys the pills read and write; ``titles`` names the stacks, which
    stand side by side (a full-width page) or one under another (half a page, when comparing).
    """
    wide = side_by_side and len(shape) > 1
    columns = st.columns(len(shape), gap="medium") if wide else [st.container() for _stack in shape]
    for column, (stack, (layers, heads)) in zip(columns, shape.items(), strict=True):
        with column:
            title = titles.get(stack, stack)
            st.markdown(f"**{_(title) if title else title}**")  # a stack's name (N_-marked where defined)
            for layer in range(layers):
                row = _row_key(key, stack, layer)
                chosen = [h for s, la, h in off if (s, la) == (stack, layer)]
                if st.session_state.get(row) != chosen:
                    st.session_state[row] = chosen
                st.pills(_("Layer {layer}").format(layer=layer + 1), list(range(heads)), selection_mode="multi",
                         key=row,
                         format_func=lambda h: f"H{h + 1}", on_change=_keep_row, args=(key, stack, layer),
                         disabled=disabled,
                         help=_("Click a head of layer {layer} to switch it off (its output becomes zero before "
                                "W_O) and click again to switch it back on. The model's weights never change.").format(
                             layer=layer + 1))
