"""Nonsense in a shared link: every page falls back to its defaults, says which settings it ignored, and works.

Each case opens a page with bad query parameters and checks the notices (one per ignored setting, and one per
value that was valid but did not fit the other settings and was changed), that a control shows its default
value, and that no exception appears. One value carries HTML with a script: it must be shown as text, never run.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from explorer.lab.text_input import MAX_TEXT_CHARS
from tests.e2e.actions import alerts, metric_values, open_page
from tests.e2e.conftest import assert_no_exception

SCRIPT = "<img src=x onerror=alert(1)>"  # would open a dialog if the page rendered it as HTML

# page path, bad parameters, the names that must be reported as ignored
CASES = {
    "home": ("/", {"present": "maybe", "colors": "Rainbow"}, ["present", "colors"]),
    "lessons": ("/lessons", {"lesson": SCRIPT}, ["lesson"]),
    "attention": ("/attention", {"attn.heads": "7", "attn.d_model": "banana", "attn.layers": "99",
                                 "attn.view": "xray", "attn.text": "x" * (MAX_TEXT_CHARS + 1), "attn.off_mode": "half",
                                 "attn.off": f"1.1,{SCRIPT}"},
                  ["attn.heads", "attn.d_model", "attn.layers", "attn.view", "attn.text", "attn.off_mode"]),
    "positional": ("/positional", {"pe.max_len": "-5", "pe.base": "nan", "pe.section": "nowhere"},
                   ["pe.max_len", "pe.base", "pe.section"]),
    "vit": ("/vit", {"vit.size": "77", "vit.sample": "unicorn", "vit.layers": "1e9", "vit.patch": "7"},
            ["vit.size", "vit.sample", "vit.layers"]),
    "builder": ("/builder", {"mb.kind": "tardis", "mb.layers": "-3", "mb.d_model": "100000000"},
                ["mb.kind", "mb.layers", "mb.d_model"]),
    "training": ("/training", {"task": "rm -rf /", "steps": "-1", "lr": "NaN", "d_model": "1e6", "compare": "perhaps"},
                 ["task", "steps", "lr", "d_model", "compare"]),
}

# Values that pass the checks but do not fit the other settings: moved to the nearest choice, with a notice.
CHANGED = {
    "attention": ["was changed to 1.1: '<img src=x onerror=a' is not a head of this model"],
    "vit": ["vit.patch='7' was changed to 8"],  # the image size fell back to 64, which 7-pixel patches do not tile
}

# A control on each page that must show its default after the bad link (label -> expected input value).
DEFAULT_INPUTS = {
    "home": ("Heatmap colours", "Viridis"),
    "attention": ("Heads", "2"),
    "vit": ("Image size (pixels)", "64"),
    "training": ("Task", "Reverse"),
}


def _ignored(page) -> list[str]:
    return [text for text in alerts(page) if "was ignored" in text]


@pytest.mark.parametrize("name", list(CASES))
def test_bad_link_falls_back_to_defaults_with_a_notice(page, name: str):
    path, params, reported = CASES[name]
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_page(page, f"{path}?{urlencode(params)}")
    assert_no_exception(page)
    notices = _ignored(page)
    for param in reported:
        assert any(f"{param}=" in n for n in notices), f"no notice for {param}: {notices}"
    assert all("Using the default" in n for n in notices)
    for change in CHANGED.get(name, []):
        assert any(change in text for text in alerts(page)), f"no notice that {change}: {alerts(page)}"
    if name in DEFAULT_INPUTS:
        label, value = DEFAULT_INPUTS[name]
        assert page.locator(f"input[aria-label='{label}']").first.input_value() == value
    if name == "builder":
        assert metric_values(page)["Parameters"]  # the default model is counted
    assert not dialogs, f"a script from the link ran: {dialogs}"

