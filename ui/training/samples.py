"""Live Training page: sample predictions as a small HTML table, with the model's mistakes marked.

Sequence answers are compared character by character and every wrong or missing character is marked, so a
student sees *where* a reversal went wrong. Other answers are marked as a whole when they count as wrong:
numbers (protein properties, image classes), and generated text, which has many right continuations besides
the held-out one (its remark says why it counts as wrong). Everything shown is escaped: sample text can
contain any character.

Right and wrong answers are marked with their own light background and dark text (contrast above 6:1), so they
read the same on the light and the dark theme; no single text colour reaches 4.5:1 on both white and #0E1117.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from explorer.i18n import _, num
from transformer_core.families import family as model_family
from transformer_core.tasks import Sample
from ui.training.remarks import remark_text, sample_input_text

WRONG = "background:#FAD4C0;color:#8A2C00;border-radius:2px"  # light vermillion: a wrong character or answer (6.2:1)
RIGHT = "background:#D4F2E4;color:#00573D;border-radius:2px"  # light bluish green: a correct answer (7.3:1)
TABLE = "border-collapse:collapse;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:0.95em"
CELL = "padding:2px 12px 2px 0;vertical-align:top;white-space:pre-wrap;overflow-wrap:anywhere"
HEAD = "padding:2px 12px 2px 0;text-align:left;white-space:nowrap"  # headings never break inside a word
INPUT = f"{CELL};min-width:10ch"  # long answers beside it must not squeeze a short prompt onto many lines
# The remark wraps between words only, never narrower than a few words: in a narrow lane (Compare on a 1024-pixel
# page, a phone) it ran down the page a syllable a line ("4 of / 4 / digi / ts"), and scrolled out of sight beside
# the answers ("2 of 7 d…"). There it takes its own line under its row instead (the base style sheet's
# ``te-samples`` rules: a container query, as only the browser knows the lane's width).
REMARK = "padding:2px 12px 2px 0;vertical-align:top;white-space:normal;min-width:16ch;font-family:sans-serif"
UNDER = "padding:0 12px 6px 0;white-space:normal;font-family:sans-serif;font-size:0.9em;opacity:0.8"  # its own line
MAX_CHARS = 80  # longer texts are cut (generated text of the language model)


def marked_prediction(prediction: str, target: str) -> str:
    """HTML of ``prediction`` with each character that differs from ``target`` marked (missing ones as ·)."""
    out = []
    for i, ch in enumerate(prediction):
        ok = i < len(target) and target[i] == ch
        out.append(escape(ch) if ok else f'<span style="{WRONG}">{escape(ch)}</span>')
    if len(target) > len(prediction):
        out.append(
            f'<span style="{WRONG}" title="{escape(_("missing characters"))}">'
            f"{'·' * (len(target) - len(prediction))}</span>"
        )
    return "".join(out)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _prediction_cell(sample: Sample, family: str) -> str:
    prediction, target = _cut(sample.prediction), _cut(sample.target)
    if sample.correct:
        return f'<span style="{RIGHT}">{escape(prediction)} ✓</span>'
    if model_family(family).exact_answers:  # one right answer: mark where it differs
        return marked_prediction(prediction, target) + " ✗"
    return f'<span style="{WRONG}">{escape(prediction)}</span> ✗'


def samples_html(samples: Sequence[Sample], family: str, caption: str = "") -> str:
    """A table input → expected → predicted (→ remark) of ``samples``; ✓/✗ repeat the colours in symbols."""
    head = "".join(f'<th style="{HEAD}">{escape(h)}</th>' for h in (_("input"), _("expected"), _("predicted")))
    head += f'<th class="te-beside" style="{HEAD}"></th>'
    rows = []
    for s in samples:
        cells = (escape(_cut(sample_input_text(s.input))), escape(_cut(s.target)), _prediction_cell(s, family))
        styles = (INPUT, CELL, CELL)
        row = "".join(f'<td style="{st}">{c}</td>' for st, c in zip(styles, cells, strict=True))
        remark = escape(remark_text(s.detail))
        rows.append(f'<tr>{row}<td class="te-beside" style="{REMARK}">{remark}</td></tr>')
        if remark:
            rows.append(f'<tr class="te-under"><td colspan="3" style="{UNDER}">{remark}</td></tr>')
    right = sum(s.correct for s in samples)
    title = f"{escape(caption)} — " if caption else ""
    score = escape(_("{right} of {n} right").format(right=num(right), n=num(len(samples))))
    summary = f"<div style='margin-bottom:4px'><b>{title}{score}</b></div>"
    return (f'{summary}<div class="te-samples" style="overflow-x:auto"><table style="{TABLE}"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table></div>')
