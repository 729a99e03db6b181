"""Remarks on sample predictions: digit answers counted against the right length, generated sentences judged."""

from __future__ import annotations

import pytest

from transformer_core.tasks import get_task
from transformer_core.tasks.grammar import generate_corpus, grammar_problem
from transformer_core.tasks.sequences import answer_errors
from ui.training.samples import samples_html


@pytest.mark.parametrize(("prediction", "target", "remark"), [
    ("1243", "1234", "2 of 4 digits wrong"),
    ("12", "1234", "2 of 4 digits wrong"),  # missing digits are wrong positions
    ("123499", "1234", "2 extra digits"),  # never "6 of 4"
    ("923455", "1234", "1 of 4 digits wrong, 2 extra digits"),
    ("12345", "1234", "1 extra digit"),
])
def test_digit_answers_are_counted_against_the_right_length(prediction, target, remark):
    assert answer_errors(prediction, target) == remark


def test_sentences_of_the_grammar_have_no_problem():
    assert all(grammar_problem(line) == "" for line in generate_corpus(300, seed=3).splitlines())


@pytest.mark.parametrize(("text", "phrase"), [
    ("A small runder apples.", "'runder' is not a word"),
    ("The cat sees a ball", "does not end"),
    ("the cat sees a ball.", "capital"),
    ("The cat a ball sees.", "break the grammar"),
    ("The cats sees a ball.", "break the grammar"),  # agreement is part of the grammar
])
def test_a_broken_sentence_says_what_breaks_it(text, phrase):
    assert phrase in grammar_problem(text)


def test_language_samples_are_judged_as_sentences(monkeypatch):
    task = get_task("char_lm")

    def finish(model, prompt, n, **kwargs):  # a perfect model: it ends a held-out line and starts the next
        line = next(line for line in task.val_text.split("\n") if line.startswith(prompt))
        return line[len(prompt):] + "\nThe"

    monkeypatch.setattr(task, "generate_text", finish)
    samples = task.samples(None, 4, seed=1)
    assert all(s.correct and s.detail == "a sentence of the grammar" for s in samples)


def test_generated_text_is_marked_whole_without_padding():
    task = get_task("char_lm")
    from transformer_core.tasks import Sample

    wrong = Sample("The cat", " sees the big old red ball near a tree.", " runs.", False, "x")
    html = samples_html([wrong], task.family)
    assert "·" not in html and "missing characters" not in html
    assert "runs." in html and "✗" in html
