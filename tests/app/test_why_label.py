"""ViT Patching's *Why this label?*: refused on random weights; on a trained ViT and a small pretrained ViT folder,
the patch attributions equal :func:`transformer_core.attribution.token_attributions` on the tensor the model read,
and integrated gradients add up to the class logit's change."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest

from explorer.images import image_to_tensor_array
from tests.app.conftest import APP, DEFAULT_TIMEOUT, app_at, assert_no_exception
from tests.pretrained.hf_folders import vit_folder
from transformer_core.attribution import token_attributions
from transformer_core.tasks import get_task
from ui.common import state
from ui.common.images import SAMPLES_DIR, load_sample
from ui.vit import controls as vc
from ui.vit.why_label import RANDOM

PAGE = "pages/vit.py"


def _results(at, key: str) -> list:
    return list(at.session_state[f"{key}.results"].values())


def test_random_weights_are_refused_with_what_to_do():
    at = app_at(PAGE)
    at.toggle(key="vit.why.on").set_value(True).run()
    assert_no_exception(at)
    assert any(i.value == RANDOM for i in at.info)


def test_a_trained_vit_explains_its_label_per_patch_and_integrated_gradients_are_complete():
    task = get_task("vit_shapes")
    config = task.default_model_config()
    torch.manual_seed(0)
    model = task.build_model(config).eval()
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.session_state[state.TRAINED] = {
        "vision": state.TrainedModel("vision", task.name, task.title, model, config, step=10)}
    at.run()
    at.switch_page(PAGE).run()
    images = len(at.image)
    at.toggle(key="vit.why.on").set_value(True).run()
    assert_no_exception(at)
    assert len(at.image) == images + 2  # the attribution over the picture, beside the rollout
    pixels = vc.fitted_pixels(load_sample("house"), config.image_size, "center-crop")
    x = task.model_input(torch.from_numpy(image_to_tensor_array(pixels, config.in_channels))[None])[0]
    with torch.no_grad():
        logits = model(x[None])[0]
    top = logits.topk(2).indices.tolist()
    (quick,) = _results(at, "vit.why")
    expected = token_attributions(model, x, top[0]).values
    assert expected.shape == ((config.image_size // config.patch_size) ** 2,) and np.abs(expected).max() > 0
    np.testing.assert_allclose(quick.values, expected, rtol=1e-4, atol=1e-6)
    assert any("the rollout looks most at" in m.value for m in at.markdown)

    at.selectbox(key="vit.why.target").set_value(1).run()
    at.radio(key="vit.why.method").set_value("integrated_gradients").run()
    at.selectbox(key="vit.why.steps").set_value(16).run()
    next(b for b in at.button if b.label.startswith("Compute integrated gradients")).click().run()
    assert_no_exception(at)
    ig = next(r for r in _results(at, "vit.why") if r.method == "integrated_gradients")
    np.testing.assert_allclose(ig.output, float(logits[top[1]]), rtol=1e-4)
    assert any("completeness gap" in c.value for c in at.caption)


@pytest.fixture(name="models")
def models_fixture(tmp_path, monkeypatch):
    root = tmp_path / "models"
    vit_folder(root / "tiny-vit", layers=2, heads=2, classes=8)
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    return root


def test_a_pretrained_vit_explains_its_top_label(models):
    from transformer_core.pretrained import load_pretrained

    at = app_at(PAGE)
    at.toggle(key="vit.pre_why.on").set_value(True).run()
    assert_no_exception(at)
    pre = load_pretrained(models / "tiny-vit")
    x = pre.preprocess(Image.open(SAMPLES_DIR / "house.png").convert("RGB"))[0]
    with torch.no_grad():
        best = int(pre.model(x[None])[0].argmax())
    (quick,) = _results(at, "vit.pre_why")
    np.testing.assert_allclose(quick.values, token_attributions(pre.model, x, best).values, rtol=1e-4, atol=1e-6)
    assert at.selectbox(key="vit.pre_why.target").options[0].startswith(pre.labels[best])
