"""The library's English remarks on sample predictions are said in the page's language: each remark every task
writes is read back by a pattern (a text no pattern knows would stay English on a German page)."""

from __future__ import annotations

import re

import pytest
import torch

from explorer.i18n import using_language
from tests.core.test_tasks import tiny
from transformer_core.tasks import TASK_NAMES
from transformer_core.tasks.grammar import grammar_problem
from transformer_core.tasks.sequences import answer_errors
from ui.common.theme import BASE_CSS
from ui.training.remarks import remark_text, sample_input_text
from ui.training.samples import samples_html


@pytest.mark.parametrize(("english", "german"), [
    (answer_errors("1243", "1234"), "2 von 4 Ziffern falsch"),
    (answer_errors("923455", "1234"), "1 von 4 Ziffern falsch, 2 Ziffern zu viel"),
    (answer_errors("12345", "1234"), "1 Ziffer zu viel"),
    (grammar_problem("A small runder apples."), "„runder“ ist kein Wort der Grammatik"),
    (grammar_problem("The cat sees a ball"), "der Satz endet nicht"),
    (grammar_problem("The cat a ball sees."), "echte Wörter, aber sie brechen die Regeln der Grammatik"),
    ("3 of 7 letters wrong", "3 von 7 Buchstaben falsch"),
    ("4 of 9 words appear in the text", "4 von 9 Wörtern kommen im Text vor"),
    ("90% sure", "90\xa0% sicher"),  # German puts a no-break space before %
    ("error -0.25", "Fehler −0,25"),
    ("picture 2 (1234 object pixels)", "Bild 2 (1.234 Objektpixel)"),
    ("", ""),
    ("something the library may say one day", "something the library may say one day"),  # as it is
])
def test_the_librarys_remarks_read_in_german(english, german):
    with using_language("de"):
        assert remark_text(english) == german


@pytest.mark.parametrize("name", TASK_NAMES)
def test_every_remark_and_picture_a_task_writes_is_translated(name):
    task, config = tiny(name)
    torch.manual_seed(0)
    samples = task.samples(task.build_model(config), 6, seed=0)
    remarks = [s.detail for s in samples if s.detail]
    inputs = [s.input for s in samples if s.input.startswith("picture ")]
    assert remarks or all(s.correct for s in samples), name  # an untrained model gets most answers wrong
    with using_language("de"):
        for text in remarks:
            assert remark_text(text) != text, f"{name}: no pattern reads {text!r}"
        for text in inputs:
            assert sample_input_text(text) != text, f"{name}: no pattern reads {text!r}"
        table = samples_html(samples, task.family)
    assert not any(text in table for text in remarks), name


def test_a_remark_wraps_between_words_beside_its_row_or_under_it_in_a_narrow_lane() -> None:
    from transformer_core.tasks.base import Sample

    samples = [Sample("3615", "5163", "6315", False, "4 of 4 digits wrong"), Sample("12", "21", "21", True, "")]
    html = samples_html(samples, "seq2seq")
    remark = re.search(r'<td class="te-beside" style="([^"]*)">4 of 4 digits wrong</td>', html)[1]
    assert "white-space:normal" in remark and "min-width" in remark and "anywhere" not in remark  # not "digi / ts"
    under = re.findall(r'<tr class="te-under"><td colspan="3" style="[^"]*">([^<]*)</td></tr>', html)
    assert under == ["4 of 4 digits wrong"]  # the same remark on its own line, for a narrow lane; none for a right one
    assert html.index('<div class="te-samples" style="overflow-x:auto"><table') > 0
    # the page's style sheet shows one of the two: the remark under its row only where the lane is narrow
    assert ".te-samples { container-type: inline-size; }" in BASE_CSS
    narrow = BASE_CSS.split("@container (max-width: 479px) {")[1].split("\n}\n")[0]
    assert ".te-beside { display: none; }" in narrow and "tr.te-under { display: table-row; }" in narrow
