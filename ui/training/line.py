"""Live Training page: wait in line for a place to train, first come, first served.

When the server already trains as many runs as it allows, Start (or Resume) puts the session's run in the
server's line (:data:`explorer.runs.line.LINE`) instead of refusing. The page then shows its place and an
estimated wait, renews its ticket every :data:`~ui.common.pace.LINE_POLL_S` seconds
(:meth:`~explorer.runs.session.RunSession.poll_line`), and
the run starts by itself when its turn comes and a place is free. Leaving the page, closing the tab or pressing
"Leave the line" gives the place up (a closed tab's ticket expires by itself). One browser holds at most
:func:`~explorer.runs.slots.per_client_limit` places and line entries together, whatever number of tabs it opens.
"""

from __future__ import annotations

import streamlit as st

from explorer.host import limits
from explorer.i18n import _, ngettext, num
from explorer.runs.session import RunSession
from explorer.runs.slots import estimated_wait_s, per_client_limit
from ui.common import pace, st_internals
from ui.common.ticker import ticks

LOG = st_internals.logger("transformer_explorer.line")


def wait_text(place: int) -> str:
    """Where the run stands in line, in words."""
    most = limits().max_live_runs
    wait = estimated_wait_s(place, most)
    about = _("about {duration}").format(duration=_duration(wait)) if wait is not None else _("a little while")
    ahead = (
        _("You are next")
        if place == 1
        else ngettext("{n} run waits before yours", "{n} runs wait before yours", place - 1).format(n=num(place - 1))
    )
    return (
        "⏳ "
        + _("**Place {place} in line** · {ahead} · estimated wait: {about}.").format(
            place=num(place), ahead=ahead, about=about
        )
        + "  \n"
        + _(
            "This server trains at most {most} runs at once to stay responsive, and at most {per_browser} for one "
            "browser; yours starts by itself when a place frees. Keep this tab open: leaving the page gives your place "
            "up."
        ).format(most=num(most), per_browser=num(per_client_limit(most)))
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return _("{n} s").format(n=num(max(1, round(seconds))))
    return _("{n} min").format(n=num(seconds / 60, 0))


def wait_in_line(held: RunSession) -> None:
    """While the session's run waits: show its place in line; rerun the page once it has started.

    Loops in the page's script (:func:`~ui.common.ticker.ticks`): every :data:`~ui.common.pace.LINE_POLL_S` the
    ticket is renewed and a place asked for. A click reruns the script at once; a closed tab stops it, and its
    place goes to the next in line.
    """
    if not held.waiting:
        return
    c_text, c_leave = st.columns([4, 1.2], vertical_alignment="center")
    c_leave.button(
        _("Leave the line"),
        icon=":material/logout:",
        on_click=held.leave_line,
        key="live.line.leave",
        help=_("Give up your place; press Start again later."),
    )
    slot = c_text.empty()
    try:
        for _tick in ticks(lambda: pace.LINE_POLL_S):
            place = held.poll_line()
            if place is None:
                LOG.info("run left the line (started: %s)", held.run is not None and held.run.status == "running")
                st.rerun()
            slot.info(wait_text(place))
    except st_internals.StopException:  # the tab closed: its place goes to the next in line at once
        held.leave_line()
        raise
