"""ViT Patching page: renders, follows its controls, survives bad uploads, uses a trained ViT, keeps the URL."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from tests.app.conftest import app_at, assert_no_exception, link_notices, opened_from_link
from transformer_core.tasks import get_task
from ui.common import state
from ui.vit import controls as vc

PAGE = "pages/vit.py"
FIXED_IMAGES = 5  # grid, mosaic, sequence strip, chosen head, rollout; then one picture per head


def png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def bomb() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", 50_000, 50_000, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(b"\0" * 4000))


@pytest.fixture(scope="module")
def page():
    at = app_at(PAGE)
    assert_no_exception(at)
    return at


def metric(at, start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(start))


def test_renders_with_one_picture_per_head(page):
    assert len(page.image) == FIXED_IMAGES + 4
    assert metric(page, "Patches") == "8·8 = 64"
    assert metric(page, "Scores per head") == f"{65**2:,}"
    assert len(page.get("plotly_chart")) == 4  # N and cost, patch matrix, tokens, CLS weights as numbers


def test_controls_change_what_is_shown(page):
    page.selectbox(key=vc.HEADS).set_value(2).run()
    assert_no_exception(page)
    assert len(page.image) == FIXED_IMAGES + 2
    assert [r.value for r in page.radio if r.key == vc.HEAD] and page.radio(key=vc.HEAD).options == ["1", "2"]
    page.select_slider(key=vc.PATCH).set_value(16).run()
    assert_no_exception(page)
    assert metric(page, "Patches") == "4·4 = 16"
    assert page.query_params.get(vc.PATCH) == "16" and page.query_params.get(vc.HEADS) == "2"
    page.selectbox(key=vc.SIZE).set_value(96).run()
    assert_no_exception(page)
    assert page.select_slider(key=vc.PATCH).value in vc.patch_choices(96)
    assert page.radio(key=vc.LAYER).options == ["1", "2", "3", "4"]


def test_uploads_good_and_bad(page):
    page.radio(key=vc.SOURCE).set_value("upload").run()
    good = Image.new("RGB", (120, 80), (200, 30, 30))
    bad_files = {
        "empty.png": b"",
        "notes.png": b"just some text, not a picture\n",
        "half.png": png(good)[:200],
        "bomb.png": bomb(),
    }
    for name, data in bad_files.items():
        page.file_uploader(key=vc.UPLOAD).set_value((name, data, "image/png")).run()
        assert_no_exception(page)
        assert any(name in e.value for e in page.error), name
        assert len(page.image) == FIXED_IMAGES + page.selectbox(key=vc.HEADS).value  # the page draws on ...
        assert page.image[0].proto.imgs[0].caption.startswith("sample")  # ... with the sample instead
    rgba = Image.new("RGBA", (64, 64), (0, 0, 255, 0))
    page.file_uploader(key=vc.UPLOAD).set_value(("clear.png", png(rgba), "image/png")).run()
    assert_no_exception(page)
    assert not page.error and any("white background" in c.value for c in page.caption)
    page.file_uploader(key=vc.UPLOAD).set_value(("red.png", png(good), "image/png")).run()
    assert_no_exception(page)
    assert not page.error


def test_url_settings_are_applied():
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP, DEFAULT_TIMEOUT

    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.run()
    at.query_params.update({vc.SAMPLE: "checkerboard", vc.SIZE: "32", vc.PATCH: "8", vc.LAYERS: "1",
                            vc.HEADS: "7"})
    at.switch_page(PAGE)
    at.run()
    assert_no_exception(at)
    assert at.selectbox(key=vc.SAMPLE).value == "checkerboard"
    assert metric(at, "Patches") == "4·4 = 16"
    assert at.selectbox(key=vc.HEADS).value in (4, 8)  # 7 does not divide d_model = 64: nearest valid count


def test_link_values_that_do_not_fit_are_changed_with_a_notice():
    at = opened_from_link(PAGE, {vc.PATCH: "7", vc.HEADS: "5", vc.LAYER: "7"})
    assert link_notices(at) == [
        "The link's setting vit.patch='7' was changed to 8: only patches of 4, 8, 16, 32 pixels cut a 64-pixel "
        "image into 4 to 400 patches.",
        "The link's setting vit.heads='5' was changed to 4: the number of heads must divide d_model 64 and be at "
        "most 16.",
        "The link's setting vit.layer='7' was changed to 4: the model has 4 layers.",
    ]
    assert at.select_slider(key=vc.PATCH).value == 8 and at.selectbox(key=vc.HEADS).value == 4
    assert at.radio(key=vc.LAYER).value == 4
    assert at.query_params.get(vc.PATCH) is None and at.query_params.get(vc.LAYER) == "4"
    at.selectbox(key=vc.HEADS).set_value(2).run()
    assert len(link_notices(at)) == 3  # the notices stay for the visit


def test_fitting_links_and_widget_changes_give_no_notice():
    at = opened_from_link(PAGE, {vc.PATCH: "16", vc.HEADS: "2", vc.LAYER: "3"})
    assert not link_notices(at)
    assert at.select_slider(key=vc.PATCH).value == 16 and at.radio(key=vc.LAYER).value == 3
    at.selectbox(key=vc.D_MODEL).set_value(48).run()
    at.selectbox(key=vc.HEADS).set_value(3).run()
    at.selectbox(key=vc.D_MODEL).set_value(64).run()  # 3 heads do not divide 64: moved without a notice
    at.select_slider(key=vc.PATCH).set_value(4).run()
    at.selectbox(key=vc.SIZE).set_value(96).run()  # 4-pixel patches make too many on 96 pixels
    assert_no_exception(at)
    assert at.selectbox(key=vc.HEADS).value == 2  # the nearest count, the smaller one on a tie
    assert at.select_slider(key=vc.PATCH).value == 6
    assert not at.info


def test_trained_vit_and_projector_mode():
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP, DEFAULT_TIMEOUT

    task = get_task("vit_shapes")
    config = task.default_model_config()
    model = task.build_model(config).eval()
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.session_state[state.TRAINED] = {
        "vision": state.TrainedModel("vision", task.name, task.title, model, config, step=10)}
    at.run()
    at.query_params[vc.SIZE] = "96"
    at.switch_page(PAGE)
    at.run()
    assert_no_exception(at)
    assert at.radio(key=vc.WEIGHTS).value == "trained"  # the default when a trained ViT exists
    fixed = at.selectbox(key="vit.fixed_size")
    assert fixed.value == config.image_size and fixed.disabled
    assert any("The trained ViT says" in m.value for m in at.markdown)
    assert len(at.image) == FIXED_IMAGES + config.n_heads
    at.radio(key=vc.WEIGHTS).set_value("random").run()
    assert at.selectbox(key=vc.SIZE).value == 96  # the link's setting comes back with random weights
    at.radio(key=vc.WEIGHTS).set_value("trained").run()
    at.radio(key=vc.SOURCE).set_value("task").run()
    assert_no_exception(at)
    at.session_state[state.PRESENTATION] = True
    at.run()
    assert_no_exception(at)
    assert not [s for s in at.selectbox if s.key == vc.D_MODEL]
    assert len(at.image) == FIXED_IMAGES + config.n_heads


def test_sample_pictures_exist():
    from ui.common.images import SAMPLE_ORDER, load_sample, sample_names

    assert sample_names()[: len(SAMPLE_ORDER)] == list(SAMPLE_ORDER)
    for name in SAMPLE_ORDER:
        pixels = load_sample(name)
        assert pixels.dtype == np.uint8 and pixels.shape == (224, 224, 3)


def test_a_stored_task_is_used_instead_of_one_rebuilt_from_its_name():
    import copy

    task = copy.copy(get_task("vit_shapes"))
    task.classes = ("blob", "box", "wedge", "plus")  # only the stored task knows these names
    config = task.default_model_config()
    model = task.build_model(config).eval()
    entry = state.TrainedModel("vision", task.name, task.title, model, config, step=3, task=task)
    assert vc.trained_task(entry) is task
    rebuilt = vc.trained_task(state.TrainedModel("vision", task.name, task.title, model, config, step=3))
    assert rebuilt is not None and rebuilt is not task and rebuilt.classes == ("circle", "square", "triangle", "cross")
    at = app_at(None)
    at.session_state[state.TRAINED] = {"vision": entry}
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    said = next(m.value for m in at.markdown if "The trained ViT says" in m.value)
    assert any(f"**{name}**" in said for name in task.classes), said
