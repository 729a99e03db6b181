"""Live Training page: the class link's address that students can open, and its QR code.

The address the owner's own browser used may be one no other machine can open (``http://127.0.0.1:8501``,
``localhost``). :func:`reachable_link` picks, in order: ``TE_PUBLIC_URL`` when set (the address students use,
e.g. behind a proxy or a tunnel); the browser's own address when its host is not this machine (a proxy, Community
Cloud, or a laptop opened by its network address); else the server's network address as ``streamlit run`` prints
it ("Network URL", the machine's LAN address and port). The QR code is drawn with ``segno`` (pure Python, no
dependencies).
"""

from __future__ import annotations

import io
import ipaddress
import os
from urllib.parse import urlencode, urlsplit

from explorer.i18n import N_
from ui.common import st_internals
from ui.common.language import link_language
from ui.common.sharelink import view_link

PUBLIC_URL_ENV = "TE_PUBLIC_URL"  # the app's public root address, e.g. https://class.example.org/explorer
LOCAL_NAMES = ("localhost", "0.0.0.0", "")  # hosts no other machine reaches (loopback addresses too)
QR_PIXELS = 360  # about 9 cm wide on a classroom projector: scannable from the back row


def is_local(host: str | None) -> bool:
    """Whether ``host`` names this machine only (loopback, ``localhost``, unspecified)."""
    host = (host or "").strip("[]").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def reachable_link(
    url_path: str, query: dict[str, str], *, public: str | None = None, network: str | None = None
) -> tuple[str, str | None]:
    """The address of page ``url_path`` with ``query`` that other machines can open, and a note when there is
    none (then the browser's own address is returned).

    ``public`` defaults to ``TE_PUBLIC_URL``; ``network`` to Streamlit's network URL (tests pass both).
    """
    query = {**query, **link_language()}  # the class link opens in the language it was made in, as view_link's do
    tail = f"{url_path}?{urlencode(query)}"
    public = os.environ.get(PUBLIC_URL_ENV, "").strip() if public is None else public
    if public:
        return f"{public.rstrip('/')}/{tail}", None
    own = view_link(url_path, query)
    if not is_local(urlsplit(own).hostname):
        return own, None
    network = st_internals.network_url() if network is None else network
    if network:
        return f"{network.rstrip('/')}/{tail}", None
    return own, NO_NETWORK


NO_NETWORK = N_(
    "This address works on this computer only, and no network address was found. Set TE_PUBLIC_URL to "
    "the address students use."
)  # English, shown through _(); it names PUBLIC_URL_ENV


def qr_png(text: str, pixels: int = QR_PIXELS) -> bytes | None:
    """A QR code of ``text`` as PNG bytes about ``pixels`` wide, or ``None`` when ``segno`` is not installed."""
    try:
        import segno
    except ImportError:
        return None
    code = segno.make(text, error="m", micro=False)
    modules = code.symbol_size(border=2)[0]
    buffer = io.BytesIO()
    code.save(buffer, kind="png", scale=max(2, pixels // modules), border=2)
    return buffer.getvalue()
