"""Reaching Redis from :class:`~explorer.runs.redis_store.RedisStore`: the client, its timeouts, and what a page is
told when Redis fails.

A page must never hang on a Redis that is down: connecting and reading time out after a second or two
(:data:`CONNECT_TIMEOUT_S`, :data:`SOCKET_TIMEOUT_S`) with one quick retry, and after a connection failure the store
answers at once, with :data:`DOWN`, for :data:`RETRY_AFTER_S` seconds. :func:`redis_client` sorts Redis's errors
into those that mean it is down and the rest (a refused command, :data:`REFUSED`), and says why there can be no
client at all: the ``redis`` package missing (it is imported only here, when a store is made), or an address that is
not Redis's (:data:`NOT_AN_ADDRESS`, which never quotes it: the address may hold a password).
"""

from __future__ import annotations

from typing import Any

from explorer.i18n import N_
from explorer.runs.updates import StoreUnavailable

__all__ = [
    "CONNECT_TIMEOUT_S", "DOWN", "NOT_AN_ADDRESS", "REFUSED", "RETRY_AFTER_S", "SOCKET_TIMEOUT_S", "redis_client",
]

CONNECT_TIMEOUT_S = 1.0  # a Redis that does not accept the connection by then counts as down
SOCKET_TIMEOUT_S = 2.0  # longest wait for one reply (a recording of tens of MB still arrives well within it)
RETRY_AFTER_S = 5.0  # after a connection failure, calls fail at once for this long instead of waiting again
DOWN = N_("Redis, the run store the app servers share, does not answer; try again shortly.")
REFUSED = N_("Redis, the run store the app servers share, refused the request ({error}).")
NOT_AN_ADDRESS = (
    "TE_REDIS_URL is not a Redis address: write redis://[user:password@]host[:port][/db] (or rediss://, "
    "unix://), with any # / ? @ : in the password percent-encoded (%23 %2F %3F %40 %3A)."
)


def redis_client(url: str) -> tuple[Any, tuple[type[Exception], ...], type[Exception]]:
    """A Redis client for ``url`` with short timeouts and one quick retry, the errors that mean Redis is down, and
    the base of all its errors; :class:`StoreUnavailable` saying why there can be none."""
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError as err:
        raise StoreUnavailable(
            "TE_REDIS_URL is set but the redis package is missing: install requirements.txt."
        ) from err
    try:
        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=30,
        )
    except ValueError:
        raise StoreUnavailable(NOT_AN_ADDRESS) from None  # the parser's error may quote a piece of the password
    return client, (redis.ConnectionError, redis.TimeoutError), redis.RedisError
