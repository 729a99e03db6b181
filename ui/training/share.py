"""Live Training page, the owner's side of watching: share the run live, see how many watch, allow downloads.

"📡 Share live" gives the session's run a watch channel (:class:`~explorer.runs.channel.WatchChannel`) and the
session a class link (:class:`~explorer.runs.classes.ClassLink`): one address with ``?class=<id>``, its QR code
and a short code, which follow the session's next runs and replays until sharing is turned off, so a class gets
one link per lesson. The address is one students can open (:mod:`ui.training.address`). The live loop sends the
run's news after every slice (:func:`send_news`); watchers see it read-only and move to each new run by
themselves. Downloads for watchers are off until the owner allows them; then the model files are offered
whenever the run pauses or ends.

A run on the user's own text is shared without a line of it: watchers get its curves and its attention over
placeholder characters, and its samples only when its owner agrees, for that run, in a dialog that shows them
(:func:`private_text_note`, :mod:`explorer.runs.private_text`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import streamlit as st

from explorer.i18n import N_, _, num
from explorer.i18n.message import localized
from explorer.runs.classes import ClassLink
from explorer.runs.session import RunSession
from explorer.runs.store import StoreUnavailable
from ui.common import pace, theme
from ui.common.urlstate import current_params
from ui.training import address, controls, text
from ui.training.controls import PAGE
from ui.training.samples import samples_html

SHARING = "live.share.on"  # bool: the owner shares this session's runs live (the toggle)
LOST = "live.share.lost"  # str: why sharing stopped by itself (the store went away); the toggle turns off next run
DOWNLOADS = "live.share.downloads"  # bool: watchers may download the model
COUNT_SLOT = "live.share.count"  # (placeholder, when last drawn[, text]): the watcher count, kept current
ASKING = "live.share.asking"  # bool: the dialog asking to show watchers a private run's samples is open
WATCH_PARAM = "watch"  # the query parameter of one run's watch link
CLASS_PARAM = "class"  # the query parameter of a class link


def settings_query() -> dict[str, str] | None:
    """The current settings as a link's query, so that watchers can open the same run for themselves (``None``
    for a run on the user's own text, which links never carry)."""
    if text.own_text_selected(st.session_state[controls.TASK]):
        return None
    return current_params(controls.url_params(st.session_state[controls.TASK]))


def send_news(held: RunSession, *, force: bool = False) -> None:
    """Send the run's news to its watch channel (when shared) and keep the watcher count current."""
    lost = held.broadcast(force=force)
    if lost is not None:  # the toggle is drawn already: it turns off before the next run draws it
        st.session_state[LOST] = lost
        st.warning(_("Live sharing stopped: {reason} Training goes on.").format(reason=localized(lost)), icon="📡")
        return
    _draw_count(held)


def _count_text(held: RunSession) -> str:
    """ "👀 N watching", or why the number is not known just now."""
    try:
        return "👀 " + _("**{n}** watching").format(n=num(held.channel.watchers()))
    except StoreUnavailable as err:  # the count waits for the store; the run and the page go on
        return "👀 " + _("watchers not known just now: {reason}").format(reason=localized(err))


def _draw_count(held: RunSession, *, now: bool = False) -> None:
    """Redraw "👀 N watching" when it is due (it changes as students open or close the link)."""
    slot = st.session_state.get(COUNT_SLOT)
    at = time.monotonic()
    if held.channel is None or slot is None or (not now and at - slot[1] < pace.WATCHER_COUNT_S):
        return
    text = _count_text(held)
    slot[0].markdown(text, help=_("Devices that showed this run in the last 10 seconds."))
    st.session_state[COUNT_SLOT] = (slot[0], at, text)


def _rerun_when_the_count_changes(held: RunSession, shown: str) -> None:
    if held.channel is not None and _count_text(held) != shown:
        st.rerun(scope="app")


def keep_count_current(held: RunSession) -> None:
    """While no loop redraws the page (the run is ready, paused or over), rerun it when the watcher count changed.

    Call it at the page's top level, outside every ``with`` block, and let it draw nothing: a click that starts a
    new run of the page while a timed rerun is under way can leave that rerun's containers in place for the new
    run, which then draws the whole page again inside them (twice on screen, the old copy faded).
    """
    slot = st.session_state.get(COUNT_SLOT)
    if held.run is None or held.run.status == "running" or held.channel is None or slot is None or len(slot) < 3:
        return
    st.fragment(_rerun_when_the_count_changes, run_every=pace.WATCHER_COUNT_S)(held, slot[2])


def class_link_box(link: ClassLink) -> Any:
    """The class link as students reach it: its QR code, its short code and its address; returns the column
    beside the QR code, for what the caller adds."""
    url, note = address.reachable_link(PAGE, {CLASS_PARAM: link.class_id})
    c_qr, c_text = st.columns([2, 3], vertical_alignment="center")
    png = address.qr_png(url)
    if png is not None:
        c_qr.image(png, width=address.QR_PIXELS, caption=_("Scan to watch"))
    with c_text:
        code = f"<span style='font:700 2.6rem monospace;letter-spacing:.25em'>{link.code}</span>"
        st.markdown(
            _("Class code: {code}").format(code=code),
            unsafe_allow_html=True,
            help=_(
                "Students type it into *Join a class* on Live Training, or scan the QR code. It stays the "
                "same for your next runs, replays and lesson runs until you turn sharing off."
            ),
        )
        st.code(url, language=None, wrap_lines=True)
        if note:
            st.warning(localized(note), icon="🌐")
    return c_text


WATCHERS_SEE = N_(
    "Watchers see this run's curves, metrics and attention maps, with every character of your text "
    "shown as •. They receive no line of your text and none of the samples the model writes."
)


def _stop_asking() -> None:
    st.session_state.pop(ASKING, None)


def _confirm_samples(held: RunSession) -> None:
    """The dialog that asks to show watchers a private run's samples (titled in the page's language)."""
    st.dialog(_("Show watchers this run's samples?"), on_dismiss=_stop_asking)(_samples_dialog)(held)


def _samples_dialog(held: RunSession) -> None:
    run = held.run
    frame = run.frame() if run is not None else None
    latest = frame.lanes[0].samples[-1] if frame is not None and frame.lanes[0].samples else None
    st.markdown(
        _(
            "Each sample is **a line of your text** (its first words) and what the model wrote after it. "
            "Watchers would see these, and the ones written at every later evaluation of this run:"
        )
    )
    if latest is not None:
        st.html(
            samples_html(latest.items, frame.task.family, _("Samples at step {step}").format(step=num(latest.step)))
        )
    else:
        st.info(_("No samples yet: they are written at the run's first evaluation, from lines of your text."))
    st.caption(_("Only for this run: your next run is private again until you agree again."))
    left, right = st.columns(2)
    if left.button(_("Show them to watchers"), type="primary", key="live.share.samples.yes"):
        held.show_samples(run)
        _stop_asking()
        st.rerun()
    if right.button(_("Keep them private"), key="live.share.samples.no"):
        _stop_asking()
        st.rerun()


def private_text_note(held: RunSession) -> None:
    """What watchers receive of a run on the user's own text, and the way to show them its samples."""
    if held.run is None or not text.own_text_selected(st.session_state[controls.TASK]):
        return
    if not held.private:
        st.info(
            _(
                "Watchers see this run's curves, attention and samples: lines of your text and what the model "
                "writes after them (you agreed for this run)."
            ),
            icon="🔓",
        )
        return
    st.info(_(WATCHERS_SEE), icon="🔒")
    if st.button(
        _("Show watchers the samples…"),
        key="live.share.samples",
        help=_("Opens what watchers would see, lines of your text included, and asks before sending it."),
    ):
        st.session_state[ASKING] = True  # the dialog stays open across reruns until answered or dismissed
    if st.session_state.get(ASKING):
        _confirm_samples(held)


def share_panel(held: RunSession) -> None:
    """The "Share live" toggle and, when on, the class link with its QR code and short code, the number of
    watchers and the downloads switch."""
    if held.run is None:
        return
    if lost := st.session_state.pop(LOST, None):
        st.session_state[SHARING] = False
        st.warning(
            _("Live sharing stopped: {reason} Turn it on again when the store is back.").format(
                reason=localized(lost)
            ),
            icon="📡",
        )
    if SHARING not in st.session_state:  # a class link made on a lesson, or before a reload, stays on until turned off
        st.session_state[SHARING] = held.class_link is not None
        st.session_state.setdefault(DOWNLOADS, held.downloads)
    # A projector's first screen is the run: there the class code sits beside the toggle, and its QR code folds
    # away once the run trains.
    place = st.container(horizontal=True, vertical_alignment="center") if theme.projector() else st
    place.toggle(
        "📡 " + _("Share live with a class"),
        key=SHARING,
        help=_(
            "Give your runs one class link that anyone can open to watch them train, read-only: "
            "students see the curves, heatmaps and samples update on their own devices, and follow your "
            "next run, replay or lesson run by themselves until you turn this off. A run on your own "
            "text is sent without its samples and with • for each character, unless you agree for that "
            "run. Training costs nothing more."
        ),
    )
    held.sharing, held.downloads = bool(st.session_state.get(SHARING)), bool(st.session_state.get(DOWNLOADS))
    # The count's placeholder belongs to the script run that drew it: one left from an earlier run (or from the
    # count's own timed reruns) must never be written to again, or its element lands in this run's layout.
    st.session_state.pop(COUNT_SLOT, None)
    if not held.sharing:
        held.stop_sharing()
        return
    send_news(held, force=True)
    if held.channel is None or held.class_link is None:
        return
    private_text_note(held)
    fold = (
        place.expander(
            "📱 " + _("Class code **{code}** · QR code and link").format(code=held.class_link.code),
            expanded=held.run.status == "ready",
        )
        if theme.projector()
        else contextlib.nullcontext()
    )
    with fold, class_link_box(held.class_link):
        st.session_state[COUNT_SLOT] = (st.empty(), 0.0)
        _draw_count(held, now=True)
        st.checkbox(
            _("Let watchers download the model"),
            key=DOWNLOADS,
            help=_(
                "Watchers may then download this run's trained weights (a checkpoint) whenever it is "
                "paused or finished. Off by default: a class link alone never gives your model away."
            ),
        )
    held.downloads = bool(st.session_state.get(DOWNLOADS))
