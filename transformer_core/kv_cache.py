"""The key/value cache of cached decoding: each layer's keys and values of the tokens already read.

A decoder writes one token at a time. Without a cache every new token re-reads the whole sequence; with one, each
layer keeps the keys and values it computed for earlier tokens, and a step projects only the newest token. The
cache belongs to the caller (one per generation), never to the model, so one model can serve several generations
at once. Keys are stored after any rotation (RoPE), so a step rotates only its own new keys.
"""

from __future__ import annotations

import torch


class LayerCache:
    """One attention layer's cached keys and values, in buffers allocated once for ``capacity`` tokens.

    Shape:
        keys and values ``(B, H_kv, S, D)`` with ``S`` the tokens written so far.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity={capacity} must be a positive number of tokens.")
        self.capacity = capacity
        self.length = 0
        self._keys: torch.Tensor | None = None  # (B, H_kv, capacity, D), allocated on the first append
        self._values: torch.Tensor | None = None

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new tokens' ``(B, H_kv, T, D)`` keys and values; return all of them ``(B, H_kv, S + T, D)``."""
        t = keys.size(-2)
        if self.length + t > self.capacity:
            raise ValueError(f"The cache holds {self.capacity} tokens; {self.length} + {t} do not fit.")
        if self._keys is None:
            b, h, _, d = keys.shape
            # Filled in place step by step: no re-copying of the whole cache per token, as torch.cat would do.
            self._keys = keys.new_empty(b, h, self.capacity, d)  # (B, H_kv, L, D)
            self._values = values.new_empty(b, h, self.capacity, values.size(-1))
        end = self.length + t
        self._keys[:, :, self.length:end] = keys
        self._values[:, :, self.length:end] = values
        self.length = end
        return self._keys[:, :, :end], self._values[:, :, :end]  # (B, H_kv, S, D)

    def prefix(self, length: int, capacity: int) -> LayerCache:
        """A new cache holding a copy of this one's first ``length`` tokens, with room for ``capacity`` in all."""
        if not 0 <= length <= self.length:
            raise ValueError(f"The cache holds {self.length} tokens; it has no prefix of {length}.")
        out = LayerCache(max(capacity, length, 1))
        if length and self._keys is not None:
            out.append(self._keys[:, :, :length], self._values[:, :, :length])  # copied: this cache stays intact
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the keys and values written so far."""
        if self._keys is None:
            return 0
        per_token = (self._keys[:, :, :1].numel() + self._values[:, :, :1].numel()) * self._keys.element_size()
        return per_token * self.length


class KVCache:
    """The keys and values of every layer of a decoder: one :class:`LayerCache` per block.

    Args:
        n_layers: blocks of the model.
        capacity: the most tokens the cache will hold (prompt and new tokens together).
    """

    def __init__(self, n_layers: int, capacity: int) -> None:
        self.layers = [LayerCache(capacity) for _ in range(n_layers)]

    @property
    def length(self) -> int:
        """Tokens already read: the absolute position of the next token fed."""
        return self.layers[0].length if self.layers else 0

    @property
    def capacity(self) -> int:
        """The most tokens it can hold."""
        return self.layers[0].capacity if self.layers else 0

    def prefix(self, length: int, capacity: int) -> KVCache:
        """A new cache with a copy of the first ``length`` tokens of every layer and room for ``capacity`` tokens:
        another continuation of those tokens reuses their keys and values, and this cache is left as it was."""
        out = KVCache(0, 1)
        out.layers = [layer.prefix(length, capacity) for layer in self.layers]
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the keys and values of every layer."""
        return sum(layer.nbytes for layer in self.layers)
