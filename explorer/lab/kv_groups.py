"""Grouped-query attention in the Lab's words: which query heads read the same key/value head.

In a model with ``n_kv_heads < n_heads`` (Ainslie et al. 2023), query head ``h`` reads K/V head
``h // (n_heads / n_kv_heads)``: the query heads come in groups, one group per K/V head. Switching a K/V head off
therefore means switching off every query head of its group (their outputs are all computed from it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from explorer.i18n import _, num


def kv_heads_of(config: object) -> int:
    """The number of key/value heads of a model's configuration (``n_kv_heads``; ``None`` or absent: ``n_heads``)."""
    n_kv = getattr(config, "n_kv_heads", None)
    return int(n_kv) if n_kv else int(config.n_heads)


def kv_groups(n_heads: int, n_kv_heads: int) -> tuple[tuple[int, ...], ...]:
    """The query heads (0-based) that read each K/V head, K/V head 0 first.

    Raises:
        ValueError: when ``n_kv_heads`` does not divide ``n_heads``.
    """
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"{n_kv_heads} key/value heads cannot be shared evenly by {n_heads} query heads.")
    size = n_heads // n_kv_heads
    return tuple(tuple(range(g * size, (g + 1) * size)) for g in range(n_kv_heads))


def kv_head_of(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The K/V head query head ``head`` reads (both 0-based)."""
    return head // (n_heads // n_kv_heads)


def heads_text(heads: Sequence[int]) -> str:
    """Query heads as 1-based names: ``H1–H3`` for a run, ``H1, H4`` otherwise."""
    if len(heads) > 2 and list(heads) == list(range(heads[0], heads[-1] + 1)):
        return f"H{heads[0] + 1}–H{heads[-1] + 1}"
    return ", ".join(f"H{h + 1}" for h in heads)


def groups_caption(n_heads: int, n_kv_heads: int) -> str:
    """One sentence saying which query heads share which K/V head ("" when every head has its own)."""
    if n_kv_heads >= n_heads:
        return ""
    groups = kv_groups(n_heads, n_kv_heads)
    kind = (_("multi-query attention: one K/V head") if n_kv_heads == 1
            else _("{n} K/V heads").format(n=num(n_kv_heads)))
    listed = "; ".join(f"K/V {g + 1} → {heads_text(heads)}" for g, heads in enumerate(groups))
    return _("Grouped-query attention: {n} query heads share {kind}, {per} query heads per group ({listed}). Heads "
             "of one group read the same keys and values but ask their own queries.").format(
        n=num(n_heads), kind=kind, per=num(n_heads // n_kv_heads), listed=listed)


def head_title(head: int, n_heads: int, n_kv_heads: int) -> str:
    """A head's name with its group when K/V heads are shared: ``H4 · K/V 2``; plain ``H4`` otherwise."""
    if n_kv_heads >= n_heads:
        return f"H{head + 1}"
    return f"H{head + 1} · K/V {kv_head_of(head, n_heads, n_kv_heads) + 1}"


def groups_off(heads_off: Iterable[int], n_heads: int, n_kv_heads: int) -> list[int]:
    """The K/V heads whose whole group of query heads is in ``heads_off``."""
    off = set(heads_off)
    return [g for g, heads in enumerate(kv_groups(n_heads, n_kv_heads)) if off.issuperset(heads)]


def with_groups(heads_off: Iterable[int], kv_before: Iterable[int], kv_now: Iterable[int], n_heads: int,
                n_kv_heads: int) -> list[int]:
    """The query heads off after the K/V heads off changed from ``kv_before`` to ``kv_now``: a K/V head switched
    off switches its whole group off; one switched back on switches its group back on."""
    groups = kv_groups(n_heads, n_kv_heads)
    off, before, now = set(heads_off), set(kv_before), set(kv_now)
    for g in now - before:
        off |= set(groups[g])
    for g in before - now:
        off -= set(groups[g])
    return sorted(off)
