"""The Attention Lab's labels that come from the library's registries have a translatable entry on the page's side."""

from __future__ import annotations

from explorer.lab.internals import MASK_KINDS
from transformer_core.families import FAMILIES
from ui.attention import labels as av
from ui.attention.pretrained import MASKS


def test_every_family_mask_has_a_label() -> None:
    """Each family the Lab can take apart names its mask through the page's table, in the core's English words."""
    with_mask = {f.name: f.mask_title for f in FAMILIES if f.mask_title}
    assert set(with_mask) <= set(av.FAMILY_MASKS)
    for name, title in with_mask.items():
        assert av.FAMILY_MASKS[name] == title
        assert av.family_mask(name) == title  # English: the core's text


def test_shown_masks_read_as_before_in_english() -> None:
    """Every mask a run carries (random, trained, pretrained) reads unchanged in English."""
    shown = [*MASK_KINDS, *av.FAMILY_MASKS.values(), *MASKS.values()]
    assert all(av.shown_mask(mask) == mask for mask in shown)
    assert av.shown_mask("something else") == "something else"
