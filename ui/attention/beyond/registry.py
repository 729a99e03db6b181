"""The second lenses the Attention Lab offers, in the order its picker lists them.

Adding a view takes a module of this package (``offered`` and ``draw``, see the package docstring) and one entry
here; its key is its value in the page's link (``attn.beyond=<key>``).
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.i18n import N_


@dataclass(frozen=True)
class LensView:
    """One view of the *Beyond attention* section."""

    key: str  # its value in the page's link, e.g. "why"
    title: str  # the picker's label (English, marked with N_: shown through _())
    module: str  # the module of this package that draws it (imported only when the view is chosen)

    def __post_init__(self) -> None:
        if not self.key.isidentifier() or not self.module.isidentifier():
            raise ValueError(f"A view's key and module must be plain names, got {self.key!r} and {self.module!r}.")


VIEWS: tuple[LensView, ...] = (
    LensView("why", N_("Why this word?"), "why_word"),
    LensView("decide", N_("Where does it decide?"), "decide"),
    LensView("mlp", N_("The MLP half"), "mlp_half"),
    LensView("follow", N_("Follow a word"), "follow_word"),
    LensView("map", N_("Embedding map"), "embedding_map"),

)


def view(key: str) -> LensView | None:
    """The view with ``key``, or ``None``."""
    return next((v for v in VIEWS if v.key == key), None)
