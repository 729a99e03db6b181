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
"""

from __future__ import annotations

import binascii
import hashlib
import secrets
from dataclasses import dataclass

__all__ = ["Client", "XSRF_COOKIE", "browser_id"]

XSRF_COOKIE = "_streamlit_xsrf"  # the cookie Streamlit's server sets for every browser (format below)
_KEY = secrets.token_bytes(32)  # this process's key for hashing browser secrets into ids


@dataclass(frozen=True)
class Client:
    """The identities of one browser session (see the module docstring)."""

    session: str  # the browser session (one tab's connection)
    browser: str | None = None  # the browser's id, from its cookie; None when unknown
    address: str | None = None  # the client's network address, when known

    def __post_init__(self) -> None:
        if not self.session:
            raise ValueError("A client needs its session id.")

    @property
    def key(self) -> str:
        """Whom places, line entries and parked runs count against: the browser, else the address, else the
        session."""
        if self.browser:
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
