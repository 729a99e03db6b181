"""The published shapes of the curated Llama-family models, and the sizes they count to.

Each :class:`LlamaShape` copies the numbers of a model's published ``config.json`` (SmolLM2-135M, SmolLM2-360M,
Qwen2.5-0.5B); the catalogue's parameter counts and download sizes are computed from them here rather than typed in,
and ``tests/explorer/test_published.py`` checks them against ``transformers`` models built from the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LlamaShape:
    """The shape of a Llama-family decoder (RMSNorm, SwiGLU, rotary positions, grouped-query attention)."""

    vocab_size: int  # config.json "vocab_size"
    d_model: int  # "hidden_size"
    d_ff: int  # "intermediate_size": the SwiGLU's hidden width
    n_layers: int  # "num_hidden_layers"
    n_heads: int  # "num_attention_heads": query heads
    n_kv_heads: int  # "num_key_value_heads": key/value heads shared by groups of query heads
    tied: bool  # "tie_word_embeddings": the output layer reuses the token embeddings
    qkv_bias: bool = False  # biases on the query, key and value projections (Qwen2 has them)
    stored_bytes: int = 2  # bytes per stored weight ("torch_dtype": bfloat16)

    @property
    def head_dim(self) -> int:
        """D, the size of each head."""
        return self.d_model // self.n_heads

    @property
    def block_params(self) -> int:
        """Parameters of one block: Q, K, V, O projections, the SwiGLU's gate, up and down, two RMSNorms."""
        kv = self.n_kv_heads * self.head_dim
        attention = 2 * self.d_model * self.d_model + 2 * self.d_model * kv
        if self.qkv_bias:
            attention += self.d_model + 2 * kv
        return attention + 3 * self.d_model * self.d_ff + 2 * self.d_model

    @property
    def n_params(self) -> int:
        """Every parameter, the tied output layer counted once (with the embeddings)."""
        embeddings = self.vocab_size * self.d_model
        head = 0 if self.tied else embeddings
        return embeddings + self.n_layers * self.block_params + self.d_model + head  # + the final RMSNorm

    @property
    def weight_bytes(self) -> int:
        """Bytes of its stored weights (the safetensors file, without its small header)."""
        return self.stored_bytes * self.n_params


SMOLLM2_135M = LlamaShape(vocab_size=49152, d_model=576, d_ff=1536, n_layers=30, n_heads=9, n_kv_heads=3, tied=True)
SMOLLM2_360M = LlamaShape(vocab_size=49152, d_model=960, d_ff=2560, n_layers=32, n_heads=15, n_kv_heads=5, tied=True)
QWEN25_05B = LlamaShape(vocab_size=151936, d_model=896, d_ff=4864, n_layers=24, n_heads=14, n_kv_heads=2, tied=True,
                        qkv_bias=True)
