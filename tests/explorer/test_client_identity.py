"""Who a client is: rotated cookies from one address gain no places and push out nobody's parked runs."""

from __future__ import annotations

import contextlib
import ipaddress

import pytest

from explorer.runs.clients import Client, ClientBook, client_address, trusted_proxies
from explorer.runs.line import RunLine
from explorer.runs.registry import RunRegistry
from explorer.runs.slots import QuotaExceeded, per_client_limit, take_place
from tests.explorer import test_run_slots
from tests.explorer.test_run_registry import FakeClock, tiny_run
from tests.explorer.test_watch_replay import make_run

task, no_other_runs = test_run_slots.task, test_run_slots.no_other_runs  # the slots tests' fixtures
SCHOOL = "203.0.113.7"  # one address for a whole class behind its router




def rotated(book: ClientBook, n: int, address: str = SCHOOL, prefix: str = "script") -> list[Client]:
    """``n`` connections, each with a cookie of its own (a new browser id), from one address."""
    return [book.admit(Client(f"{prefix}-tab{i}", f"{prefix}-id{i}", address)) for i in range(n)]


def test_six_rotated_cookies_from_one_address_cannot_take_six_places(task) -> None:
    clock = FakeClock()
    book, line = ClientBook(clock=clock), RunLine(clock=clock)
    runs = [make_run(task, lanes=1) for _ in range(7)]  # held here: the places count live runs only
    for i, client in enumerate(rotated(book, 6)):
        with contextlib.suppress(QuotaExceeded):
            take_place(runs[i], 6, f"t{i}", client.key, line=line)
    assert sum(run.status == "running" for run in runs) == 5  # three ids of their own, two for their address
    honest = book.admit(Client("student-tab", "student-id", "198.51.100.4"))
    assert take_place(runs[6], 6, "student", honest.key, line=line) is None  # the next student trains at once


def test_a_class_of_forty_arriving_together_counts_as_forty_clients() -> None:
    clock, book = FakeClock(), ClientBook(clock=FakeClock())
    book._clock = clock
    class_ = []
    for i in range(40):  # forty browsers reach the page within ten seconds, three of them at once
        clock.now = max(0.0, 0.25 * (i - 2))
        class_.append(book.admit(Client(f"tab{i}", f"student{i}", SCHOOL)))
    assert len({c.key for c in class_}) == 40
    assert all(c.key.startswith("browser:") for c in class_)
    clock.now += 3600  # the next class an hour later is just as welcome
    later = [book.admit(Client(f"next{i}", f"next-student{i}", SCHOOL)) for i in range(3)]
    assert all(c.key.startswith("browser:") for c in later)


def test_ids_beyond_the_rate_count_against_their_address_until_they_settle() -> None:
    clock = FakeClock()
    book = ClientBook(clock=clock, settle_s=60.0)
    clients = rotated(book, 10)
    keys = [c.key for c in clients]
    assert keys[:3] == [f"browser:script-id{i}" for i in range(3)]
    assert set(keys[3:]) == {f"address:{SCHOOL}"}
    elsewhere = book.admit(Client("other", "other-id", "198.51.100.4"))  # another address is not affected
    assert elsewhere.key == "browser:other-id"
    clock.now = 61.0
    assert clients[-1].key == "browser:script-id9"  # it stayed a minute: a browser like any other
    assert Client("s", "b", SCHOOL).key == "browser:b"  # without a book every id counts alone


def test_one_client_holds_one_place_on_a_small_host(task) -> None:
    assert [per_client_limit(n) for n in (2, 3, 6)] == [1, 2, 2]
    line, runs = RunLine(), [make_run(task, lanes=1) for _ in range(3)]
    assert take_place(runs[0], 2, "tab1", "browser:b", line=line) is None
    with pytest.raises(QuotaExceeded):  # a second tab of the same browser does not take the other place
        take_place(runs[1], 2, "tab2", "browser:b", line=line)
    assert take_place(runs[2], 2, "other", "browser:c", line=line) is None


def park(reg: RunRegistry, clock: FakeClock, client: Client) -> object:
    run = tiny_run()
    run.start()
    run.advance(0.01)
    clock.now += 1
    reg.park(reg.register(run, client.session, browser=client.browser, client=client.key), client.session)
    return run


@pytest.mark.slow
def test_twenty_rotated_cookies_release_none_of_the_honest_students_parked_runs() -> None:
    clock = FakeClock()
    reg = RunRegistry(clock=clock, sleep=clock.sleep, max_parked=12, max_parked_per_client=3)
    honest = [park(reg, clock, Client(f"student{i}", f"student-id{i}", f"198.51.100.{i + 1}")) for i in range(9)]
    for client in rotated(ClientBook(clock=clock), 20):  # the book groups most of them by address ...
        park(reg, clock, client)
    assert all(r.training_state_bytes > 0 and r.status == "paused" for r in honest)
    for i in range(20):  # ... and even ids that each count alone push out nobody who came before them
        park(reg, clock, Client(f"far{i}", f"far-id{i}", f"192.0.2.{i + 1}"))
    assert all(r.training_state_bytes > 0 and r.status == "paused" for r in honest)
    assert reg.parked_count() == 12
    late = park(reg, clock, Client("late", "late-id", "198.51.100.99"))  # an honest newcomer parks too: it
    assert late.training_state_bytes == 0  # gives way itself, as the youngest, rather than push anyone out
    assert all(r.training_state_bytes > 0 for r in honest)


def test_the_address_behind_a_proxy_counts_only_when_the_proxy_is_named() -> None:
    proxies = trusted_proxies("10.0.0.0/24, 127.0.0.1")
    assert proxies[0] == ipaddress.ip_network("10.0.0.0/24")
    assert client_address("10.0.0.5", "198.51.100.4", proxies) == "198.51.100.4"
    assert client_address("10.0.0.5", "1.2.3.4, 198.51.100.4, 10.0.0.9", proxies) == "198.51.100.4"  # the
    # left entries are the sender's own words; our own proxies' hops are skipped
    assert client_address("198.51.100.4", "1.2.3.4", proxies) == "198.51.100.4"  # not our proxy: header ignored
    assert client_address("10.0.0.5", "1.2.3.4", ()) == "10.0.0.5"  # no proxy named: the peer
    assert client_address("10.0.0.5", "not-an-address", proxies) == "10.0.0.5"
    assert client_address(None, "1.2.3.4", proxies) == "1.2.3.4"  # a proxy on this host (127.0.0.1 is named)
    assert client_address(None, "1.2.3.4", trusted_proxies("10.0.0.0/24")) is None  # this host, not a proxy
    with pytest.raises(ValueError, match="TE_TRUSTED_PROXIES"):
        trusted_proxies("10.0.0.0/24, nginx")
