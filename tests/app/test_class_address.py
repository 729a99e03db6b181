"""The class link's address is one students can open: TE_PUBLIC_URL, else the browser's own address when its host
is not this machine (a proxy, Community Cloud), else Streamlit's network URL; never localhost when another exists.
Its QR code is large enough for a projector."""

from __future__ import annotations

import io

import pytest

from ui.training import address

QUERY = {"class": "k" * 22}


@pytest.fixture
def browser_at(monkeypatch):
    """Pretend the owner's browser opened the app at a given root address."""

    def at(root: str) -> None:
        monkeypatch.setattr(address, "view_link", lambda path, query: f"{root}/{path}?class={query['class']}")
        monkeypatch.delenv(address.PUBLIC_URL_ENV, raising=False)

    return at


@pytest.mark.parametrize(
    "root", ["http://127.0.0.1:8765", "http://localhost:8501", "http://[::1]:8501", "http://0.0.0.0:8501"]
)
def test_a_laptop_hands_out_its_network_address(browser_at, root: str) -> None:
    browser_at(root)
    link, note = address.reachable_link("training", QUERY, network="http://192.168.1.20:8501")
    assert link == f"http://192.168.1.20:8501/training?class={QUERY['class']}&lang=en" and note is None


@pytest.mark.parametrize(
    "root", ["https://explorer.streamlit.app", "https://school.example.org/explorer", "http://192.168.1.20:8501"]
)
def test_a_public_or_network_address_in_the_browser_is_kept(browser_at, root: str) -> None:
    browser_at(root)
    link, note = address.reachable_link("training", QUERY, network="http://10.0.0.9:8501")
    assert link.startswith(root + "/training?class=") and note is None


def test_te_public_url_wins(browser_at, monkeypatch) -> None:
    browser_at("http://127.0.0.1:8501")
    monkeypatch.setenv(address.PUBLIC_URL_ENV, "https://class.example.org/te/")
    link, _ = address.reachable_link("training", QUERY, network="http://192.168.1.20:8501")
    assert link == f"https://class.example.org/te/training?class={QUERY['class']}&lang=en"


def test_no_network_address_says_what_to_do(browser_at) -> None:
    browser_at("http://localhost:8501")
    link, note = address.reachable_link("training", QUERY, network="")
    assert link.startswith("http://localhost:8501/") and address.PUBLIC_URL_ENV in note


def test_the_qr_code_fills_a_projector_corner() -> None:
    pytest.importorskip("segno", reason="segno is not installed (pip install -r requirements.txt)")
    from PIL import Image

    png = address.qr_png(f"http://192.168.1.20:8501/training?class={QUERY['class']}")
    image = Image.open(io.BytesIO(png))
    assert 280 <= image.width <= address.QR_PIXELS + 40 and image.width == image.height


def test_the_class_link_opens_in_the_teachers_language() -> None:
    """A teacher's page in German hands out a class link (and QR code) that opens in German."""
    from explorer.i18n import using_language
    from tests.app.conftest import opened_from_link
    from ui.training import share

    query = {
        "task": "reverse",
        "d_model": "16",
        "heads": "2",
        "layers": "1",
        "d_ff": "32",
        "batch": "8",
        "steps": "10",
        "lang": "de",
    }
    with using_language("de"):  # the test's own thread reads the widgets' German labels as the page wrote them
        at = opened_from_link("pages/training.py", query)
        at.toggle(key=share.SHARING).set_value(True).run()
    links = [c.value for c in at.code if f"{share.CLASS_PARAM}=" in c.value]
    assert links and all("lang=de" in link for link in links)
