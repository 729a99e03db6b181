"""*Where does it decide?* in the browser: head patching on a local GPT-2 with random weights runs with a moving
progress bar, draws the layer × head grid, and its CSV download holds the library's numbers for the same model,
texts and answers."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pytest
import torch
from playwright.sync_api import expect

from tests.e2e.conftest import models_env, new_tab, wait_for_app
from tests.pretrained.hf_folders import gpt2_folder

LAYERS, HEADS = 12, 8
# Seen on the two-core machine at load average 24-30: the Lab's first run on a 12-layer, width-256 model took
# 125 s and a patching run 87 s (page and patching together). Waits allow twice the worst seen and more.
PAGE_MS = 300_000
# 48 tokens (the Lab's longest text) in the small test tokenizer; the corrupt text changes " cat" for " far"
# once, both one token. The model is wide enough that each layer's patches take a moment the bar shows.
CLEAN = "the cat sat on the mat and a dog ran far away, attention is all you need, the cat"
CORRUPT = CLEAN.replace("the cat sat", "the far sat", 1)
# The bar's texts as the server sends them ("Patched 3 of 12 layers…"): what the page draws of a one-second run
# depends on how the browser batches its frames, what the server sent does not.
PROGRESS = re.compile(rb"Patched (\d+) of (\d+) layers")


@pytest.fixture(scope="module")
def served(app_servers, tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=LAYERS, heads=HEADS, width=256, positions=64)
    return root, app_servers.get(models_env(root, tmp_path_factory.mktemp("hf")))


def _expected(root: Path) -> np.ndarray:
    """The library's head patching of the two texts with each text's top next token as the two answers."""
    from explorer.lab.decide import default_answers
    from transformer_core.patching import logit_difference, patch_heads
    from transformer_core.pretrained import load_pretrained

    pre = load_pretrained(root / "tiny-gpt2")
    clean, corrupt = (pre.tokenizer.encode(t).ids for t in (CLEAN, CORRUPT))
    assert len(clean) == len(corrupt) == 48 and clean != corrupt
    with torch.no_grad():
        tops = [pre.model(torch.tensor([ids]))[0, -1].topk(8).indices.tolist() for ids in (clean, corrupt)]
    answer, other, _ = default_answers(*tops)
    return patch_heads(pre.model, clean, corrupt, logit_difference(answer, other)).restored


def test_head_patching_shows_progress_and_exports_the_librarys_grid(browser, served):
    root, base_url = served
    query = urlencode({"attn.source": "pretrained", "attn.pretrained": "tiny-gpt2", "attn.beyond": "decide",
                       "attn.decide.clean": CLEAN, "attn.decide.corrupt": CORRUPT, "attn.decide.what": "heads"})
    frames: list[bytes] = []
    with new_tab(browser, base_url) as tab:
        tab.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(
            payload if isinstance(payload, bytes) else payload.encode())))
        tab.goto(f"/attention?{query}")
        wait_for_app(tab, PAGE_MS)
        main = tab.get_by_test_id("stMain")
        patch = main.get_by_role("button", name="Patch", exact=True)
        patch.scroll_into_view_if_needed()
        # other sections (the step-by-step numbers) have CSV buttons too: the grid's is the one that appears, last
        csv_buttons = main.get_by_test_id("stDownloadButton").filter(
            has=tab.get_by_role("button", name="CSV", exact=True))
        before = csv_buttons.count()
        frames.clear()
        patch.click()
        expect(csv_buttons).to_have_count(before + 1, timeout=PAGE_MS)
        csv_button = csv_buttons.last
        wait_for_app(tab, PAGE_MS)
        seen = [(int(m[1]), int(m[2])) for frame in frames for m in PROGRESS.finditer(frame)]
        assert any(0 < done < total for done, total in seen), seen  # the bar moved before the run ended
        with tab.expect_download() as info:
            csv_button.get_by_role("button").click()
        text = Path(info.value.path()).read_text()
    assert info.value.suggested_filename == "patching_heads.csv"
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["", *(f"H{h + 1}" for h in range(HEADS))]
    assert [r[0] for r in rows[1:]] == [f"layer {i + 1}" for i in range(LAYERS)]
    grid = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    # `restored` divides by the clean−corrupt gap: float32 sums taken in another order (the server's thread count)
    # move it by ~1e-5, while a wrong head or layer moves it by tenths
    np.testing.assert_allclose(grid, _expected(root), rtol=1e-4, atol=1e-4)
