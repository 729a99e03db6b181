"""ViT Patching's pretrained section on a small random-initialised ViT folder."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image

from tests.app.conftest import app_at
from tests.app.test_attention_lab import _z
from tests.pretrained.hf_folders import vit_folder
from ui.common.images import SAMPLES_DIR
from ui.vit import controls as vc

PAGE = "pages/vit.py"


@pytest.fixture(name="models")
def models_fixture(tmp_path, monkeypatch):
    root = tmp_path / "models"
    hf = vit_folder(root / "tiny-vit", layers=2, heads=2, classes=8)
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    return root, hf


def _label_tables(at) -> list:
    return [d.value for d in at.dataframe if list(d.value.columns) == ["token", "probability"]]


def test_top5_labels_are_the_models_and_cls_attention_is_drawn(models):
    root, hf = models
    at = app_at(PAGE)
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key=vc.PRETRAINED).value == "tiny-vit"  # the menu holds names, its labels add sizes
    (table,) = _label_tables(at)
    from transformer_core.pretrained import load_pretrained

    pre = load_pretrained(root / "tiny-vit")
    sample = Image.open(SAMPLES_DIR / "house.png").convert("RGB")
    probs = torch.softmax(hf(pixel_values=pre.preprocess(sample)).logits[0].double(), -1).topk(5)
    assert table["token"].tolist() == [hf.config.id2label[int(i)] for i in probs.indices]
    assert table["probability"].tolist() == pytest.approx(probs.values.tolist(), abs=1e-5)
    captions = " ".join(c.value for c in at.caption)
    assert "**tiny-vit** (ViTForImageClassification)" in captions and "8 classes" in captions
    at.radio(key=vc.PRE_LAYER).set_value(2).run()
    at.radio(key=vc.PRE_HEAD).set_value(2).run()
    assert not at.exception, [e.message for e in at.exception]


def test_without_a_vit_the_section_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path / "empty"))
    from ui.common.pretrained import _hub_online

    _hub_online.clear()
    at = app_at(PAGE)
    assert not at.exception, [e.message for e in at.exception]
    assert any("No ViT model is on this machine yet" in c.value for c in at.caption)
    texts = " ".join(m.value for m in at.markdown)
    assert "download google/vit-base-patch16-224 --to models/" in texts
    assert "WinKawaks/vit-tiny-patch16-224" in texts


def test_the_section_names_the_model_and_its_labels(models):
    at = app_at(PAGE)
    intro = next(m.value for m in at.markdown if "reads the same picture" in m.value)
    assert intro.startswith("**tiny-vit**") and "8 labels" in intro and "ImageNet" not in intro


def test_a_large_patch_grid_gets_its_numbers_in_every_patch(tmp_path, monkeypatch):
    """A 14 × 14 grid (as ViT-B/16's) is drawn page-wide with a number in each patch, not one flat block."""
    root = tmp_path / "models"
    vit_folder(root / "fine-vit", layers=1, heads=2, image=56, patch=4)  # 14 × 14 patches
    monkeypatch.setenv("TE_MODELS_DIR", str(root))
    at = app_at(PAGE)
    assert not at.exception, [e.message for e in at.exception]
    chart = next(c for c in at.get("plotly_chart") if "vit.pre_cls_numbers" in c.proto.id)
    spec = json.loads(chart.proto.spec)
    trace = spec["data"][0]
    assert _z(trace).shape == (14, 14) and len(trace["text"]) == 14 and trace["texttemplate"] == "%{text}"
    assert spec["layout"]["title"]["text"] == "CLS attention of layer 1, head 1, per patch (%)"
