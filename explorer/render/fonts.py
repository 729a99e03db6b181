"""The font a picture is drawn in: one that can write its text, Chinese included.

Pillow draws text with the font it is given and leaves empty boxes for characters the font lacks. DejaVu Sans (the
pictures' usual font) has no Chinese, Japanese or Korean characters, so text with any of them is drawn in Noto
Sans CJK (Debian's ``fonts-noto-cjk``) in its Simplified Chinese face, which writes Latin letters and digits too.
Where no CJK font is installed, the usual font is used: the picture is still made, its CJK characters as boxes.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from PIL import ImageFont

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont

# The usual font: DejaVu Sans where Debian puts it, else wherever FreeType finds it by name.
LATIN_FONTS: tuple[tuple[str, int], ...] = (("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 0),
                                             ("DejaVuSans.ttf", 0))
# Fonts with Chinese, best first: (file, face index); Noto Sans CJK's collection holds JP, KR, SC, TC, HK in order.
CJK_FONTS: tuple[tuple[str, int], ...] = (
    ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2),
    ("/usr/share/fonts/opentype/noto/NotoSansCJKsc-Regular.otf", 0),
    ("/usr/share/fonts/truetype/noto/NotoSansCJK-Regular.ttc", 2),
    ("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
    ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0),
    ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),
    ("/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf", 0),
)
# Han ideographs, CJK punctuation, kana, Hangul and full-width forms: characters DejaVu Sans cannot draw.
_CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
                  "\U00020000-\U0003134f]")


def width_units(text: str) -> int:
    """How wide ``text`` is, in Latin characters: a wide character (Chinese, full-width) counts two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def needs_cjk(text: str) -> bool:
    """Whether ``text`` has a character that only a CJK font draws (Chinese, Japanese, Korean, full-width)."""
    return bool(_CJK.search(text))


def _load(candidates: tuple[tuple[str, int], ...], size: int) -> ImageFont.FreeTypeFont | None:
    for path, index in candidates:
        if "/" in path and not Path(path).exists():
            continue
        try:
            return ImageFont.truetype(path, size, index=index)
        except OSError:
            continue
    return None


@lru_cache(maxsize=32)
def _font(size: int, cjk: bool) -> Font:
    found = _load(CJK_FONTS, size) if cjk else None
    return found or _load(LATIN_FONTS, size) or ImageFont.load_default(size)


def cjk_font_installed() -> bool:
    """Whether a font that draws Chinese is installed (else Chinese text is drawn in the usual font, as boxes)."""
    return _load(CJK_FONTS, 12) is not None


def font(size: int, text: str = "") -> Font:
    """A font of ``size`` pixels that can draw ``text`` (all the text a picture writes, so that one font serves it):
    a CJK font when the text needs one and one is installed, else DejaVu Sans (else Pillow's own)."""
    return _font(size, needs_cjk(text))
