"""The page registry and the preamble every page script starts with.

:data:`PAGES` lists each page once — script, title, icon, url path, navigation group, the blurb the Home page
shows and the settings that travel in its URL. ``app.py`` builds the navigation from it and the Home page its
page list. A page script starts with :func:`open_page` (router check, title, URL settings), draws the share
link with :func:`share_page` where it wants it, and ends with :func:`close_page` (the URL follows the widgets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import streamlit as st

from explorer.i18n import N_, _, ngettext, num
from transformer_core import positional as encodings
from ui.attention import keys as attention
from ui.builder import controls as builder
from ui.common import state
from ui.common.router import ensure_router
from ui.common.sharelink import share_link
from ui.common.theme import projector
from ui.common.urlstate import UrlParam, bind_url, push_url
from ui.lessons import frame as lessons
from ui.lessons.texts import LESSONS
from ui.positional import labels as encoding_labels
from ui.positional import views as positional
from ui.training import controls as training
from ui.vit import controls as vit


def encoding_titles(*, with_none: bool = True) -> list[str]:
    """The registered positional encodings as the pages name them, in registry order ("sinusoidal", ..., "ALiBi"),
    in the session's language."""
    kinds = [k for k in encodings.kinds() if with_none or encodings.get(k).acts != "nothing"]
    return [encoding_labels.title(k) for k in kinds]


SETTINGS_LABEL = N_("⚙️ Settings")  # the collapsed panel that holds a page's settings in projector mode (shown _())


@dataclass(frozen=True)
class PageInfo:
    """One page of the app."""

    name: str  # the page's name for URL state (its url path, "home" for the default page)
    path: str  # the script, relative to the repository root
    title: str  # shown in the navigation and as the page's heading (English, marked N_; shown through _())
    icon: str  # an emoji, in the navigation and before the heading
    url_path: str  # the page's address ("" for the default page)
    section: str  # the navigation group (English, marked N_; shown through _())
    about: str | Callable[[], str] = ""  # what the page teaches (marked N_), or a function that says it in the
    # session's language; "" for Home itself. Read it with :attr:`blurb`
    params: tuple[UrlParam, ...] = ()  # the settings a link to the page carries
    headline: str = ""  # the page's heading when it is not its icon and title

    @property
    def heading(self) -> str:
        """The heading at the top of the page, in the session's language."""
        return self.headline or f"{self.icon} {_(self.title)}"

    @property
    def blurb(self) -> str:
        """What the page teaches, on the Home page, in the session's language ("" for Home itself)."""
        if callable(self.about):
            return self.about()
        return _(self.about) if self.about else ""


def lessons_blurb() -> str:
    """The Lessons page's line on Home, naming every lesson of the one registry (``ui.lessons.texts.LESSONS``)."""
    names = " · ".join(f"{lesson.icon} {_(lesson.title)}" for lesson in LESSONS)
    return ngettext("{n} short guided scenario for a classroom: {lessons}.",
                    "{n} short guided scenarios for a classroom: {lessons}.", len(LESSONS)).format(
        n=num(len(LESSONS)), lessons=names)


def positional_blurb() -> str:
    """The Positional Encodings page's line on Home, naming every registered encoding."""
    return _("Why attention needs positions: the sinusoidal table, why PE(pos + k) is a rotation of PE(pos), every "
             "encoding ({encodings}) compared, how each runs past max_len, and the shuffle test.").format(
        encodings=", ".join(encoding_titles()))


PAGES: tuple[PageInfo, ...] = (
    PageInfo("home", "pages/home.py", N_("Home"), "🏠", "", N_("Start"), headline="🔭 Transformer Explorer"),
    PageInfo("lessons", "pages/lessons.py", N_("Lessons"), "🎓", "lessons", N_("Start"),
             lessons_blurb, lessons.URL_PARAMS),
    PageInfo("attention", "pages/attention.py", N_("Attention Lab"), "🔍", "attention", N_("Explore"),
             N_("Scaled dot-product and multi-head attention step by step — X → Q, K, V → QKᵀ → ÷√d_k → mask → "
                "softmax → ×V → concatenate heads → W_O — with the real numbers, causal and padding masks, and every "
                "layer × head at once."), attention.URL_PARAMS),
    PageInfo("positional", "pages/positional.py", N_("Positional Encodings"), "〰️", "positional", N_("Explore"),
             positional_blurb, positional.URL_PARAMS),
    PageInfo("vit", "pages/vit.py", N_("ViT Patching"), "🖼️", "vit", N_("Explore"),
             N_("How an image becomes tokens: patches, flattening, the linear projection, the CLS token and "
                "positional embeddings, and where the CLS token looks (attention rollout)."), vit.URL_PARAMS),
    PageInfo("builder", "pages/builder.py", N_("Model Builder"), "🧱", "builder", N_("Explore"),
             N_("Configure encoder-only, decoder-only, encoder–decoder or ViT models and see parameters, FLOPs and "
                "memory, next to BERT-base, GPT-2 small, the original Transformer and ViT-B/16."), builder.URL_PARAMS),
    PageInfo(training.PAGE, "pages/training.py", N_("Live Training"), "📈", training.PAGE, N_("Train"),
             N_("Train a small model on reverse, sort, induction, character language modelling, protein properties "
                "or shapes images and watch loss, accuracy and attention heatmaps change live; scrub the "
                "time-lapse."), training.URL_PARAMS),
)


def page_info(name: str) -> PageInfo:
    """The registry entry of the page called ``name``."""
    for info in PAGES:
        if info.name == name:
            return info
    raise KeyError(f"no page called {name!r}; pages: {', '.join(p.name for p in PAGES)}")


def navigation() -> dict[str, list[st.Page]]:
    """``st.navigation``'s argument: the pages by section, the first one the default, in the session's language."""
    sections: dict[str, list[st.Page]] = {}
    for i, info in enumerate(PAGES):
        page = st.Page(info.path, title=_(info.title), icon=info.icon, url_path=info.url_path or None,
                       default=i == 0)
        sections.setdefault(_(info.section), []).append(page)
    return sections


def open_page(name: str, *, caption: str | None = None, init: Callable[[], None] | None = None,
              reserved: Sequence[str] = (), kept: Sequence[str] = (),
              params: Sequence[UrlParam] | None = None) -> PageInfo:
    """Start a page script: go through the router, set the page's defaults, draw its heading, read its URL.

    Args:
        name: the page's registry name.
        caption: a line under the heading (None for none).
        init: sets the page's session-state defaults before the URL is read.
        reserved: query parameters the page reads itself (not reported as unknown).
        kept: session-state keys kept for the whole session: put back before ``init`` when Streamlit forgot them,
            saved once the link is applied (see ``ui.common.state``).
        params: the settings the link carries when they depend on the link itself (Live Training: its task's).
    """
    ensure_router()  # a deep link on a fresh server must still go through app.py
    info = page_info(name)
    if params is not None:
        info = dataclasses.replace(info, params=tuple(params))
    state.restore_settings(kept)
    if init is not None:
        init()
    st.title(info.heading)
    if caption and not projector():  # on a projector the main picture must reach the first screen
        st.caption(caption)
    bind_url(info.params, page=info.name, reserved=reserved)
    state.save_settings(kept)
    return info


def share_page(info: PageInfo) -> None:
    """The "Copy link to this view" control of the page (left out in projector mode, like the intro)."""
    if not projector():
        share_link(info.params, url_path=info.url_path)


def settings_panel() -> AbstractContextManager:
    """Where a page draws its settings: a collapsed panel in projector mode, the page itself otherwise.

    On a projector (1024 × 768 is common in classrooms) the main picture must be on the first screen, so the
    settings fold into one collapsed panel; the widgets keep their values and can still be opened.
    """
    if projector():
        return st.expander(_(SETTINGS_LABEL), expanded=False)
    return st.container()


def close_page(info: PageInfo) -> None:
    """End a page script: the address bar follows the widgets."""
    push_url(info.params)
