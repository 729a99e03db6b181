"""A task registered from outside the package appears in Live Training's menu and trains there."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, DEFAULT_TIMEOUT, assert_no_exception
from tests.app.test_live_training import metric
from tests.rotate_task import NAME, TITLE, registered
from ui.training import controls as tc

TINY = {"d_model": "16", "heads": "2", "layers": "1", "d_ff": "32", "batch": "8", "steps": "10"}


def test_live_training_lists_and_opens_a_registered_task():
    with registered():
        at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
        at.query_params.update({"task": NAME, **TINY})
        at.run()
        at.switch_page("pages/training.py")
        at.run()
        assert_no_exception(at)
        menu = at.selectbox(key=tc.TASK)
        assert TITLE in menu.options and menu.value == NAME
        assert any("rotated left" in c.value for c in at.caption)
        at.button(key="live.start").click().run()
        assert_no_exception(at)
        assert metric(at, "Step") == "10 / 10"


def test_every_registered_task_and_core_label_has_a_translatable_entry():
    """Live Training shows the core's English texts through ui.training.task_labels: each built-in task's title
    and description, its family's attention titles, the pattern names, positional encodings and blocks."""
    from explorer.lab.block_compare import BLOCKS
    from transformer_core.families import family
    from transformer_core.patterns import PATTERN_TITLES
    from transformer_core.positional import get as positional_kind
    from transformer_core.positional import kinds as positional_kinds
    from transformer_core.tasks import get_task, task_names
    from ui.training import task_labels

    for name in task_names():
        task = get_task(name)
        assert task_labels.TASKS.get(name) == (task.title, task.description), name
        for kind in family(task.family).attention:
            title = family(task.family).attention_title(kind)
            assert title in task_labels.ATTENTION_TITLES and title in task_labels.ATTENTION_NAMES, title
    assert set(PATTERN_TITLES.values()) <= set(task_labels.PATTERN_TITLES)
    assert {positional_kind(k).title for k in positional_kinds()} <= set(task_labels.POSITIONAL_TITLES)
    assert set(BLOCKS.values()) <= set(task_labels.BLOCK_TITLES)


def test_a_configurations_label_is_shown_in_the_pages_language():
    from explorer.i18n import using_language
    from ui.training import task_labels

    label = "B · 1 layer, 4 heads, rotary (RoPE) positions, post-norm"
    with using_language("en"):
        assert task_labels.shown_label(label) == label
        assert task_labels.shown_label("A · 2 layers, 2 heads, Llama block (1 K/V head)").endswith("(1 K/V head)")
        assert task_labels.shown_label("something else") == "something else"
