"""What becomes of a session's run as its page comes and goes: :class:`PageLife`, a part of
:class:`~explorer.runs.session.RunSession`.

A page is left for another of the app's pages (:meth:`~PageLife.leave`: a running run stops and frees its training
memory, a paused one waits), loses its connection (:meth:`~PageLife.park`: the run is paused and kept for a
reload), and is reloaded (:meth:`~PageLife.take_back`). What ties a run to its browser across a reload is its
reload token: a run that trains is entered in the registry under one (:meth:`~PageLife._register`), only the same
browser claims it back, and another tab of that browser taking the run over is seen by
:meth:`~PageLife.still_mine`. A token the session lets go of itself (:meth:`~PageLife._forget_token`) is
remembered, so that an address still naming it is not taken for a lost run.

The state it reads and moves is the session's own, set in its constructor: ``run``, ``client``, ``registry``,
``token``, ``dropped``, ``signature`` and ``notice``; it leaves the line, hands the model over and lets a run go
as the session does (``leave_line``, ``hand_over``, ``_replace``), and tells a class watching it (``broadcast``,
``take_on``).
"""

from __future__ import annotations

import logging
from typing import Any

from explorer.i18n import _, num
from explorer.runs.recording import ReplayRun

__all__ = ["PageLife"]

LOG = logging.getLogger(__name__)


class PageLife:
    """A session's run through its page's life; see the module docstring."""

    def leave(self) -> None:
        """Another page of the app opened: leave the line, and stop a running run and free its training memory
        (a replay only pauses). A paused run stays as it is: the user may come back to resume it."""
        self.leave_line()
        run = self.run
        if run is None or run.status != "running":
            return
        if isinstance(run, ReplayRun):
            run.pause()
            return
        step = run.step
        run.release("stopped when the Live Training page was left")
        self.hand_over(run)
        self.notice = (
            "info",
            _(
                "Training stopped at step {step} when you left this page, and its training memory "
                "was freed. The model trained so far is still used by the other pages; press Start "
                "for a new run."
            ).format(step=step),
        )

    def park(self) -> None:
        """The page's connection ended: pause the run and keep it for a reload (the registry parks it, whatever
        its state, when the page's session is gone)."""
        run = self.run
        step = self.registry.park(self.token, self.client.session) if self.token is not None else None
        if step is None and run is not None:  # not registered (or taken over): never leave it running unwatched
            with run.lock:
                run.pause()
            step = run.step
        self.broadcast(force=True)  # a class watching it sees it paused, not "Training…" at a step that never moves
        LOG.info("the connection ended; run paused and kept for a reload at step %s", step)

    def take_back(self, token: str | None, signature: Any, *, without_token: bool = False) -> bool:
        """A page opened with the reload ``token`` takes its run back (paused); returns whether it did.

        ``without_token``: a page whose address carries no token (projector mode) takes back this browser's
        latest parked run instead. A token this browser does not own finds nothing, and its run trains on.
        """
        self.registry.sweep()
        if not token and without_token and self.run is None:
            token = self.registry.latest_parked(self.client.browser)
        if not token or token == self.token or token in self.dropped:
            return False
        claim = self.registry.claim(token, self.client.session, self.client.browser)
        if claim is None:
            self.notice = (
                "info",
                _(
                    "The run this address pointed to is no longer on the server: it was not "
                    "reopened within {minutes} minutes, or the server restarted (a run is only ever "
                    "reopened in the browser that started it). Press Start for a new run."
                ).format(minutes=num(self.registry.park_ttl_s / 60, 0)),
            )
            return False
        if claim.run is not self.run:
            self._replace(claim.run, signature)  # the session's own run, if any, is let go as for a new run
        self.token, self.signature = token, signature
        if claim.parked:  # its old page is gone (a page still open keeps its own sharing)
            self.take_on(claim.kept)  # a shared run goes on being shared on its class link
        LOG.info("run taken back at step %d (%s)", claim.run.step, "moved" if claim.moved else "same page")
        if claim.run.status == "paused":
            self.notice = (
                "success",
                _(
                    "Welcome back: your run was paused at step {step} when the connection to the "
                    "page ended. Press **Resume** to continue exactly where it stopped."
                ).format(step=num(claim.run.step)),
            )
        return True

    def still_mine(self) -> bool:
        """Whether this session still shows its run (False once another tab took it over); also a heartbeat."""
        return self.token is None or self.registry.owns(self.token, self.client.session)

    def _register(self) -> None:
        """Enter the run in the registry under a reload token (once per run)."""
        if self.token is not None and self.registry.owns(self.token, self.client.session):
            return
        self._forget_token()
        self.token = self.registry.register(
            self.run, self.client.session, browser=self.client.browser, client=self.client.key
        )

    def _forget_token(self) -> None:
        """Let go of the run's reload token; an address that still names it is this session's own, not a lost run."""
        if self.token is not None:
            self.registry.forget(self.token)
            self.dropped = (*self.dropped[-7:], self.token)
