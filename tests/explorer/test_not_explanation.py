"""The lesson "Attention is not explanation" really disagrees on its model: the word the last token attends to most
is not the word attribution picks, changing that word does not change the answer, and changing the attributed word
flips it, with patching its residual back restoring the answer."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons import not_explanation as ne


@pytest.fixture(scope="module", name="model")
def model_fixture():
    return ne.agreement_model()


def test_the_model_agrees_the_verb_with_the_subject(model):
    assert next(iter(ne.next_word(model))) == "is"
    assert next(iter(ne.next_word(model, "the keys to the cabinet"))) == "are"
    assert next(iter(ne.next_word(model, "a key to the cabinets"))) == "is"
    assert ne.next_word(model)["is"] > 0.8


def test_attention_and_attribution_disagree(model):
    found = ne.findings(model)
    words = ne.SENTENCE.split()
    assert words[found.most_attended] == "the" and found.most_attended == 0 and found.attention_share > 0.5
    assert [words[i] for i in found.most_attributed] == ["key", "key"]
    row = ne.attention_map(model)[-1]
    assert row[1] < 0.5 * row[0]  # the subject gets well under half the sink's weight
    np.testing.assert_allclose(ne.attention_map(model).sum(axis=-1), 1.0, rtol=1e-5)


def test_integrated_gradients_is_complete(model):
    ig = ne.attributions(model, "integrated_gradients")
    assert abs(ig.gap) < 1e-3 * abs(ig.output - ig.baseline_output)
    grad = ne.attributions(model, "grad_x_input")
    assert np.argmax(np.abs(grad.values)) == np.argmax(np.abs(ig.values)) == 1


def test_patching_confirms_the_attributed_word(model):
    by_word = {ne.SENTENCE.split()[c.position]: c for c in ne.findings(model).changes}
    attended, attributed = by_word["the"], by_word["key"]
    assert attended.answer == "is" and attributed.answer == "are"
    assert attributed.patching.clean > 0 > attributed.patching.corrupt  # the answer flips
    np.testing.assert_allclose(attributed.patching.restored[0], [0, 1, 0, 0, 0], atol=1e-5)
    span = abs(attended.patching.clean - attended.patching.corrupt)
    assert span < 0.1 * abs(attributed.patching.clean - attributed.patching.corrupt)


def test_unknown_words_are_refused_with_the_vocabulary():
    with pytest.raises(ValueError, match="not dog"):
        ne.encode("the dog is")
    with pytest.raises(ValueError, match="up to 8"):
        ne.encode("")
