"""The Attention Lab's head buttons when query heads share key/value heads (grouped-query attention): a layer's
K/V heads as buttons beside its query heads; switching a K/V head off switches its whole group off."""

from __future__ import annotations

import streamlit as st

from explorer.i18n import _
from explorer.lab.kv_groups import groups_off, heads_text, kv_groups, with_groups
from ui.attention.keys import OFF_KV, OFF_PICK


def _kv_changed(layer: int, heads: int, kv: int) -> None:
    """A K/V head button clicked: switch its whole group of query heads off (or back on)."""
    pick = f"{OFF_PICK}{layer}"
    before = groups_off(st.session_state.get(pick, ()), heads, kv)
    now = st.session_state.get(f"{OFF_KV}{layer}") or []
    st.session_state[pick] = with_groups(st.session_state.get(pick, ()), before, now, heads, kv)


def _kv_buttons(layer: int, heads: int, kv: int) -> None:
    """A layer's K/V heads as buttons; one is on when its whole group of query heads is off."""
    key = f"{OFF_KV}{layer}"
    st.session_state[key] = groups_off(st.session_state.get(f"{OFF_PICK}{layer}", ()), heads, kv)
    st.pills(f"L{layer + 1} K/V", list(range(kv)), format_func=lambda g: f"KV{g + 1}", selection_mode="multi",
             key=key, on_change=_kv_changed, args=(layer, heads, kv),
             help=_("Click a key/value head to switch off every query head that reads it (its group); click again "
                    "to switch the group back on."))


def layer_buttons(layer: int, heads: int, kv: int) -> None:
    """One layer's head buttons, its K/V heads first when query heads share them."""
    left, right = st.columns([1, 3]) if kv < heads else (None, st.container())
    if left is not None:
        with left:
            _kv_buttons(layer, heads, kv)
    with right:
        st.pills(_("Layer {n}").format(n=layer + 1), list(range(heads)), format_func=lambda h: f"H{h + 1}",
                 selection_mode="multi", key=f"{OFF_PICK}{layer}",
                 help=_("Click a head of layer {n} to switch it off (click again to switch it back on); the model "
                        "runs again at once.").format(n=layer + 1))


def groups_off_note(layers: int, heads: int, kv: int) -> None:
    """Say which K/V heads are off, and which query heads went with each."""
    groups = kv_groups(heads, kv)
    off = [(layer, g) for layer in range(layers)
           for g in groups_off(st.session_state.get(f"{OFF_PICK}{layer}", ()), heads, kv)]
    if off:
        named = "; ".join(f"L{layer + 1} K/V {g + 1} ({heads_text(groups[g])})" for layer, g in off[:6])
        st.caption(_("K/V heads off: {named}. A K/V head off means every query head of its group is off: they all "
                     "read its keys and values.").format(named=named + (" …" if len(off) > 6 else "")))
