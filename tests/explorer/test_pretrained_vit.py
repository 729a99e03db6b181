"""A pretrained ViT on one picture, checked against transformers (the reference implementation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.pretrained.vit import classify
from tests.pretrained.hf_folders import vit_folder
from transformer_core.pretrained import load_pretrained

CENTRE_CROP = {"do_resize": True, "size": {"shortest_edge": 40}, "resample": 3, "do_center_crop": True,
               "crop_size": {"height": 32, "width": 32}, "do_rescale": True, "rescale_factor": 1 / 255,
               "do_normalize": True, "image_mean": [0.5, 0.4, 0.3], "image_std": [0.2, 0.25, 0.3]}


@pytest.fixture(scope="module", name="vit")
def vit_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vit")
    hf = vit_folder(folder, layers=3, heads=4, classes=7, preprocessor=CENTRE_CROP)
    return hf, load_pretrained(folder)


def _picture(h: int = 50, w: int = 70) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def test_top_labels_cls_attention_and_rollout_match_the_reference(vit):
    hf, pre = vit
    pixels = _picture()
    run = classify(pre, pixels, k=5)
    from PIL import Image

    x = pre.preprocess(Image.fromarray(pixels))
    out = hf(pixel_values=x, output_attentions=True)
    probs = torch.softmax(out.logits[0].double(), -1)
    top = probs.topk(5)
    assert [lab.name for lab in run.top] == [hf.config.id2label[int(i)] for i in top.indices]
    assert [lab.probability for lab in run.top] == pytest.approx(top.values.tolist(), abs=1e-5)
    grid = run.walk.grid_size
    for layer, ref in enumerate(out.attentions):
        for head in range(4):
            torch.testing.assert_close(run.walk.cls_attention(layer, head),
                                       ref[0, head, 0, 1:].reshape(grid, grid), atol=1e-5, rtol=0)
    assert run.walk.cls_rollout().sum() == pytest.approx(1 - float(run.walk.rollout[0, 0]), abs=1e-5)


def test_the_pixels_shown_are_what_the_model_saw(vit):
    _, pre = vit
    pixels = _picture()
    run = classify(pre, pixels)
    assert run.pixels.shape == (32, 32, 3)
    from PIL import Image

    resized = np.asarray(Image.fromarray(pixels).resize((56, 40), resample=3))  # shortest edge 40
    crop = resized[4:36, 12:44]
    assert np.abs(run.pixels.astype(int) - crop.astype(int)).max() <= 1  # float round trip of the normalisation


def test_a_text_model_is_refused(tmp_path):
    from tests.pretrained.hf_folders import gpt2_folder

    gpt2_folder(tmp_path)
    with pytest.raises(ValueError, match="not a picture model"):
        classify(load_pretrained(tmp_path), _picture())
