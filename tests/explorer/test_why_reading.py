"""Reading an attribution beside an attention row: the sentence, the CSV and the PNG of *Why this word?*."""

from __future__ import annotations

import csv
import io

import numpy as np
from PIL import Image

from explorer.lab.why_reading import as_rows, disagreement, why_csv, why_png

TOKENS = ("the", "cat", "sat")


def test_the_sentence_names_both_tokens_when_they_disagree_and_says_when_they_agree():
    said = disagreement(np.array([0.1, -2.0, 0.3]), np.array([0.7, 0.1, 0.2]), TOKENS)
    assert said.startswith("They disagree") and "“the” (position 0) (70%)" in said and "“cat” (position 1)" in said
    assert "lowered it by 2" in said
    assert disagreement(np.array([0.1, 2.0, 0.3]), np.array([0.1, 0.8, 0.1]), TOKENS).startswith("They agree")
    assert "nothing to compare" in disagreement(np.zeros(3), np.array([0.2, 0.3, 0.5]), TOKENS)


def test_the_csv_has_one_line_per_token_with_both_numbers_and_the_encoder_decoders_parts():
    rows = list(csv.reader(io.StringIO(why_csv(TOKENS, np.array([0.5, -1.25, 2.0]), np.array([0.2, 0.3, 0.5])))))
    assert rows[0] == ["position", "part", "token", "attribution", "attention"]
    assert [(r[2], float(r[3]), float(r[4])) for r in rows[1:]] == [("the", 0.5, 0.2), ("cat", -1.25, 0.3),
                                                                     ("sat", 2.0, 0.5)]
    parts = list(csv.reader(io.StringIO(why_csv(("3", "1", "<start>"), np.ones(3), np.ones(3), n_source=2))))
    assert [(r[0], r[1]) for r in parts[1:]] == [("0", "source"), ("1", "source"), ("0", "target")]


def test_source_and_target_become_two_rows_padded_with_empty_cells():
    z, text, names = as_rows(np.array([1.0, 2.0, 3.0]), ("a", "b", "<start>"), 2)
    assert names == ["source", "target"] and z.shape == (2, 2) and np.isnan(z[1, 1])
    assert text.tolist() == [["a", "b"], ["<start>", ""]]


def test_the_png_stacks_the_attribution_above_the_attention():
    one = Image.open(io.BytesIO(why_png(TOKENS, np.array([0.5, -1.0, 2.0]), np.array([0.2, 0.3, 0.5]))))
    assert one.format == "PNG"
    pixels = np.asarray(one.convert("RGB")).astype(int)
    reddish = (pixels[..., 0] > 90) & (pixels[..., 0] - pixels[..., 2] > 60) & (pixels[..., 1] < 60)  # the +2 cell
    rows = np.nonzero(reddish.any(axis=1))[0]
    assert rows.size and rows.max() < one.height / 2  # the attribution is the upper picture
    two = Image.open(io.BytesIO(why_png(("a", "b", "<start>"), np.ones(3), np.ones(3), 2)))
    assert two.format == "PNG" and two.width > 0
