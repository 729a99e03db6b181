"""*Where does it decide?* without Streamlit: curated pairs, the setup of each kind of model, default answers,
progress and stopping, and the attribution parts as CSV."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
import torch

from explorer.lab import decide as lab
from explorer.lab.decide_pairs import CAUSAL_PAIRS, PAIRS_BY_TASK, TextPair, differing, fitting_pairs
from transformer_core import CausalLM, TransformerConfig
from transformer_core.patching import logit_difference, patch_heads, patch_residual
from transformer_core.tasks import get_task


@pytest.fixture(name="model")
def model_fixture():
    torch.manual_seed(0)
    return CausalLM(TransformerConfig(vocab_size=50, max_len=32, d_model=32, n_heads=4, n_layers=3)).eval()


def _pair(model):
    clean, corrupt = lab.Reading((3, 14, 15, 9, 26, 5), tuple("abcdef")), lab.Reading((3, 14, 15, 7, 26, 5),
                                                                                     tuple("abcXef"))
    return lab.prepare(model, "causal", clean, corrupt)


def test_pairs_are_kept_only_when_both_texts_have_as_many_tokens():
    lengths = {"a b": 2, "a c": 2, "x": 1, "x y": 2}
    pairs = [TextPair("same", "Same", "a b", "a c", ""), TextPair("uneven", "Uneven", "x", "x y", ""),
             TextPair("unread", "Unread", "a b", "zz", "")]
    assert [p.key for p in fitting_pairs(pairs, lengths.get)] == ["same"]
    assert differing(["a", "b", "c"], ["a", "x", "c"]) == [1]
    with pytest.raises(ValueError, match="different lengths"):
        differing(["a"], ["a", "b"])
    for pairs in (CAUSAL_PAIRS, *PAIRS_BY_TASK.values()):  # character pairs: as many characters
        for p in pairs:
            assert p.clean != p.corrupt
    assert all(len(p.clean) == len(p.corrupt) for p in PAIRS_BY_TASK["char_lm"] + PAIRS_BY_TASK["reverse"])


def test_the_char_pairs_fit_the_grammar_corpus_vocabulary():
    stoi = get_task("char_lm").stoi
    for p in PAIRS_BY_TASK["char_lm"]:
        assert set(p.clean + p.corrupt) <= set(stoi)


def test_prepare_marks_the_changed_position_and_refuses_uneven_texts(model):
    setup = _pair(model)
    assert setup.marked == (3,) and setup.position == -1 and setup.read_at == "after “f”"
    with pytest.raises(ValueError, match="first text has 6 tokens and the second 5"):
        lab.prepare(model, "causal", lab.Reading((1,) * 6, ("a",) * 6), lab.Reading((1,) * 5, ("a",) * 5))
    with pytest.raises(ValueError, match="Put \\[MASK\\] in both texts"):
        lab.prepare(model, "masked", lab.Reading((1, 2), ("a", "b")), lab.Reading((1, 3), ("a", "c")), mask_id=4)
    with pytest.raises(ValueError, match="same place"):
        lab.prepare(model, "masked", lab.Reading((1, 4), ("a", "[MASK]")), lab.Reading((4, 1), ("[MASK]", "a")),
                    mask_id=4)


def test_default_answers_are_each_texts_top_or_the_next_choice():
    assert lab.default_answers([5, 6], [7, 5]) == (5, 7, False)
    assert lab.default_answers([5, 6], [5, 8]) == (5, 6, True)


def test_patching_equals_the_library_reports_each_layer_and_stops_when_asked(model):
    setup = _pair(model)
    answer, other, _ = lab.default_answers(*lab.candidates(model, setup))
    calls = []
    result = lab.run_patching(model, setup, answer, other, "heads", lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    expected = patch_heads(model, setup.clean, setup.corrupt, logit_difference(answer, other))
    np.testing.assert_array_equal(result.patched, expected.patched)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        if done == 1:
            raise Stop

    with pytest.raises(Stop):  # a click in the page interrupts at the first update
        lab.run_patching(model, setup, answer, other, "residual", stop)
    again = lab.run_patching(model, setup, answer, other, "residual")  # nothing of the stopped run is left
    reference = patch_residual(model, setup.clean, setup.corrupt, logit_difference(answer, other))
    np.testing.assert_array_equal(again.patched, reference.patched)
    assert again.restored[0, 3] == pytest.approx(1.0, abs=1e-4)  # the changed token put back before block 0


def test_attribution_parts_add_up_and_their_csv_holds_them(model):
    setup = _pair(model)
    dla = lab.attribution(model, setup, 8, 11)
    rows = list(csv.reader(io.StringIO(lab.attribution_csv(dla))))
    assert rows[0] == ["part", "layer", "head", "value"] and len(rows) == 1 + 3 * 5 + 1 + 1
    assert rows[1][:3] == ["L1 H1", "1", "1"] and rows[5][:3] == ["L1 MLP", "1", ""] and rows[-2][0] == "rest"
    parts = sum(float(r[3]) for r in rows[1:-1])
    assert rows[-1][0] == "total" and parts == pytest.approx(float(rows[-1][3]), abs=1e-5)


def test_the_encoder_decoder_reads_its_first_differing_digit():
    task = get_task("reverse")
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config()).eval()
    digits = {str(d): d + 3 for d in range(10)}
    clean, corrupt = (lab.Reading(tuple(digits[c] for c in t), tuple(t)) for t in ("31415926", "31475926"))
    answers = [lab.greedy_answer(model, r.ids) for r in (clean, corrupt)]
    setup = lab.prepare(model, "seq2seq", clean, corrupt, stack="encoder")
    source, target = setup.clean
    at = len(target) - 1
    assert source == clean.ids and setup.corrupt[1] == target and setup.marked == (3,)
    assert target[1:] == answers[0][:at] and (at == len(answers[0]) or answers[0][at] != answers[1][at])
    decoder = lab.prepare(model, "seq2seq", clean, corrupt, stack="decoder")
    assert decoder.columns[0] == "BOS" and len(decoder.columns) == len(target) and decoder.marked == ()
    assert lab.run_patching(model, decoder, 4, 5, "residual").patched.shape == (2, len(target))
    assert isinstance(lab.attribution(model, setup, 4, 5), str)
