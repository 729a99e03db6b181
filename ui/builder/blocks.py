"""Model Builder: *GPT-2 block vs Llama block*, one block of each at the width and heads of the model built above,
counted side by side (parameters by component, forward FLOPs per token, KV cache per token)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.i18n import N_, _, num, percent
from explorer.i18n.quantities import human, human_bytes
from explorer.lab.block_compare import BlockCounts, compare_blocks
from explorer.lab.builder import BuilderSettings
from transformer_core import divisors
from transformer_core.families import by_kind
from ui.builder.controls import BLOCK_KV
from ui.common.urlstate import settle_choice

ROWS = (
    N_("Attention parameters"),
    N_("Feed-forward parameters"),
    N_("Norm parameters"),
    N_("Parameters per block"),
    N_("Feed-forward width"),
    N_("K/V heads"),
    N_("FLOPs per token (forward)"),
    N_("KV cache per token, one block"),
    N_("KV cache per token, whole model"),
)


def _column(block: BlockCounts, layers: int) -> list[str]:
    return [
        num(block.attention),
        num(block.feed_forward),
        num(block.norms),
        num(block.parameters),
        num(block.d_ff),
        str(block.n_kv_heads),
        human(block.flops_per_token),
        human_bytes(block.kv_bytes_per_token),
        human_bytes(layers * block.kv_bytes_per_token),
    ]


def _change(before: int, after: int) -> str:
    """The relative change as "-38%", "+2%" or "≈ 0%" (under half a percent either way)."""
    ratio = (after - before) / before
    return f"≈ {percent(0)}" if abs(ratio) < 0.005 else ("+" if ratio > 0 else "") + percent(ratio)


def block_table(gpt2: BlockCounts, llama: BlockCounts, layers: int) -> pd.DataFrame:
    """The two blocks as columns, one row per count, and the Llama block's change in each cost in the last column
    (the widths and head counts have none)."""
    costs = [
        (gpt2.attention, llama.attention),
        (gpt2.feed_forward, llama.feed_forward),
        (gpt2.norms, llama.norms),
        (gpt2.parameters, llama.parameters),
        None,
        None,
        (gpt2.flops_per_token, llama.flops_per_token),
        (gpt2.kv_bytes_per_token, llama.kv_bytes_per_token),
        (gpt2.kv_bytes_per_token, llama.kv_bytes_per_token),
    ]
    change = ["" if pair is None else _change(*pair) for pair in costs]
    return pd.DataFrame(
        {
            _("GPT-2 block"): _column(gpt2, layers),
            _("Llama block"): _column(llama, layers),
            _("Llama vs GPT-2"): change,
        },
        index=[_(row) for row in ROWS],
    )


def block_comparison(settings: BuilderSettings) -> None:
    """The K/V-heads control and the two blocks counted at the Builder's width, heads, d_ff and length."""
    st.subheader(_("GPT-2 block vs Llama block"))
    if by_kind(settings.kind).reads_images:
        st.caption(_("Pick a text model above (decoder, encoder or encoder–decoder) to compare the two text blocks."))
        return
    options = divisors(settings.n_heads)
    settle_choice(
        BLOCK_KV, options, why=_("K/V heads must divide the {heads} query heads").format(heads=settings.n_heads)
    )
    kv = st.columns([1, 2])[0].select_slider(
        _("K/V heads of the Llama block"),
        options,
        key=BLOCK_KV,
        help=_(
            "Grouped-query attention: the query heads share this many key/value heads. Equal "
            "to the heads: every head has its own (as in GPT-2); 1: multi-query attention. "
            "Fewer K/V heads shrink the K and V projections and the KV cache."
        ),
    )
    gpt2, llama = compare_blocks(settings.d_model, settings.n_heads, settings.d_ff, kv, context=settings.seq_len)
    st.table(block_table(gpt2, llama, settings.n_layers))
    st.caption(
        _(
            "One block at d_model {d_model} with {heads} heads. GPT-2: LayerNorm, attention with biases, a GELU "
            "MLP of width {gpt2_ff}. Llama: RMSNorm (a scale, no bias), no biases, {kv} K/V heads, a SwiGLU of "
            "width {llama_ff} (⅔ of {gpt2_ff}: it has three matrices, so the feed-forward keeps about its "
            "parameters). FLOPs: matrix multiplications for one token attending over {tokens} tokens. KV cache: "
            "the keys and values a generated token leaves for later ones, float32, in each of the {layers} "
            "layers."
        ).format(
            d_model=settings.d_model,
            heads=settings.n_heads,
            gpt2_ff=gpt2.d_ff,
            kv=kv,
            llama_ff=llama.d_ff,
            tokens=num(settings.seq_len),
            layers=settings.n_layers,
        )
    )
