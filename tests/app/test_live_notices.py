"""Live Training page: the "settings changed" notice appears only when it is true and its button works."""

from __future__ import annotations

from tests.app.conftest import assert_no_exception
from tests.app.test_live_training import live_at
from ui.training import controls as tc


def _changed_notice(at) -> str | None:
    texts = [i.value for i in at.info if "settings changed" in i.value]
    return texts[0] if texts else None


def test_the_settings_changed_notice_names_the_button_that_works():
    at = live_at()
    at.number_input(key=tc.SEED).set_value(5).run()
    assert _changed_notice(at) is None  # a run that has not started follows the settings
    at.button(key="live.step").click().run()
    at.number_input(key=tc.SEED).set_value(6).run()
    assert_no_exception(at)
    assert "**Reset**" in _changed_notice(at) and at.button(key="live.start").disabled
    assert not at.button(key="live.reset").disabled
    at.button(key="live.stop").click().run()
    assert "**Start**" in _changed_notice(at) and not at.button(key="live.start").disabled
    at.button(key="live.start").click().run()  # a new run with the new settings: nothing left to say
    assert_no_exception(at)
    assert _changed_notice(at) is None and at.session_state[tc.SEED] == 6


def test_no_notice_when_the_new_settings_cannot_train():
    at = live_at()
    at.button(key="live.step").click().run()
    for key, value in ((tc.D_MODEL, 512), (tc.D_FF, 2048), (tc.LAYERS, 8), (tc.BATCH, 256)):
        at.session_state[key] = value
    at.run()
    assert any("too big" in e.value for e in at.error) and at.button(key="live.reset").disabled
    assert _changed_notice(at) is None  # no button could act on it: the error says what to change
