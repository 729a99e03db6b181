"""A Redis address's secrets, kept out of every message a page shows.

``TE_REDIS_URL`` may carry a user name and password (``redis://user:password@host:6379/0``, or ``?password=`` in
its query). A password that holds an unencoded ``#``, ``/``, ``?`` or ``@`` splits the address in unexpected places,
and the parser's error then quotes a piece of it (``Port could not be cast to integer value as 'se'`` for
``redis://:se#cret@host``). :func:`redact` removes the address, its credentials and every piece of them that such a
split can make, however the address was written.

The other setting of the Redis the app shares is the prefix of every key it writes there (:func:`key_prefix`,
``TE_REDIS_PREFIX``, ``te:`` by default): the run store's keys and the trainers' job queue both live under it, so
two deployments sharing one Redis with different prefixes never see each other's runs, jobs or texts (with a
Redis user per deployment restricted to its prefix, ``~te:*``, they cannot read them either).
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

__all__ = ["DEFAULT_PREFIX", "MASK", "PREFIX_ENV", "key_prefix", "redact", "url_secrets"]

PREFIX_ENV = "TE_REDIS_PREFIX"  # the prefix of every key the app writes in its Redis
DEFAULT_PREFIX = "te:"

MASK = "***"
SHORTEST_PIECE = 3  # pieces of a split password shorter than this are left alone (they would mask ordinary words)
_SPLITS = re.compile(r"[:/?#@&=;]")
_QUERY_SECRET = re.compile(r"(?:^|[?&;])(?:password|pass|auth|token)=([^&;#]*)", re.IGNORECASE)


def url_secrets(url: str) -> list[str]:
    """Every text of ``url`` that could reveal a credential, longest first: the address itself, its user part
    (between ``://`` and the *last* ``@``, as a password may hold ``@``), the password, their percent-decoded forms,
    secret query values, and the pieces a split at ``: / ? # @`` makes of them."""
    found: set[str] = {url.strip()}
    rest = url.split("://", 1)[1] if "://" in url else url
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        found |= {userinfo, userinfo.split(":", 1)[-1]}
    found |= {match.group(1) for match in _QUERY_SECRET.finditer(rest)}
    for secret in list(found):
        found.add(unquote(secret))
    for secret in list(found - {url.strip()}):
        found |= {piece for piece in _SPLITS.split(secret) if len(piece) >= SHORTEST_PIECE}
    return sorted((s for s in found if s), key=len, reverse=True)


def redact(text: str, url: str) -> str:
    """``text`` with every secret of ``url`` (see :func:`url_secrets`) replaced by :data:`MASK`."""
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text


def key_prefix() -> str:
    """The prefix of every key the app and its trainers write in Redis (``TE_REDIS_PREFIX``, ``te:`` by default);
    ``ValueError`` for one that is empty or holds spaces or braces."""
    prefix = os.environ.get(PREFIX_ENV, DEFAULT_PREFIX).strip() or DEFAULT_PREFIX
    if len(prefix) > 64 or re.search(r"[\s{}]", prefix):
        raise ValueError(f"{PREFIX_ENV}={prefix[:70]!r}: use up to 64 characters without spaces or braces, e.g. te:")
    return prefix
