"""A session sharing its runs live: :class:`SessionSharing`, a part of :class:`~explorer.runs.session.RunSession`.

While its owner shares, each of the session's runs goes out on a watch channel of its own
(:class:`~explorer.runs.channel.WatchChannel`), published as it goes (:meth:`~SessionSharing.broadcast`),
and the class link (:class:`~explorer.runs.classes.ClassLink`) follows the channel of the run of the moment, so
students who opened it see each new run. A shared run trains before visitors' own runs. A run on the user's own
data goes out without its samples (no line of the text: :mod:`explorer.runs.private_text`) unless its owner agreed,
for that run, to show them (:meth:`~SessionSharing.show_samples`); the next run asks again. A store that goes away
turns sharing off, with a message for the owner.

A teacher's reload keeps the class: the sharing goes with the run's registry entry (:meth:`~SessionSharing.
_hand_on`), and the page that takes the run back shares it on (:meth:`~SessionSharing.take_on`) on the same
channel and class link.

The state it reads and moves is the session's own, set in its constructor: ``sharing``, ``channel``,
``class_link``, ``downloads``, ``samples_shown_for`` and ``share_query``, with ``run``, ``store`` and ``place``,
and ``token``, ``registry`` and ``client`` for the hand-on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from explorer.i18n import N_
from explorer.i18n.message import localized
from explorer.runs.channel import WatchChannel
from explorer.runs.classes import ClassLink
from explorer.runs.live import LiveRun
from explorer.runs.store import StoreUnavailable
from explorer.runs.user_data import private_data

__all__ = ["SessionSharing", "SharedState"]

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class SharedState:
    """A session's live sharing of its run, handed on to the page that takes the run back after a reload."""

    channel: WatchChannel  # the run's watch channel
    class_link: ClassLink | None  # the class link that follows it
    downloads: bool  # whether watchers may download the model
    samples_shown_for: LiveRun | None  # the run on private data whose samples its owner agreed to show
    query: dict[str, str] | None  # the run's settings as a link's query


class SessionSharing:
    """Sharing a session's runs live; see the module docstring."""

    def broadcast(self, *, force: bool = False) -> str | None:
        """Publish the run to its watch channel when sharing is on; returns why sharing stopped, if it did (the
        store went away: sharing is then off)."""
        if not self.sharing or self.run is None:
            return None
        try:
            if self.channel is None or self.channel.run is not self.run:
                self.end_channel(N_("Its owner started a new run."))
                self.channel = WatchChannel(self.store(), self.run)
                self.place.prioritize(self.run)  # others watch it: it comes before visitors' own runs
            self.channel.send(query=self.share_query, downloads=self.downloads, private=self.private, force=force)
            if self.class_link is None:
                self.class_link = ClassLink()
            self.class_link.follow(self.store(), self.channel.run_id)
        except StoreUnavailable as err:
            self.sharing, self.channel = False, None
            self._hand_on()
            return localized(err)  # shown on the owner's page, whose script run this is
        self._hand_on()
        return None

    def take_on(self, kept: SharedState | None) -> None:
        """Go on sharing what the page that showed the run before a reload shared (``kept``, from the registry):
        the same channel and class link, so the class goes on watching; nothing when it shared another run."""
        if kept is None or self.run is None or kept.channel.run is not self.run:
            return
        self.sharing, self.channel, self.class_link = True, kept.channel, kept.class_link
        self.downloads, self.samples_shown_for, self.share_query = kept.downloads, kept.samples_shown_for, kept.query

    def _hand_on(self) -> None:
        """Leave the sharing with the run's registry entry, for the page that takes it back after a reload."""
        if self.token is None:
            return
        kept = None
        if self.sharing and self.channel is not None:
            kept = SharedState(self.channel, self.class_link, self.downloads, self.samples_shown_for, self.share_query)
        self.registry.keep(self.token, self.client.session, kept)

    @property
    def private(self) -> bool:
        """Whether the run trains on the user's own data and its owner has not agreed to show its samples."""
        run = self.run
        return run is not None and self.samples_shown_for is not run and private_data(run.task)

    def show_samples(self, run: LiveRun) -> None:
        """The owner agreed that watchers see ``run``'s samples (lines of its text); only while it is the run."""
        if run is self.run:
            self.samples_shown_for = run
            self.broadcast(force=True)

    def stop_sharing(self) -> None:
        """The owner stopped sharing: the run's channel ends and the class link leads nowhere any more."""
        self.sharing = False
        self.end_channel(N_("Its owner stopped sharing it."))
        self._hand_on()
        link, self.class_link = self.class_link, None
        if link is not None:
            try:
                link.end(self.store())
            except StoreUnavailable as err:
                LOG.warning("could not end a class link: %s", err)

    def end_channel(self, reason: str) -> None:
        """Close the watch channel, if any: its link says ``reason`` (English, marked with ``N_``: the watcher's page
        says it in its own language)."""
        channel, self.channel = self.channel, None
        if channel is None:
            return
        try:
            channel.end(reason)
        except StoreUnavailable as err:
            LOG.warning("could not close a shared channel: %s", err)
