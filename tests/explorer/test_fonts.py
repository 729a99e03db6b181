"""Pictures write Chinese in a font that has it (Noto Sans CJK), and everything else in the usual one."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.render import fonts
from explorer.render.heatmap import matrix_spec
from explorer.render.heatmap_image import spec_png
from explorer.render.plot_image import lines_png

CJK = pytest.mark.skipif(not fonts.cjk_font_installed(),
                         reason="no CJK font installed (Debian: apt-get install fonts-noto-cjk)")


def _draws(font, char: str) -> bytes:
    """The pixels ``font`` draws for ``char``."""
    return bytes(font.getmask(char))


def test_only_cjk_text_needs_a_cjk_font():
    assert fonts.needs_cjk("注意力") and fonts.needs_cjk("Schritt 3 · 步") and fonts.needs_cjk("，")
    assert not fonts.needs_cjk("Aufmerksamkeit über Köpfe — atención ¿sí?") and not fonts.needs_cjk("")


def test_latin_text_keeps_the_usual_font():
    assert fonts.font(12, "weight") is fonts.font(12, "Gewicht")
    assert fonts.font(12, "abc") is fonts.font(12)


@CJK
def test_chinese_text_gets_a_font_that_draws_it():
    font = fonts.font(14, "注意力")
    assert "CJK" in " ".join(font.getname())
    assert _draws(font, "注") != _draws(font, "意")  # real glyphs, not the same empty box twice
    assert font.getbbox("注")[2] > 0


def test_without_a_cjk_font_chinese_falls_back_to_the_usual_font(monkeypatch):
    monkeypatch.setattr(fonts, "CJK_FONTS", (("/nowhere/NoFont.ttc", 0),))
    fonts._font.cache_clear()
    try:
        assert not fonts.cjk_font_installed()
        assert fonts.font(13, "注意力").getname() == fonts.font(13, "attention").getname()
    finally:
        monkeypatch.undo()
        fonts._font.cache_clear()


@CJK
def test_pictures_with_chinese_labels_are_drawn():
    spec = matrix_spec(np.eye(3), ["我", "爱", "你"], ["我", "爱", "你"], title="注意力权重")
    assert spec_png(spec)[:8] == b"\x89PNG\r\n\x1a\n"
    assert lines_png([1, 2, 3], {"损失": [3.0, 2.0, 1.0]}, title="训练", x_title="步", y_title="损失")[:4] == b"\x89PNG"
