"""The token-embedding table as a map: chosen tokens' rows in two dimensions (PCA) and each row's nearest
neighbours by cosine over the whole vocabulary.

The rows are the ones a text looks up before positions are added or anything is scaled (the ``"tokens"`` probe
point of :mod:`transformer_core.probes`). PCA keeps the two directions along which the chosen rows spread most
(singular value decomposition of the centred rows); :attr:`EmbeddingMap.explained` says how much of their spread
those two directions hold, so a student sees how much the flat picture leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from explorer.i18n import _

NEIGHBOURS = 5  # nearest tokens listed per chosen token
MAX_TOKENS = 40  # the most tokens one map shows (their labels must stay readable)


def token_table(model: nn.Module) -> torch.Tensor:
    """The model's token-embedding table ``(V, C)`` (an encoder–decoder model's source table), only read.

    Raises:
        ValueError: for a model without one (a picture model reads patches).
    """
    for owner in ("embed", "src_embed"):
        table = getattr(getattr(model, owner, None), "tokens", None)
        if isinstance(table, nn.Embedding):
            return table.weight
    raise ValueError(_("A {model} has no token-embedding table: it does not read tokens.").format(
        model=type(model).__name__))


@dataclass(frozen=True)
class Plane:
    """Rows projected on their two directions of most spread."""

    coords: np.ndarray  # (N, 2) float64: each row's coordinates along the two directions
    explained: np.ndarray  # (2,) float64: the fraction of the rows' total variance along each direction


def pca_2d(rows: torch.Tensor) -> Plane:
    """PCA of ``rows`` ``(N, C)`` to two dimensions, by the SVD of the centred rows.

    Each direction's sign is fixed so that its largest component is positive (the same picture on every run).

    Raises:
        ValueError: for fewer than three rows (two points lie on a line: there is no second direction).
    """
    x = torch.as_tensor(rows).detach().double()
    if x.dim() != 2 or x.size(0) < 3:
        raise ValueError(_("Choose at least three different tokens to place on the map."))
    x = x - x.mean(dim=0, keepdim=True)  # (N, C) centred
    _u, s, vh = torch.linalg.svd(x, full_matrices=False)  # s (K,), vh (K, C): directions of most spread first
    vh = vh[:2]
    signs = torch.sign(vh.gather(1, vh.abs().argmax(dim=1, keepdim=True)))  # (2, 1)
    vh = vh * torch.where(signs == 0, torch.ones_like(signs), signs)
    total = float((s ** 2).sum())
    explained = (s[:2] ** 2 / total).numpy() if total > 0 else np.zeros(2)
    explained = np.pad(explained, (0, 2 - explained.size))
    coords = (x @ vh.T).numpy()  # (N, 2)
    return Plane(np.pad(coords, ((0, 0), (0, 2 - coords.shape[1]))), explained)


def nearest(table: torch.Tensor, ids: Sequence[int], k: int = NEIGHBOURS) -> tuple[np.ndarray, np.ndarray]:
    """Each id's ``k`` nearest tokens by cosine similarity over the whole table (itself left out).

    Returns:
        ``(ids (N, k) int64, cosines (N, k) float64)``, the most similar first.
    """
    with torch.no_grad():
        weight = table.detach().float()
        norms = weight.norm(dim=1).clamp_min(1e-12)  # (V,)
        rows = weight[torch.as_tensor(list(ids), dtype=torch.long)]  # (N, C)
        cos = (rows @ weight.T) / (norms[list(ids)][:, None] * norms[None, :])  # (N, V)
        cos[torch.arange(len(ids)), torch.as_tensor(list(ids))] = float("-inf")  # not its own neighbour
        top = cos.topk(min(k, weight.size(0) - 1), dim=1)
    return top.indices.numpy(), top.values.double().numpy()


@dataclass(frozen=True)
class EmbeddingMap:
    """Chosen tokens on the PCA plane of their embedding rows, with their nearest neighbours."""

    ids: tuple[int, ...]  # the chosen tokens
    labels: tuple[str, ...]  # one label per chosen token
    plane: Plane  # their rows on the two directions of most spread
    neighbour_ids: np.ndarray  # (N, k) int64: each token's nearest tokens by cosine, most similar first
    neighbour_labels: tuple[tuple[str, ...], ...]  # their labels
    cosines: np.ndarray  # (N, k) float64: their cosine similarities

    def rows(self) -> list[dict[str, object]]:
        """One record per token (its coordinates and neighbours): the CSV's rows."""
        out = []
        for i, (tid, label) in enumerate(zip(self.ids, self.labels, strict=True)):
            row: dict[str, object] = {_("token"): label, _("token_id"): tid, "pc1": float(self.plane.coords[i, 0]),
                                      "pc2": float(self.plane.coords[i, 1])}
            for r, (name, cos) in enumerate(zip(self.neighbour_labels[i], self.cosines[i], strict=True), 1):
                row[_("neighbour_{n}").format(n=r)] = name
                row[_("cosine_{n}").format(n=r)] = float(cos)
            out.append(row)
        return out


def embedding_map(model: nn.Module, ids: Sequence[int], label: Callable[[int], str],
                  k: int = NEIGHBOURS) -> EmbeddingMap:
    """The map of ``ids`` (duplicates dropped, order kept) in ``model``'s token-embedding table.

    Raises:
        ValueError: for fewer than three distinct tokens, more than :data:`MAX_TOKENS`, or ids outside the table.
    """
    table = token_table(model)
    chosen = tuple(dict.fromkeys(int(i) for i in ids))
    if len(chosen) > MAX_TOKENS:
        raise ValueError(_("The map shows at most {most} tokens; you chose {n}.").format(most=MAX_TOKENS,
                                                                                        n=len(chosen)))
    if any(not 0 <= i < table.size(0) for i in chosen):
        raise ValueError(_("Token ids must lie in 0..{last}.").format(last=table.size(0) - 1))

    plane = pca_2d(table.detach()[list(chosen)])
    near, cos = nearest(table, chosen, k)
    names = tuple(tuple(label(int(j)) for j in row) for row in near)
    return EmbeddingMap(chosen, tuple(label(i) for i in chosen), plane, near, names, cos)
