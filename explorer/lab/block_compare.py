"""GPT-2's block beside a Llama block of the same width, counted the way the Model Builder counts: parameters by
component, forward FLOPs per token and the KV cache each token leaves behind.

GPT-2's block (Radford et al. 2019): LayerNorm, multi-head attention with biases, LayerNorm, a GELU MLP of width
``d_ff`` with biases. A Llama block (Touvron et al. 2023): RMSNorm, grouped-query attention without biases
(``n_kv_heads`` K/V heads shared by the query heads; Ainslie et al. 2023), RMSNorm, a SwiGLU feed-forward
(Shazeer 2020) ``down(silu(gate x) * up x)``. SwiGLU has three matrices instead of two, so at equal parameters its
width is two thirds of the MLP's (:func:`swiglu_width`, as the Llama paper chose). FLOPs count the matrix
multiplications only (2 per multiply-add), as ``transformer_core.sizing`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.i18n import N_, _

SWIGLU_MULTIPLE = 8  # the SwiGLU's width is rounded up to a multiple of this


@dataclass(frozen=True)
class BlockCounts:
    """One block's costs."""

    title: str  # e.g. "GPT-2 block"
    attention: int  # parameters of the Q, K, V and output projections (biases included)
    feed_forward: int  # parameters of the feed-forward network
    norms: int  # parameters of the block's two norms
    flops_per_token: int  # forward FLOPs for one token attending over ``context`` tokens
    kv_bytes_per_token: int  # bytes of keys and values one token adds to the cache of this block
    d_ff: int  # the feed-forward's hidden width
    n_kv_heads: int  # key/value heads

    @property
    def parameters(self) -> int:
        """Every parameter of the block."""
        return self.attention + self.feed_forward + self.norms


def swiglu_width(d_ff: int) -> int:
    """The SwiGLU width with about the parameters of an MLP of width ``d_ff``: ⅔ · d_ff, rounded up to a multiple
    of :data:`SWIGLU_MULTIPLE`."""
    two_thirds = -(-2 * d_ff // 3)
    return -(-two_thirds // SWIGLU_MULTIPLE) * SWIGLU_MULTIPLE


def _check(d_model: int, n_heads: int, n_kv_heads: int, context: int, bytes_per_value: int) -> None:
    if d_model < 1 or n_heads < 1 or d_model % n_heads:
        raise ValueError(f"{n_heads} heads must divide d_model={d_model}.")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"{n_kv_heads} K/V heads must divide the {n_heads} query heads.")
    if context < 1 or bytes_per_value < 1:
        raise ValueError("The context and the bytes per value must be positive.")


def gpt2_block(d_model: int, n_heads: int, d_ff: int, *, context: int, bytes_per_value: int = 4) -> BlockCounts:
    """GPT-2's block: every head with its own K and V, biases everywhere, a two-matrix MLP of width ``d_ff``."""
    _check(d_model, n_heads, n_heads, context, bytes_per_value)
    c, f = d_model, d_ff
    attention = 4 * (c * c + c)
    feed_forward = 2 * c * f + f + c
    flops = 8 * c * c + 4 * c * f + 4 * context * c  # projections, MLP, then QKᵀ and weights × V
    return BlockCounts(_("GPT-2 block"), attention, feed_forward, 4 * c, flops, 2 * c * bytes_per_value, f, n_heads)


def llama_block(d_model: int, n_heads: int, n_kv_heads: int, d_ff: int, *, context: int,
                bytes_per_value: int = 4) -> BlockCounts:
    """A Llama block: ``n_kv_heads`` shared K/V heads, no biases, RMSNorms, a SwiGLU of width ``d_ff``."""
    _check(d_model, n_heads, n_kv_heads, context, bytes_per_value)
    c, f, kv = d_model, d_ff, n_kv_heads * (d_model // n_heads)
    attention = 2 * c * c + 2 * c * kv
    feed_forward = 3 * c * f
    flops = 4 * c * c + 4 * c * kv + 6 * c * f + 4 * context * c
    return BlockCounts(_("Llama block ({n} K/V heads)").format(n=n_kv_heads), attention, feed_forward, 2 * c, flops,
                       2 * kv * bytes_per_value, f, n_kv_heads)


def compare_blocks(d_model: int, n_heads: int, d_ff: int, n_kv_heads: int, *, context: int,
                   bytes_per_value: int = 4) -> tuple[BlockCounts, BlockCounts]:
    """GPT-2's block with an MLP of width ``d_ff`` beside a Llama block with the SwiGLU of about its parameters."""
    return (gpt2_block(d_model, n_heads, d_ff, context=context, bytes_per_value=bytes_per_value),
            llama_block(d_model, n_heads, n_kv_heads, swiglu_width(d_ff), context=context,
                        bytes_per_value=bytes_per_value))


BLOCKS = {"gpt": N_("GPT-2 block"), "llama": N_("Llama block")}  # the blocks a decoder-only model can be built from


def block_fields(block: str, n_kv_heads: int) -> dict[str, object]:
    """The ``TransformerConfig`` fields that make a decoder of ``block``'s kind: none for GPT-2's (the task's own
    settings); for a Llama block pre-norm RMSNorm, a SwiGLU feed-forward of width ``d_ff``, rotary positions, no
    biases, no √C embedding scale and ``n_kv_heads`` shared K/V heads.

    Raises:
        ValueError: for a block that is not in :data:`BLOCKS`.
    """
    if block not in BLOCKS:
        raise ValueError(f"block={block!r} is not one of {', '.join(BLOCKS)}.")
    if block == "gpt":
        return {}
    return dict(norm_position="pre", norm_type="rmsnorm", feed_forward="swiglu", positional="rope", bias=False,
                embed_scale=False, n_kv_heads=n_kv_heads)
