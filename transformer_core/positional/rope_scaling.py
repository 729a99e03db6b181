"""How published models stretch rotary positions past the length they were trained on: RoPE's frequency scalings.

RoPE rotates feature pair ``i`` of a head of size D by ``position · θ^(-2i/D)``. A scaling changes those inverse
frequencies once, when the table is built:

- ``"linear"`` (Chen et al. 2023, position interpolation): every frequency divided by ``factor``, so ``factor``
  times more positions fit into the angles seen in training.
- ``"llama3"`` (Llama 3.1): by wavelength ``λ = 2π / frequency``. Fast pairs (``λ < L / high_freq_factor``, with L
  the original context length) keep their frequency; slow pairs (``λ > L / low_freq_factor``) are divided by
  ``factor``; in between, ``s = (L / λ - low_freq_factor) / (high_freq_factor - low_freq_factor)`` blends the two,
  ``(1 - s) · f / factor + s · f``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

import torch

SCALINGS = ("none", "linear", "llama3")


@dataclass(frozen=True)
class RopeScaling:
    """A scaling of RoPE's frequencies, as a model's config names it (``TransformerConfig.rope_scaling``)."""

    kind: str = "none"  # "none", "linear" or "llama3"
    factor: float = 1.0  # how many times longer the context becomes (slow frequencies divided by it)
    low_freq_factor: float = 1.0  # llama3: wavelengths above L / low_freq_factor are fully scaled
    high_freq_factor: float = 4.0  # llama3: wavelengths below L / high_freq_factor are kept
    original_max_len: int = 8192  # llama3: the context length L the model was trained on

    def __post_init__(self) -> None:
        if self.kind not in SCALINGS:
            raise ValueError(f"rope_scaling={self.kind!r} is not one of {', '.join(repr(k) for k in SCALINGS)}.")
        for field in fields(self)[1:]:  # every field but the kind is a number
            value = getattr(self, field.name)
            whole = field.type == "int"
            if isinstance(value, bool) or not isinstance(value, numbers.Integral if whole else numbers.Real) \
                    or not math.isfinite(value):
                kind = "a whole number" if whole else "a finite number"
                raise ValueError(f"rope_scaling.{field.name} must be {kind}, got {value!r}.")
            object.__setattr__(self, field.name, int(value) if whole else float(value))  # plain JSON numbers
        if self.factor <= 0:
            raise ValueError(f"rope_scaling.factor={self.factor} must be a positive number.")
        if self.kind == "llama3":
            if not 0 < self.low_freq_factor < self.high_freq_factor:
                raise ValueError(f"rope_scaling.low_freq_factor={self.low_freq_factor} must be positive and below "
                                 f"rope_scaling.high_freq_factor={self.high_freq_factor}.")
            if self.original_max_len <= 0:
                raise ValueError(f"rope_scaling.original_max_len={self.original_max_len} must be positive.")

    def apply(self, inv_freq: torch.Tensor) -> torch.Tensor:
        """The scaled inverse frequencies ``(D/2,)``."""
        if self.kind == "linear":
            return inv_freq / self.factor
        if self.kind == "llama3":
            return self._llama3(inv_freq)
        return inv_freq

    def _llama3(self, inv_freq: torch.Tensor) -> torch.Tensor:
        length = self.original_max_len
        wavelen = 2 * math.pi / inv_freq  # (D/2,)
        smooth = (length / wavelen - self.low_freq_factor) / (self.high_freq_factor - self.low_freq_factor)
        blended = (1 - smooth) * inv_freq / self.factor + smooth * inv_freq
        slow = wavelen > length / self.low_freq_factor
        fast = wavelen < length / self.high_freq_factor
        return torch.where(slow, inv_freq / self.factor, torch.where(fast, inv_freq, blended))
