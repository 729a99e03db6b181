"""Model Builder page: counts follow the controls, famous models come from presets, huge configs stay estimates."""

from __future__ import annotations

import html
import re
import unicodedata

import pytest

from explorer.host import ENV_OVERRIDE, host_profile, limits
from explorer.i18n import LANGUAGES, using_language
from explorer.i18n.quantities import human
from explorer.lab.builder import EFFICIENCY, BuilderSettings, build, estimate
from tests.app.conftest import app_at, assert_no_exception
from transformer_core.sizing import PRESETS, parameter_breakdown, preset_parameter_count
from ui.builder import controls as bc
from ui.builder.diagram import BOX_W, NOTE_SIZE, architecture_svg

PAGE = "pages/builder.py"


@pytest.fixture(scope="module")
def page():
    at = app_at(PAGE)
    assert_no_exception(at)
    return at


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_renders_with_presets_from_the_sizing_module(page):
    assert metric(page, "Parameters") == human(228_096)  # decoder-only defaults, counted by hand below
    table = page.table[0].value
    assert list(table.columns) == ["Your model", *PRESETS]  # models go across: the table fits a narrow window
    for name in PRESETS:
        count = preset_parameter_count(name)
        assert (table.loc["Parameters", name], table.loc["Exact count", name]) == (human(count), f"{count:,}")
    assert len(page.image) == 1  # the architecture diagram


def test_parameter_count_follows_d_model(page):
    before = metric(page, "Parameters")
    page.select_slider(key=bc.D_MODEL).set_value(128).run()
    assert_no_exception(page)
    assert metric(page, "Parameters") != before
    assert page.select_slider(key=bc.D_FF).value == 512  # 4 x d_model after the width changed
    assert page.query_params.get(bc.D_MODEL) == "128"


def test_families_and_diagram(page):
    for kind in ("encoder", "seq2seq", "vit", "decoder"):
        page.radio(key=bc.KIND).set_value(kind).run()
        assert_no_exception(page)
        assert len(page.image) == 1
    assert page.query_params.get(bc.KIND) is None  # back at the default


@pytest.fixture
def normal_host(monkeypatch):
    """The normal host's limits (TE_SMALL_HOST=0), so the tiny model below may be timed on any machine."""
    monkeypatch.setenv(ENV_OVERRIDE, "0")
    host_profile.cache_clear()
    yield limits()
    monkeypatch.undo()
    host_profile.cache_clear()


UNITS = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
SECONDS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "hours": 3600.0, "days": 86_400.0,
           "years": 31_557_600.0}


def _flop(text: str) -> float:
    """ "1.23 MFLOP" or "456 FLOP/s" -> 1.23e6 or 456.0 (the page's human() format)."""
    number, unit = re.fullmatch(r"([\d.]+) ?([kMGTP]?)FLOP(?:/s)?", text.strip()).groups()
    return float(number) * UNITS[unit]


def test_measure_a_small_step(page, normal_host):
    page.select_slider(key=bc.D_MODEL).set_value(16).run()
    page.number_input(key=bc.SEQ).set_value(8).run()
    page.number_input(key=bc.BATCH).set_value(2).run()
    assert_no_exception(page)
    assert not page.warning, [w.value for w in page.warning]
    caption = next(c.value for c in page.caption if c.value.startswith("Estimate: about"))
    match = re.search(r"about ([\d.]+) (\w+) per step — (.+?) at (.+?), (\d+)% of the measured matrix-multiply "
                      r"speed of (.+?) \(", caption)
    assert match, caption
    seconds = float(match[1]) * SECONDS[match[2]]
    flops, rate, share, measured = _flop(match[3]), _flop(match[4]), int(match[5]), _flop(match[6])
    assert share == round(EFFICIENCY * 100)
    assert rate == pytest.approx(measured * EFFICIENCY, rel=0.01)  # the caption's two speeds agree ...
    assert seconds == pytest.approx(flops / rate, rel=0.02)  # ... and the estimate uses the reduced one
    page.button(key="mb.measure").click().run()
    assert_no_exception(page)
    measured_step = metric(page, "Measured time per step")
    value, unit = measured_step.split()
    assert unit in SECONDS and float(value) > 0


def test_the_largest_settings_give_numbers_a_student_can_read():
    at = app_at(None)
    at.query_params.update({bc.KIND: "decoder", bc.LAYERS: "128", bc.HEADS: "128", bc.D_MODEL: "12288",
                            bc.D_FF: "98304", bc.VOCAB: "1000000", bc.SEQ: "1000000", bc.BATCH: "65536"})
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    shown = [m.value for m in at.metric] + [w.value for w in at.warning]
    shown += [c.value for c in at.caption if c.value.startswith("Estimate:")]
    assert metric(at, "FLOPs per step").endswith("·10²⁴")  # not "1390000000 P"
    assert metric(at, "Training memory").endswith("·10²¹ B")
    assert not [text for text in shown if re.search(r"\d{5,}|\d,\d{3},\d{3}", text)], shown  # no long digit runs
    assert any(re.search(r"about [\d.]+·10[⁰-⁹]+ years per step", c.value) for c in at.caption)


def test_huge_config_is_estimated_only(page):
    page.select_slider(key=bc.D_MODEL).set_value(4096).run()
    page.number_input(key=bc.LAYERS).set_value(48).run()
    page.number_input(key=bc.SEQ).set_value(10_000).run()
    assert_no_exception(page)
    assert any("Too big to run here" in w.value for w in page.warning)
    assert not [b for b in page.button if b.key == "mb.measure"]
    assert metric(page, "Parameters").endswith("G")


def test_impossible_combination_shows_a_message(page):
    page.select_slider(key=bc.D_MODEL).set_value(48).run()
    page.selectbox(key=bc.HEADS).set_value(16).run()  # head size 3
    page.selectbox(key=bc.POSITIONAL).set_value("rope").run()
    assert_no_exception(page)
    assert any("cannot be built" in e.value and "even" in e.value for e in page.error)


def test_diagram_follows_the_config():
    post = architecture_svg(BuilderSettings(kind="encoder", norm="post", n_layers=6))
    assert "Add &amp; Norm" in post and "LayerNorm</text>" not in post and "6×" in post
    pre = architecture_svg(BuilderSettings(kind="decoder", norm="pre", n_layers=3))
    assert "Masked multi-head self-attention" in pre and "Final LayerNorm" in pre and "3×" in pre
    assert "cross-attention" not in pre
    seq2seq = architecture_svg(BuilderSettings(kind="seq2seq", n_layers=2))
    assert seq2seq.count("2×") == 2 and "cross-attention" in seq2seq and "encoder output" in seq2seq
    vit = architecture_svg(BuilderSettings(kind="vit", image_size=224, patch_size=16))
    assert "196 patches" in vit and "CLS" in vit and "Masked" not in vit
    rope = architecture_svg(BuilderSettings(positional="rope"))
    assert "RoPE" in rope and "+ rope positions" not in rope


def test_default_parameter_count_by_hand():
    defaults = BuilderSettings()
    assert defaults.kind == "decoder" and defaults.norm == "pre" and defaults.positional == "sinusoidal"
    c, f, v, layers = defaults.d_model, defaults.d_ff, defaults.vocab_size, defaults.n_layers
    by_hand = {
        "embeddings": v * c,  # token embedding; the sinusoidal table has no parameters
        "attention": layers * 4 * (c * c + c),  # W_Q, W_K, W_V, W_O with biases
        "feed_forward": layers * (c * f + f + f * c + c),
        "norms": layers * 2 * 2 * c + 2 * c,  # two LayerNorms per block and the final one
        "head": c * v,  # output projection without bias
    }
    app = parameter_breakdown(build(defaults, "meta"))  # the count the page shows
    assert app == by_hand
    assert estimate(defaults).params == sum(by_hand.values())
    fresh = app_at(PAGE)
    assert metric(fresh, "Parameters") == human(sum(by_hand.values()))
    assert fresh.table[0].value.loc["Parameters", "Your model"] == metric(fresh, "Parameters")


def test_projector_mode_hides_secondary_controls():
    from ui.common import state

    at = app_at(PAGE)
    at.number_input(key=bc.BATCH).set_value(8).run()
    at.session_state[state.PRESENTATION] = True
    at.run()
    assert_no_exception(at)
    assert not [n for n in at.number_input if n.key == bc.BATCH]
    assert any("batch 8" in c.value for c in at.caption)
    at.session_state[state.PRESENTATION] = False
    at.run()
    assert at.number_input(key=bc.BATCH).value == 8


def _link_notices(at) -> list[str]:
    return [i.value for i in at.info if i.value.startswith("The link's setting")]


def test_link_values_that_do_not_fit_are_changed_with_a_notice():
    at = app_at(None)
    at.query_params.update({bc.KIND: "vit", bc.HEADS: "5", bc.PATCH: "7", bc.D_FF: "100"})
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert _link_notices(at) == [
        "The link's setting mb.heads='5' was changed to 4: the number of heads must divide d_model 64.",
        "The link's setting mb.d_ff='100' was changed to 128: d_ff must be 1×, 2×, 3×, 4×, 6×, 8× d_model 64.",
        "The link's setting mb.patch='7' was changed to 8: the patch size must divide the 32-pixel image and leave "
        "at least 2 × 2 patches.",
    ]
    assert at.selectbox(key=bc.HEADS).value == 4 and at.selectbox(key=bc.PATCH).value == 8
    assert at.query_params.get(bc.HEADS) is None and at.query_params.get(bc.D_FF) == "128"


def test_fitting_links_and_widget_changes_give_no_notice():
    at = app_at(PAGE)
    at.select_slider(key=bc.D_MODEL).set_value(48).run()
    at.selectbox(key=bc.HEADS).set_value(3).run()
    at.select_slider(key=bc.D_MODEL).set_value(64).run()  # 3 heads do not divide 64: moved without a notice
    assert at.selectbox(key=bc.HEADS).value == 2 and not at.info
    at.query_params.clear()
    at.query_params.update({bc.KIND: "vit", bc.D_MODEL: "128", bc.D_FF: "512", bc.HEADS: "8", bc.PATCH: "16"})
    at.run()  # a link opened in the same session, after the page had other settings
    assert_no_exception(at)
    assert not at.info
    assert at.select_slider(key=bc.D_FF).value == 512  # the link's own d_ff, not the old ratio applied to it
    assert at.selectbox(key=bc.HEADS).value == 8 and at.selectbox(key=bc.PATCH).value == 16


BERT_BASE = 109_482_240  # Devlin et al.'s BERT-base with token types, embedding norm and pooler, counted exactly


@pytest.mark.parametrize("name", list(bc.PRESET_LABELS))
def test_a_preset_button_sets_every_control_and_the_exact_count(name):
    at = app_at(PAGE)
    label = bc.PRESET_LABELS[name]
    next(b for b in at.button if b.label == label).click().run()
    assert_no_exception(at)
    count = preset_parameter_count(name)
    params = next(m for m in at.metric if m.label == "Parameters")
    assert params.help == f"{count:,} exactly."
    assert any(name in s.value and f"{count:,}" in s.value for s in at.success)
    table = at.table[0].value
    assert table.loc["Exact count", f"Your model ({name})"] == table.loc["Exact count", name] == f"{count:,}"
    assert at.session_state[bc.PRESET] == name


def test_bert_base_preset_reproduces_its_published_count():
    at = app_at(PAGE)
    next(b for b in at.button if b.label == "BERT-base").click().run()
    assert next(m for m in at.metric if m.label == "Parameters").help == f"{BERT_BASE:,} exactly."
    assert (at.radio(key=bc.KIND).value, at.number_input(key=bc.LAYERS).value, at.selectbox(key=bc.HEADS).value,
            at.select_slider(key=bc.D_MODEL).value, at.select_slider(key=bc.D_FF).value) == ("encoder", 12, 12,
                                                                                             768, 3072)
    assert (at.radio(key=bc.NORM).value, at.selectbox(key=bc.POSITIONAL).value,
            at.number_input(key=bc.VOCAB).value, at.number_input(key=bc.SEQ).value) == ("post", "learned", 30522, 512)
    at.number_input(key=bc.LAYERS).set_value(11).run()  # any change builds your own model again
    assert_no_exception(at)
    assert at.session_state[bc.PRESET] == "" and not at.success
    assert next(m for m in at.metric if m.label == "Parameters").help != f"{BERT_BASE:,} exactly."


def test_the_vit_family_shows_the_positions_and_norm_it_really_uses():
    at = app_at(PAGE)
    at.selectbox(key=bc.POSITIONAL).set_value("rope").run()
    at.radio(key=bc.KIND).set_value("vit").run()
    assert_no_exception(at)
    shown = at.selectbox(key=bc.VIT_FIXED + "pos")
    assert shown.value == "learned" and shown.disabled
    assert at.radio(key=bc.VIT_FIXED + "norm").value == "pre"
    at.radio(key=bc.KIND).set_value("decoder").run()  # the text model's own choice is untouched
    assert at.selectbox(key=bc.POSITIONAL).value == "rope"


TEXT = re.compile(r'<text x="([\d.]+)" y="[\d.]+" font-size="([\d.]+)" font-weight="(\d+)" fill="[^"]+" '
                  r'text-anchor="(\w+)"[^>]*>([^<]*)</text>')


def _extent(x: float, size: float, anchor: str, text: str) -> tuple[float, float]:
    """Where a diagram text starts and ends, for about half a font size a Latin character (a Chinese one twice)."""
    width = 0.55 * size * sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in html.unescape(text))
    start = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
    return start, start + width


@pytest.mark.parametrize("code", [lang.code for lang in LANGUAGES])
@pytest.mark.parametrize("kind", ["decoder", "encoder", "seq2seq", "vit"])
def test_every_text_of_the_diagram_stays_in_its_box_and_on_the_picture_in_every_language(code, kind):
    with using_language(code):
        svg = architecture_svg(BuilderSettings(kind=kind, positional="sinusoidal"))
    width = float(re.search(r'<svg [^>]*width="([\d.]+)"', svg).group(1))
    texts = [(float(x), float(size), int(weight), anchor, text) for x, size, weight, anchor, text in TEXT.findall(svg)]
    assert texts
    for x, size, weight, anchor, text in texts:
        start, end = _extent(x, size, anchor, text)
        assert start >= 0 and end <= width, (code, kind, text)
        if size == NOTE_SIZE and weight == 400:  # a box's second line: inside the box
            assert end - start <= BOX_W - 4, (code, kind, text)
