"""Image uploads through the real browser: bad files get a clear message, odd ones are converted, the page lives on."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.actions import alerts, nudge_slider, open_page, pick_radio
from tests.e2e.conftest import assert_no_exception, wait_for_app
from tests.hardening.bad_files import BAD_IMAGES, good_png, mime_of

# Rejected files (message expected) and accepted-but-unusual ones (a note expected), kept few for speed.
REJECTED = ("zero_bytes", "text_named_png", "bomb_header")
CONVERTED = {"cmyk": "CMYK", "animated_gif": "3 frames"}


def _upload(page, file_name: str, data: bytes, *, shown: bool) -> None:
    """Upload a file, then wait until the page shows it (``shown``) or an error box that names it."""
    box = page.get_by_test_id("stFileUploaderDropzoneInput")
    box.set_input_files(files=[{"name": file_name, "mimeType": mime_of(file_name), "buffer": data}])
    if shown:
        expect(page.get_by_test_id("stImageCaption").first).to_contain_text(file_name)
    else:
        page.get_by_test_id("stAlert").filter(has_text=file_name).wait_for()
    wait_for_app(page)


def _picture_caption(page) -> str:
    """Caption of the first picture: it starts with the name of the picture shown (file name or sample)."""
    return page.get_by_test_id("stImageCaption").first.inner_text()


def _page_text(page) -> str:
    return page.get_by_test_id("stMain").inner_text()


def test_bad_and_odd_uploads_on_the_vit_page(page):
    open_page(page, "/vit")
    pick_radio(page, "Picture", "Upload your own")
    for name in REJECTED:
        file_name, build, phrase = BAD_IMAGES[name]
        _upload(page, file_name, build(), shown=False)
        assert_no_exception(page)
        messages = [m for m in alerts(page) if file_name in m]
        assert messages and phrase in messages[0], f"{name}: {alerts(page)}"
        assert _picture_caption(page).startswith("sample"), f"{name}: the sample should be shown instead"
    for name, note in CONVERTED.items():
        file_name, build, _ = BAD_IMAGES[name]
        _upload(page, file_name, build(), shown=True)
        assert_no_exception(page)
        assert not [m for m in alerts(page) if "Showing the sample" in m], f"{name}: {alerts(page)}"
        assert _picture_caption(page).startswith(file_name)
        assert note in _page_text(page), f"{name}: no note saying '{note}'"
    _upload(page, "fine.png", good_png(), shown=True)
    nudge_slider(page, "Patch size P (pixels)", -1)  # the page still responds to its controls afterwards
    assert_no_exception(page)
    assert _picture_caption(page).startswith("fine.png")

