"""The loaded tokenizer and image preprocessing give what transformers gives from the same files."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import ImagePreprocessor, load_pretrained

TEXTS = ["the cat sat on the mat", "Attention is all you need!", "  a dog   ran far away ", "zebra quux"]


def _fast_tokenizer(folder):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))


@pytest.mark.parametrize("make", [gpt2_folder, bert_folder])
def test_token_ids_match_the_fast_tokenizer(tmp_path, make):
    make(tmp_path)
    ours, theirs = load_pretrained(tmp_path).tokenizer, _fast_tokenizer(tmp_path)
    for text in TEXTS:
        enc = ours.encode(text)
        assert enc.ids == theirs(text)["input_ids"]
        assert enc.tokens == theirs.convert_ids_to_tokens(enc.ids)


def test_bert_pairs_get_segment_ids_and_special_tokens(tmp_path):
    bert_folder(tmp_path)
    tok = load_pretrained(tmp_path).tokenizer
    enc = tok.encode("the cat", "a dog")
    assert enc.tokens == ["[CLS]", "the", "cat", "[SEP]", "a", "dog", "[SEP]"]
    assert enc.type_ids == [0, 0, 0, 0, 1, 1, 1]
    assert enc.ids == _fast_tokenizer(tmp_path)("the cat", "a dog")["input_ids"]
    assert tok.mask_token == "[MASK]" and tok.token_to_id("[MASK]") == 4


def test_gpt2_tokenizer_round_trips_text(tmp_path):
    gpt2_folder(tmp_path)
    tok = load_pretrained(tmp_path).tokenizer
    assert tok.decode(tok.encode("the dog sat").ids) == "the dog sat"
    assert tok.mask_token is None


def _photo(width: int, height: int, seed: int = 0) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


VIT = {"do_resize": True, "size": {"height": 32, "width": 32}, "resample": 2, "do_rescale": True,
       "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.485, 0.456, 0.406],
       "image_std": [0.229, 0.224, 0.225]}
DEIT = {"do_resize": True, "size": {"height": 40, "width": 40}, "resample": 3, "do_center_crop": True,
        "crop_size": {"height": 32, "width": 32}, "do_rescale": True, "rescale_factor": 1 / 255,
        "do_normalize": True, "image_mean": [0.5, 0.4, 0.3], "image_std": [0.2, 0.25, 0.3]}


@pytest.mark.parametrize("settings", [VIT, DEIT], ids=["vit", "deit-crop"])
@pytest.mark.parametrize("size", [(32, 32), (97, 61), (20, 50)])
def test_preprocessing_matches_the_image_processor(tmp_path, settings, size):
    from transformers import DeiTImageProcessorPil, ViTImageProcessorPil

    vit_folder(tmp_path, preprocessor=settings)
    pre = load_pretrained(tmp_path)
    cls = DeiTImageProcessorPil if settings.get("do_center_crop") else ViTImageProcessorPil
    reference = cls(**settings)
    photo = _photo(*size)
    ours = pre.preprocess(photo)
    theirs = torch.as_tensor(np.asarray(reference(photo, return_tensors="np")["pixel_values"]))
    assert ours.shape == (1, 3, 32, 32) and ours.dtype == torch.float32
    torch.testing.assert_close(ours, theirs.float(), atol=1e-5, rtol=0)


def test_grey_and_transparent_pictures_become_rgb():
    pre = ImagePreprocessor.from_config(VIT, 32)
    for mode in ("L", "RGBA", "P"):
        assert pre(_photo(40, 30).convert(mode)).shape == (1, 3, 32, 32)


def test_missing_preprocessor_config_uses_vit_defaults(tmp_path):
    vit_folder(tmp_path)
    (tmp_path / "preprocessor_config.json").unlink()
    pre = load_pretrained(tmp_path).preprocess
    x = pre(Image.new("RGB", (50, 50), (255, 0, 127)))
    # defaults: rescale 1/255, mean 0.5, std 0.5 -> [-1, 1]
    torch.testing.assert_close(x[0, :, 0, 0], torch.tensor([1.0, -1.0, 127 / 255 * 2 - 1]), atol=1e-6, rtol=0)


@pytest.mark.parametrize("lowercase", [True, False])
def test_berts_with_only_a_vocab_txt_get_the_wordpiece_tokenizer(tmp_path, lowercase):
    import json

    from transformers import BertTokenizer

    bert_folder(tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "on", "mat", "Dog", "!"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase}))
    ours = load_pretrained(tmp_path).tokenizer
    theirs = BertTokenizer.from_pretrained(tmp_path)  # reads vocab.txt and tokenizer_config.json
    for text in ("The cats sat on the mat!", "Dog dog cat", "the zebra", ("the cat", "Dog")):
        pair = text if isinstance(text, tuple) else (text, None)
        enc = ours.encode(*pair)
        assert enc.ids == theirs(*pair)["input_ids"]
        assert enc.type_ids == theirs(*pair)["token_type_ids"]
    assert ours.mask_token == "[MASK]"


@pytest.mark.parametrize("change, message", [
    ({"size": {"height": 100_000, "width": 100_000}, "do_center_crop": True, "crop_size": 32},
     "'size' must be a whole number of pixels from 1 to 4096, got 100000"),
    ({"size": {"height": "big", "width": 32}}, "'size' must be a whole number of pixels"),
    ({"size": [32, 32]}, "'size' is not a size"),
    ({"resample": 99}, "resample=99 is not a known filter"),
    ({"image_mean": [0.5, 0.5]}, "'image_mean' must be three numbers"),
    ({"image_std": [0.5, 0, 0.5]}, r"'image_std' must be positive, got \[0.5, 0.0, 0.5\]"),
    ({"size": {"height": 64, "width": 64}}, r"makes \(64, 64\) pictures, but the model expects 32x32"),
])
def test_bad_preprocessor_settings_are_refused(tmp_path, change, message):
    vit_folder(tmp_path, preprocessor={**VIT, **change})
    with pytest.raises(ValueError, match=message):
        load_pretrained(tmp_path)
