"""Who asks: a browser session, the browser it belongs to, and the client that quotas count against.

The run rules need three identities. The **session** is one tab's connection (a reload makes a new one). The
**browser** is what a reload keeps: the app reads it from a secret the browser already holds in a cookie,
Streamlit's own ``_streamlit_xsrf`` cookie, which Streamlit's server sets on the browser's first request and
keeps for the whole browser session. The cookie's value is masked anew on every response, so the id is taken
from the unmasked token inside it (:func:`browser_id`), hashed with a key of this process so that the id
never reveals the secret. A run's reload token is honoured only for the browser that started the run
(:mod:`explorer.runs.registry`): an address read off a projector and opened elsewhere finds nothing. The
**client** is whom a quota counts against: the browser when known, else its network address, else the session.

Why this cookie and not one of the app's own: a Streamlit script cannot set cookies (HttpOnly or not), and a
secret that a page script put into the browser's storage would have to travel through the page, where any
script of the page reads it as well. The XSRF cookie is set by the server in the ``Set-Cookie`` header, never
appears in an address or a link, is sent with the websocket's handshake (``st.context.cookies``) and is unique
per browser. It is not HttpOnly (Streamlit's own upload requests read it), which matters only against a script
injected into the app's own origin; an address on a projector, a shared link or another browser never has it.
Without the cookie (``server.enableXsrfProtection = false``) no browser id exists: reload tokens are then
honoured for nobody but the session itself, and quotas count per address.

The cookie is the browser's to choose, though: a script that drops it gets a new id with every connection.
:class:`ClientBook` therefore limits how fast one address brings new ids. A class arriving together (40
browsers behind one school router, each reloading as it likes) stays far below the limit; a script that rotates
cookies does not, and every id it brings beyond the limit counts against its address instead, sharing one
client's quota, until it has stayed :data:`SETTLE_S` seconds. The address is the connection's peer; behind a
reverse proxy every peer is the proxy, so :func:`client_address` reads ``X-Forwarded-For`` only when the peer
is one of the proxies named in ``TE_TRUSTED_PROXIES`` (a header anyone else sends is ignored: it is theirs to
write).
"""

from __future__ import annotations

import binascii
import hashlib
import ipaddress
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["CLIENTS", "Client", "ClientBook", "TRUSTED_PROXIES_ENV", "XSRF_COOKIE", "browser_id", "client_address",
           "trusted_proxies"]

XSRF_COOKIE = "_streamlit_xsrf"  # the cookie Streamlit's server sets for every browser (format below)
_KEY = secrets.token_bytes(32)  # this process's key for hashing browser secrets into ids
TRUSTED_PROXIES_ENV = "TE_TRUSTED_PROXIES"  # the proxies (addresses, networks) whose X-Forwarded-For counts
# New browser ids one address may bring: two token buckets, (burst, refill per second). The short one lets three
# browsers arrive in the same instant and then one every quarter second (a class of 40 arriving within ten
# seconds); the long one sixty, then one every ten seconds (a second class an hour later is welcome again).
NEW_ID_BUCKETS = ((3.0, 4.0), (60.0, 0.1))
SETTLE_S = 60.0  # an id brought beyond the limit counts against its address until it has stayed this long
LOG = logging.getLogger(__name__)
MAX_IDS = 20_000  # browser ids (and addresses) remembered; the least recently seen are forgotten first


@dataclass(frozen=True)
class Client:
    """The identities of one browser session (see the module docstring)."""

    session: str  # the browser session (one tab's connection)
    browser: str | None = None  # the browser's id, from its cookie; None when unknown
    address: str | None = None  # the client's network address, when known
    # the book that says whether the browser id came too fast from its address; None: every id counts alone
    book: ClientBook | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.session:
            raise ValueError("A client needs its session id.")

    @property
    def key(self) -> str:
        """Whom places, line entries and parked runs count against: the browser (unless its id came from its
        address faster than :class:`ClientBook` allows and has not settled yet), else the address, else the
        session."""
        if self.browser and (self.book is None or not self.address or self.book.counts_alone(self.browser)):
            return f"browser:{self.browser}"
        if self.address:
            return f"address:{self.address}"
        return f"session:{self.session}"


def browser_id(xsrf_cookie: str | None) -> str | None:
    """The browser id behind a ``_streamlit_xsrf`` cookie value, or ``None`` when there is none or it is malformed.

    The value is ``2|mask|masked_token|timestamp`` (hex fields; the token XOR-ed with the repeated 4-byte mask),
    or, in the old form, the token in hex. The same browser keeps the same token while its mask changes.
    """
    value = (xsrf_cookie or "").strip("\"' ")
    try:
        if value.startswith("2|"):
            _, mask_hex, masked_hex, _ = value.split("|")
            mask, masked = binascii.a2b_hex(mask_hex), binascii.a2b_hex(masked_hex)
            if len(mask) != 4:
                return None
            token = bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
        else:
            token = binascii.a2b_hex(value)
    except (binascii.Error, ValueError):
        return None
    if len(token) < 8:  # not a secret worth the name
        return None
    return hashlib.blake2b(token, key=_KEY, digest_size=16).hexdigest()


def trusted_proxies(setting: str | None = None) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """The networks named in ``setting`` (by default ``TE_TRUSTED_PROXIES``): comma-separated addresses or CIDR
    networks; ``ValueError`` names an entry that is neither."""
    text = os.environ.get(TRUSTED_PROXIES_ENV, "") if setting is None else setting
    networks = []
    for item in (part.strip() for part in text.split(",")):
        if item:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{TRUSTED_PROXIES_ENV}: {item!r} is not an address or a network "
                                 "(write e.g. 10.0.0.5 or 10.0.0.0/24).") from None
    return tuple(networks)


def _is_trusted(address: str, proxies: tuple) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in proxies)


def client_address(peer: str | None, forwarded_for: str | None, proxies: tuple | None = None) -> str | None:
    """The client's address: the connection's ``peer``, unless the peer is a trusted proxy (``proxies``, by
    default :func:`trusted_proxies`); then the last ``X-Forwarded-For`` entry that no trusted proxy added.

    Entries left of it were written by whoever sent the request and prove nothing; a header that an untrusted
    peer sends is ignored whole. ``peer`` is ``None`` for a connection from this host (Streamlit hides loopback
    addresses): it stays ``None`` unless a loopback proxy (``127.0.0.1`` or ``::1``) is trusted.
    """
    if proxies is None:
        try:
            proxies = trusted_proxies()
        except ValueError as err:  # a wrong setting trusts nobody: safe, and said in the log
            LOG.warning("%s", err)
            proxies = ()
    if peer is None and forwarded_for and (_is_trusted("127.0.0.1", proxies) or _is_trusted("::1", proxies)):
        peer = "127.0.0.1"  # a proxy on this host
    elif peer is None:
        return None
    if not forwarded_for or not _is_trusted(peer, proxies):
        return peer or None
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    while hops and _is_trusted(hops[-1], proxies):
        hops.pop()  # a chain of our own proxies
    if not hops:
        return peer
    try:
        return str(ipaddress.ip_address(hops[-1]))
    except ValueError:  # garbage in the header: the proxy's own address is all we know
        return peer


class ClientBook:
    """Which browser ids count as clients of their own, and which against their address (thread-safe).

    Each address has token buckets (:data:`NEW_ID_BUCKETS`) that a browser id spends when first seen from it;
    an id that finds a bucket empty counts against its address until it has been seen for ``settle_s`` seconds.
    A script rotating its cookie therefore gains no places, line entries or parked runs beyond those of one
    client; the browsers of a class arriving together never empty the buckets.
    """

    def __init__(self, *, buckets: tuple[tuple[float, float], ...] = NEW_ID_BUCKETS, settle_s: float = SETTLE_S,
                 max_ids: int = MAX_IDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.buckets, self.settle_s, self.max_ids, self._clock = buckets, settle_s, max_ids, clock
        self._ids: OrderedDict[str, tuple[float, bool]] = OrderedDict()  # browser id -> (first seen, within limit)
        self._tokens: OrderedDict[str, tuple[float, list[float]]] = OrderedDict()  # address -> (when, tokens left)
        self._lock = threading.Lock()

    def admit(self, client: Client) -> Client:
        """Record ``client``'s browser id (spending its address's tokens the first time) and return the client
        with this book attached, so that :attr:`Client.key` follows the book's verdict."""
        if client.browser and client.address:
            with self._lock:
                now = self._clock()
                if client.browser in self._ids:
                    self._ids.move_to_end(client.browser)
                else:
                    self._ids[client.browser] = (now, self._spend_locked(client.address, now))
                    while len(self._ids) > self.max_ids:
                        self._ids.popitem(last=False)
        return Client(client.session, client.browser, client.address, book=self)

    def counts_alone(self, browser: str) -> bool:
        """Whether ``browser`` counts as a client of its own (it came within its address's limit, or settled)."""
        with self._lock:
            first, within = self._ids.get(browser, (self._clock(), True))
            return within or self._clock() - first >= self.settle_s

    def _spend_locked(self, address: str, now: float) -> bool:
        when, tokens = self._tokens.pop(address, (now, [burst for burst, _ in self.buckets]))
        refill = [(burst, rate * (now - when)) for burst, rate in self.buckets]
        tokens = [min(burst, left + gained) for left, (burst, gained) in zip(tokens, refill, strict=True)]
        within = all(left >= 1.0 for left in tokens)
        if within:
            tokens = [left - 1.0 for left in tokens]
        self._tokens[address] = (now, tokens)  # most recently used last
        while len(self._tokens) > self.max_ids:
            self._tokens.popitem(last=False)
        return within


CLIENTS = ClientBook()  # the server's one book: every browser session of this process shares it
