"""Numbers that explain positional encodings: similarity, rotations, extrapolation and the shuffle test.

- :func:`rotation_check`: ``PE(pos + k)`` is ``PE(pos)`` rotated by a matrix that depends on ``k`` only, one
  2x2 rotation per frequency pair — why a model can learn to attend by relative position.
- :func:`beyond_max_len`: the sinusoidal formula keeps going past ``max_len``; a learned table has no row there.
- :func:`run_past_max_len`: which encodings let a model built for ``max_len`` run on a longer sequence.
- :func:`position_views`: the same token vector placed at every position under each kind of encoding.
- :func:`shuffle_test`: without positions, permuting the input tokens merely permutes the outputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from explorer.i18n import N_, _, num
from explorer.lab.internals import build_lab_encoder, lab_outputs
from transformer_core.config import TransformerConfig
from transformer_core.positional import (
    PositionalEncoding,
    PositionSetting,
    attention_positions,
    get,
    kinds,
    sinusoidal_encoding,
)
from transformer_core.seeding import seeded


def similarity_matrix(table: torch.Tensor, *, cosine: bool = False) -> torch.Tensor:
    """Dot products (or cosine similarities) between every pair of rows: ``(L, C)`` -> ``(L, L)``."""
    table = table.double()
    if cosine:
        table = table / table.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    return (table @ table.t()).float()


def frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Angular frequency ω_i = 1 / base^(2i/d_model) of each (sin, cos) pair: ``(ceil(C/2),)``."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return (1.0 / base ** (two_i / d_model)).float()


@dataclass(frozen=True)
class RotationCheck:
    """``PE(pos + k)`` compared with ``R_k · PE(pos)`` for every frequency pair i (columns 2i, 2i+1)."""

    pos: int  # the position the example rows are taken at
    k: int  # the shift
    omegas: torch.Tensor  # (P,) angular frequency of each pair
    rotations: torch.Tensor  # (P, 2, 2) R_k for each pair: [[cos kω, sin kω], [-sin kω, cos kω]]
    pe_pos: torch.Tensor  # (P, 2) the pair (sin, cos) at pos
    pe_shifted: torch.Tensor  # (P, 2) the pair at pos + k, from the table
    predicted: torch.Tensor  # (P, 2) R_k @ pe_pos
    max_error: float  # largest |R_k PE(p) - PE(p + k)| over every p with p + k < max_len and every pair


def rotation_check(max_len: int, d_model: int, base: float = 10000.0, *, pos: int = 0, k: int = 1) -> RotationCheck:
    """Show that one rotation per frequency pair maps ``PE(p)`` to ``PE(p + k)`` for every position ``p``."""
    if d_model % 2 != 0:
        raise ValueError(f"d_model={d_model} must be even to split the table into (sin, cos) pairs.")
    if not 0 <= pos < max_len or not 0 <= pos + k < max_len:
        raise ValueError(f"pos={pos} and pos + k={pos + k} must both lie in 0..{max_len - 1}.")
    table = sinusoidal_encoding(max_len, d_model, base).double()
    pairs = table.view(max_len, d_model // 2, 2)  # (L, P, 2): (sin, cos) of each frequency
    omegas = frequencies(d_model, base).double()
    cos, sin = torch.cos(k * omegas), torch.sin(k * omegas)  # (P,)
    rot = torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)  # (P, 2, 2)
    moved = torch.einsum("pij,lpj->lpi", rot, pairs)  # (L, P, 2)
    n = max_len - abs(k)
    src, dst = (slice(0, n), slice(k, k + n)) if k >= 0 else (slice(-k, -k + n), slice(0, n))
    error = (moved[src] - pairs[dst]).abs().max().item() if n > 0 else 0.0
    return RotationCheck(pos=pos, k=k, omegas=omegas.float(), rotations=rot.float(), pe_pos=pairs[pos].float(),
                         pe_shifted=pairs[pos + k].float(), predicted=moved[pos].float(), max_error=error)


@dataclass(frozen=True)
class BeyondMaxLen:
    """What happens to positions at and after ``max_len``."""

    table: torch.Tensor  # (max_len + extra, C) the sinusoidal formula evaluated past max_len
    nearest_seen: torch.Tensor  # (extra,) cosine similarity of each new position to the closest seen one
    wavelengths: torch.Tensor  # (P,) wavelength 2π/ω_i of each pair in positions
    learned_error: str  # the message a learned table gives for a sequence one longer than max_len


def beyond_max_len(max_len: int, d_model: int, base: float = 10000.0, *, extra: int = 16) -> BeyondMaxLen:
    """Evaluate the sinusoidal table ``extra`` positions past ``max_len`` and try the same with a learned table."""
    table = sinusoidal_encoding(max_len + extra, d_model, base)
    sims = similarity_matrix(table, cosine=True)[max_len:, :max_len]  # (extra, max_len)
    learned = PositionalEncoding("learned", max_len, d_model)
    try:
        learned(torch.zeros(1, max_len + 1, d_model))
        message = ""
    except ValueError as err:
        message = str(err)
    return BeyondMaxLen(table=table, nearest_seen=sims.max(dim=-1).values,
                        wavelengths=2 * torch.pi / frequencies(d_model, base), learned_error=message)


@dataclass(frozen=True)
class LengthRun:
    """A model built for ``max_len`` positions, run on a longer sequence."""

    kind: str  # the positional encoding
    length: int  # tokens fed to the model (more than max_len)
    error: str  # the model's message when it refused the sequence; "" when it ran
    finite: bool  # whether every output was a finite number (False when it refused)


@torch.no_grad()
def run_past_max_len(max_len: int, d_model: int, base: float = 10000.0, *, extra: int = 16,
                     seed: int = 0) -> list[LengthRun]:
    """Build a small random encoder per registered encoding with ``max_len`` and feed it ``max_len + extra`` tokens."""
    ids = torch.randint(0, 16, (1, max_len + extra), generator=torch.Generator().manual_seed(seed))  # (1, L)
    runs = []
    for kind in kinds():
        config = TransformerConfig(vocab_size=16, max_len=max_len, d_model=d_model, n_heads=2, n_layers=1,
                                   d_ff=2 * d_model, positional=kind, pos_base=base)
        try:
            out = lab_outputs(build_lab_encoder(config, seed), ids[0].tolist())
            runs.append(LengthRun(kind, ids.size(1), "", bool(torch.isfinite(out).all())))
        except ValueError as err:
            runs.append(LengthRun(kind, ids.size(1), str(err), False))
    return runs


def score_bias(kind: str, n_heads: int, length: int) -> torch.Tensor | None:
    """The bias ``(H, L, L)`` an encoding adds to the attention scores of a length-``length`` sequence, or None."""
    inside = attention_positions(kind, 2, n_heads, length)
    if inside is None:
        return None
    return inside.score_bias(length, length, device=torch.device("cpu"), dtype=torch.float32)


def content_vector(d_model: int, seed: int = 0) -> torch.Tensor:
    """A fixed random token vector with unit-variance entries (like a scaled token embedding): ``(C,)``."""
    return torch.randn(d_model, generator=torch.Generator().manual_seed(seed))


def position_views(kind: str, max_len: int, d_model: int, base: float = 10000.0, *,
                   learned_table: torch.Tensor | None = None, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """One token vector u placed at every position, and how alike it looks from position to position.

    Encodings that add a table give u + PE[pos]; ``rope`` rotates each pair of u by pos·ω (as it rotates queries
    and keys); encodings that act on the attention scores (ALiBi) or not at all leave u unchanged, so every
    position looks the same here.

    Returns:
        ``(vectors (L, C), similarity (L, L))`` where similarity is the cosine of the angle between positions.
    """
    spec = get(kind)
    u = content_vector(d_model, seed).expand(max_len, d_model)  # (L, C)
    vectors = u.clone()
    if spec.learnable:
        table = learned_table if learned_table is not None else _random_learned(max_len, d_model, seed)
        if table.shape != (max_len, d_model):
            raise ValueError(f"The learned table has shape {tuple(table.shape)}, expected ({max_len}, {d_model}).")
        vectors = u + table.detach().float().cpu()
    elif spec.table is not None:
        vectors = u + spec.table(PositionSetting(max_len, d_model, base=base))
    inside = attention_positions(kind, d_model, 1, max_len, base)
    if inside is not None:  # one head as wide as the model: rotate u as queries and keys are rotated
        vectors = inside.rotate_qk(vectors[None, None], vectors[None, None])[0][0, 0]  # (L, C)
    return vectors, similarity_matrix(vectors, cosine=True)


def _random_learned(max_len: int, d_model: int, seed: int) -> torch.Tensor:
    with seeded(seed):
        return PositionalEncoding("learned", max_len, d_model).table.detach()


@dataclass(frozen=True)
class ShuffleResult:
    """A real forward pass on a sequence and on a permutation of it."""

    positional: str  # the encoding the model used
    perm: tuple[int, ...]  # shuffled position i holds original token perm[i]
    outputs: torch.Tensor  # (T, C) outputs for the original order
    shuffled_outputs: torch.Tensor  # (T, C) outputs for the shuffled order
    max_diff: float  # max |shuffled_outputs - outputs[perm]|: ~0 means "merely permuted"


@torch.no_grad()
def shuffle_test(ids: Sequence[int], perm: Sequence[int], *, positional: str = "none", d_model: int = 16,
                 n_heads: int = 2, n_layers: int = 2, vocab_size: int = 1024, seed: int = 0) -> ShuffleResult:
    """Run one randomly initialised encoder on ``ids`` and on ``ids`` permuted by ``perm``."""
    if sorted(perm) != list(range(len(ids))):
        raise ValueError(f"perm must be a permutation of 0..{len(ids) - 1}.")
    config = TransformerConfig(vocab_size=vocab_size, max_len=max(len(ids), 1), d_model=d_model, n_heads=n_heads,
                               n_layers=n_layers, d_ff=4 * d_model, positional=positional)
    model = build_lab_encoder(config, seed)
    out = lab_outputs(model, ids)  # (T, C)
    shuffled = lab_outputs(model, [ids[p] for p in perm])
    diff = (shuffled - out[list(perm)]).abs().max().item()
    return ShuffleResult(positional, tuple(perm), out, shuffled, diff)


def learned_table(model: torch.nn.Module) -> torch.Tensor | None:
    """The learned position table ``(L, C)`` of a text model or ViT, or None when it has no learned table."""
    for name in ("embed", "src_embed"):
        positions = getattr(getattr(model, name, None), "positions", None)
        if isinstance(positions, PositionalEncoding) and get(positions.kind).learnable:
            return positions.table.detach().float().cpu()
    pos_embed = getattr(model, "pos_embed", None)
    if isinstance(pos_embed, torch.Tensor) and pos_embed.dim() == 3:
        return pos_embed[0].detach().float().cpu()  # (1, N+1, C) -> (N+1, C)
    return None


def shifted_dot_product(d_model: int, k: int, base: float = 10000.0) -> float:
    """``PE(p) · PE(p + k)`` of the sinusoidal table, the same for every ``p``: Σ_i cos(k ω_i).

    Each (sin, cos) pair contributes sin(ωp)sin(ω(p+k)) + cos(ωp)cos(ω(p+k)) = cos(kω).
    """
    return float(torch.cos(k * frequencies(d_model, base).double()).sum())


def shuffle_permutation(n: int, seed: int) -> list[int]:
    """A random order of ``0..n-1`` drawn from ``seed``, never the identity when ``n > 1`` (the global RNG is
    left alone): position i of the shuffled sequence holds original token ``perm[i]``."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    if n > 1 and perm == list(range(n)):
        perm = perm[1:] + perm[:1]  # a shuffle that changes nothing would prove nothing
    return perm


# The message a model built for max_len gives a longer sequence (transformer_core's, in English), as a student reads
# it in a table: :func:`length_error` translates it; any other message stays as the model wrote it.
TOO_LONG = N_("The sequence has {length} positions but the model was built for max_len={max_len}.")
_TOO_LONG = re.compile(r"The sequence has (?P<length>\d+) positions but the model was built for "
                       r"max_len=(?P<max_len>\d+)\.")


def length_error(message: str) -> str:
    """A model's refusal of a too-long sequence (:attr:`LengthRun.error`) in the active language."""
    found = _TOO_LONG.fullmatch(message)
    if found is None:
        return message
    return _(TOO_LONG).format(length=num(int(found["length"])), max_len=found["max_len"])
