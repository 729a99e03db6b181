"""Model configurations: one frozen, validated dataclass per model family.

Invalid values raise ``ValueError`` with a message a student can act on, so the app can show it as is.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from . import positional
from .feed_forward import FEED_FORWARDS
from .norms import NORM_KINDS
from .positional import RopeScaling

NORM_POSITIONS = ("pre", "post")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")  # gelu_tanh: the tanh approximation GPT-2 uses ("gelu_new")


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in ascending order (the valid head counts for ``d_model=n``)."""
    return [d for d in range(1, n + 1) if n % d == 0]


def _show(value: object) -> str:
    # Quotes make '32' (text) look different from 32 (a number).
    return repr(value) if isinstance(value, str) else str(value)


def whole_number(name: str, value: object) -> int:
    """``value`` as an ``int``; numpy integers count, bools and floats such as 64.5 or 64.0 do not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {_show(value)}.")
    return int(value)


def real_number(name: str, value: object) -> float:
    """``value`` as a finite ``float``; ints and numpy numbers count, bools and text do not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {_show(value)}.")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}.")
    return float(value)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {_show(value)}.")
    return value


def _rope_scaling(name: str, value: object) -> RopeScaling:
    # A dict is what JSON (a checkpoint, a run sent to a trainer process) gives back for the nested value.
    if isinstance(value, dict):
        try:
            return RopeScaling(**value)
        except TypeError as exc:
            raise ValueError(f"{name} has an unknown setting: {exc}") from exc
    if not isinstance(value, RopeScaling):
        raise ValueError(f"{name} must be a RopeScaling, got {_show(value)}.")
    return value


# The check for each field annotation used below (text fields are checked against their choices instead);
# a field with a new annotation raises KeyError at once, so it cannot slip through unchecked.
_TYPE_CHECKS: dict[str, Callable[[str, object], object] | None] = {
    "int": whole_number, "float": real_number, "bool": _flag, "str": None, "RopeScaling": _rope_scaling,
}


def _check_types(config: object) -> None:
    """Check every field against its annotation, before any arithmetic on it can fail with a TypeError.

    Values are stored back as plain Python numbers, so a config built from numpy integers still saves as JSON.
    """
    for field in fields(config):
        annotation, value = field.type, getattr(config, field.name)
        optional = annotation.endswith(" | None")
        check = _TYPE_CHECKS[annotation.removesuffix(" | None")]
        if check is None or (optional and value is None):
            continue
        object.__setattr__(config, field.name, check(field.name, value))  # how a frozen dataclass sets a field


def check_positive(**values: float) -> None:
    """Raise ValueError naming the first value that is zero or negative."""
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{name}={value} must be a positive number.")


def check_heads(d_model: int, n_heads: int) -> None:
    """Raise ValueError, listing the valid head counts, unless ``n_heads`` divides ``d_model``."""
    if d_model % n_heads != 0:
        valid = ", ".join(str(d) for d in divisors(d_model))
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}; "
            f"valid head counts for {d_model} are {valid}."
        )


def check_kv_heads(n_heads: int, n_kv_heads: int) -> None:
    """Raise ValueError unless ``n_kv_heads`` is positive and divides ``n_heads`` (each group the same size)."""
    check_positive(n_kv_heads=n_kv_heads)
    if n_heads % n_kv_heads != 0:
        valid = ", ".join(str(d) for d in divisors(n_heads))
        raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads} (every key/value head serves "
                         f"the same number of query heads); valid counts are {valid}.")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(repr(c) for c in choices)}.")


def _check_dropout(dropout: float) -> None:
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout={dropout} must be at least 0 and below 1.")


@dataclass(frozen=True)
class BlockConfig:
    """What one transformer block is made of: the part of a model's config that every block reads.

    Models build it from their config (:meth:`TransformerConfig.block`, :meth:`ViTConfig.block`), so a block
    built alone and a block inside a model read the same fields.
    """

    d_model: int  # width C of the residual stream
    n_heads: int  # attention heads H; must divide d_model
    d_ff: int  # hidden width of the feed-forward network
    dropout: float = 0.0  # dropout on attention weights and residual branches
    norm_position: str = "pre"  # "pre": norm before each sub-layer; "post": after the residual add (2017 paper)
    norm_type: str = "layernorm"  # "layernorm" or "rmsnorm" (Llama)
    layer_norm_eps: float = 1e-5  # epsilon of every norm
    activation: str = "relu"  # the MLP's non-linearity: "relu", "gelu" or "gelu_tanh"
    feed_forward: str = "mlp"  # "mlp" or "swiglu"
    bias: bool = True  # biases in Linear and LayerNorm layers
    n_kv_heads: int | None = None  # key/value heads (grouped-query attention); None = n_heads
    qkv_bias: bool | None = None  # biases on Q, K and V only; None follows `bias`

    def __post_init__(self) -> None:
        _check_types(self)
        check_positive(d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff,
                       layer_norm_eps=self.layer_norm_eps)
        check_heads(self.d_model, self.n_heads)
        if self.n_kv_heads is not None:
            check_kv_heads(self.n_heads, self.n_kv_heads)
        _check_choice("norm_position", self.norm_position, NORM_POSITIONS)
        _check_choice("norm_type", self.norm_type, tuple(NORM_KINDS))
        _check_choice("activation", self.activation, ACTIVATIONS)
        _check_choice("feed_forward", self.feed_forward, tuple(FEED_FORWARDS))
        _check_dropout(self.dropout)

    @property
    def pre_norm(self) -> bool:
        """Whether each sub-layer reads a normalised copy of the residual stream (``norm_position="pre"``)."""
        return self.norm_position == "pre"


@dataclass(frozen=True)
class TransformerConfig:
    """Configuration shared by the text models (encoder-decoder, decoder-only, encoder-only)."""

    vocab_size: int = 32  # number of distinct tokens, special tokens included
    max_len: int = 64  # longest sequence the positional encoding supports
    d_model: int = 64  # width C of every token vector (the residual stream)
    n_heads: int = 4  # attention heads per layer; must divide d_model
    n_layers: int = 2  # encoder blocks (or decoder blocks for the decoder-only model)
    n_decoder_layers: int | None = None  # decoder blocks of the encoder-decoder model; None means n_layers
    d_ff: int = 256  # hidden width of the position-wise feed-forward network
    dropout: float = 0.0  # dropout on attention weights and residual branches; 0 keeps small runs deterministic
    norm_position: str = "pre"  # WHERE the norms sit: "pre" before each sub-layer (stable), "post" after the add
    norm_type: str = "layernorm"  # WHICH norm: "layernorm" or "rmsnorm" (Llama); layer_norm_eps is RMSNorm's too
    positional: str = "sinusoidal"  # a name from positional.kinds(): "sinusoidal", "learned", "rope", "none", ...
    activation: str = "relu"  # feed-forward non-linearity: "relu" (2017 paper), "gelu" or "gelu_tanh" (GPT-2)
    bias: bool = True  # biases in Linear and LayerNorm layers
    pad_id: int | None = None  # token id used for padding; when set, padding masks are derived from the tokens
    tie_weights: bool = False  # share the token embedding with the output projection (GPT-2, the 2017 paper)
    pos_base: float = 10000.0  # base of the sinusoidal and rotary frequencies
    layer_norm_eps: float = 1e-5  # epsilon of every LayerNorm
    embed_scale: bool = True  # multiply token embeddings by √C (2017 paper); GPT-2 and BERT do not
    feed_forward: str = "mlp"  # "mlp": activation between two layers; "swiglu": down(silu(gate x) * up x), width d_ff
    n_kv_heads: int | None = None  # key/value heads shared by groups of query heads (GQA); None = n_heads, 1 = MQA
    qkv_bias: bool | None = None  # biases on Q, K and V only; None follows `bias` (Qwen2: True with bias False)
    rope_scaling: RopeScaling = RopeScaling()  # how RoPE's frequencies are stretched (kind "none": not at all)

    def __post_init__(self) -> None:
        _check_types(self)
        check_positive(
            vocab_size=self.vocab_size, max_len=self.max_len, d_model=self.d_model, n_heads=self.n_heads,
            n_layers=self.n_layers, d_ff=self.d_ff, pos_base=self.pos_base, layer_norm_eps=self.layer_norm_eps,
        )
        if self.n_decoder_layers is not None:
            check_positive(n_decoder_layers=self.n_decoder_layers)
        _check_choice("positional", self.positional, positional.kinds())
        self.block()  # checks heads, norms, activation, feed-forward and dropout
        if self.rope_scaling.kind != "none" and self.positional != "rope":
            raise ValueError(f"rope_scaling={self.rope_scaling.kind!r} stretches rotary positions; it needs "
                             f"positional='rope', not {self.positional!r}.")
        positional.get(self.positional).check_head_dim(self.d_model, self.n_heads)
        if self.pad_id is not None and not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id={self.pad_id} must be a token id below vocab_size={self.vocab_size}.")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TransformerConfig:
        """The config saved as ``values`` (e.g. ``dataclasses.asdict`` read back from JSON), older names included.

        Configs written before the norm fields were renamed say ``norm`` and ``norm_kind``, and keep RoPE's
        scaling in five ``rope_*`` fields; they are read as ``norm_position``, ``norm_type`` and one
        :class:`~transformer_core.positional.RopeScaling`. Unknown settings raise ``ValueError``.
        """
        values = migrate_old_fields(values)
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)}.")
        return cls(**values)

    @property
    def head_dim(self) -> int:
        """Size D of each head's query, key and value vectors."""
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads H_kv of each attention layer (``n_heads`` unless grouped)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def pre_norm(self) -> bool:
        """Whether the blocks are pre-norm (and the stack therefore ends with a final norm)."""
        return self.norm_position == "pre"

    def block(self) -> BlockConfig:
        """What each of this model's blocks is made of."""
        return BlockConfig(
            d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff, dropout=self.dropout,
            norm_position=self.norm_position, norm_type=self.norm_type, layer_norm_eps=self.layer_norm_eps,
            activation=self.activation, feed_forward=self.feed_forward, bias=self.bias, n_kv_heads=self.n_kv_heads,
            qkv_bias=self.qkv_bias,
        )

    @property
    def decoder_layers(self) -> int:
        """Number of decoder blocks in the encoder-decoder model."""
        return self.n_layers if self.n_decoder_layers is None else self.n_decoder_layers


# Names TransformerConfig's fields had before: the old name -> the new one.
RENAMED_FIELDS = {"norm": "norm_position", "norm_kind": "norm_type"}
# The five loose RoPE-scaling fields of older configs -> RopeScaling's fields.
_OLD_ROPE_FIELDS = {"rope_factor": "factor", "rope_low_freq_factor": "low_freq_factor",
                    "rope_high_freq_factor": "high_freq_factor", "rope_original_max_len": "original_max_len"}


def _name_old_fields(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` that answers a field's old name with its new one, instead of Python's bare "unexpected keyword"."""
    @functools.wraps(init)
    def checked(self: TransformerConfig, *args: Any, **kwargs: Any) -> None:
        old = [name for name in kwargs if name in RENAMED_FIELDS or name in _OLD_ROPE_FIELDS]
        if old:
            new = {**RENAMED_FIELDS, **{k: f"rope_scaling=RopeScaling({v}=...)" for k, v in _OLD_ROPE_FIELDS.items()}}
            raise TypeError("TransformerConfig's fields were renamed: "
                            + "; ".join(f"{name} is now {new[name]}" for name in old)
                            + ". TransformerConfig.from_dict reads configs saved with the old names.")
        init(self, *args, **kwargs)
    return checked


TransformerConfig.__init__ = _name_old_fields(TransformerConfig.__init__)  # type: ignore[method-assign]


def migrate_old_fields(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the field names of older :class:`TransformerConfig` versions replaced by today's."""
    out = dict(values)
    for old, new in RENAMED_FIELDS.items():
        if old in out:
            if new in out:
                raise ValueError(f"both {old!r} (its old name) and {new!r} are set; keep {new!r}.")
            out[new] = out.pop(old)
    rope = {new: out.pop(old) for old, new in _OLD_ROPE_FIELDS.items() if old in out}
    if isinstance(out.get("rope_scaling"), str):  # the old layout: the scaling's kind, its settings beside it
        rope["kind"] = out.pop("rope_scaling")
    if rope:
        if "rope_scaling" in out:
            raise ValueError("rope_scaling is set both as one value and as the old loose rope_* fields.")
        out["rope_scaling"] = RopeScaling(**rope)
    return out


@dataclass(frozen=True)
class ViTConfig:
    """Vision Transformer configuration; the architecture follows Dosovitskiy et al. (2020).

    Pre-norm blocks, GELU, a learnable CLS token, learned positional embeddings over CLS + patches, biases
    everywhere, a final LayerNorm and a linear head on the CLS token.
    """

    image_size: int = 32  # height and width of the (square) input image in pixels
    patch_size: int = 8  # side of each square patch; must divide image_size
    in_channels: int = 3  # colour channels of the input (3 for RGB)
    num_classes: int = 10  # outputs of the classification head
    d_model: int = 64  # width C of every token vector
    n_heads: int = 4  # attention heads per layer; must divide d_model
    n_layers: int = 4  # encoder blocks
    d_ff: int = 256  # hidden width of the MLP in each block (the paper uses 4 * d_model)
    dropout: float = 0.0  # dropout on attention weights, residual branches and embeddings
    layer_norm_eps: float = 1e-6  # epsilon of every LayerNorm (1e-6 as in the reference implementation)

    def __post_init__(self) -> None:
        _check_types(self)
        check_positive(
            image_size=self.image_size, patch_size=self.patch_size, in_channels=self.in_channels,
            num_classes=self.num_classes, d_model=self.d_model, n_heads=self.n_heads, n_layers=self.n_layers,
            d_ff=self.d_ff, layer_norm_eps=self.layer_norm_eps,
        )
        if self.image_size % self.patch_size != 0:
            valid = ", ".join(str(d) for d in divisors(self.image_size))
            raise ValueError(
                f"patch_size={self.patch_size} does not divide image_size={self.image_size}; "
                f"valid patch sizes for {self.image_size} are {valid}."
            )
        check_heads(self.d_model, self.n_heads)
        _check_dropout(self.dropout)

    def block(self) -> BlockConfig:
        """What each of its blocks is made of: pre-norm LayerNorm, GELU MLP and biases everywhere."""
        return BlockConfig(d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff, dropout=self.dropout,
                           norm_position="pre", norm_type="layernorm", layer_norm_eps=self.layer_norm_eps,
                           activation="gelu", feed_forward="mlp", bias=True)

    @property
    def grid_size(self) -> int:
        """Patches along each side of the image."""
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        """Number N of patch tokens (the CLS token not included)."""
        return self.grid_size**2

    @property
    def head_dim(self) -> int:
        """Size D of each head's query, key and value vectors."""
        return self.d_model // self.n_heads
