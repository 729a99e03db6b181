"""Shareable views: URL parameters in -> widget values, invalid values -> notice and default, settings -> URL."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import app_at, assert_no_exception
from tests.conftest import REPO_ROOT
from ui.common.urlstate import UrlParam

# A tiny page that binds three settings the way every page of the app does.
PAGE = f"""
import sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import streamlit as st
from ui.common.sharelink import share_link
from ui.common.urlstate import UrlParam, bind_url, count_run, push_url

PARAMS = (
    UrlParam("heads", 4, choices=(1, 2, 4, 8)),
    UrlParam("lr", 0.003, lo=1e-5, hi=1.0),
    UrlParam("text", "the cat sat"),
    UrlParam("show", ["loss"], choices=("loss", "accuracy", "lr")),
)
count_run()
bind_url(PARAMS, page="demo")
link = share_link(PARAMS, url_path="demo")
st.selectbox("Heads", (1, 2, 4, 8), key="heads", index=2)
st.number_input("Learning rate", key="lr", value=0.003, format="%.4f")
st.text_input("Text", key="text", value="the cat sat")
st.multiselect("Show", ["loss", "accuracy", "lr"], key="show", default=["loss"])
push_url(PARAMS)
st.write(link)
"""


def _demo(**query: str) -> AppTest:
    at = AppTest.from_string(PAGE, default_timeout=30)
    at.query_params.update(query)
    at.context["url"] = "https://school.example/demo"
    return at.run()


def test_url_values_fill_the_widgets():
    at = _demo(heads="8", lr="0.01", text="hello world", show="accuracy,lr")
    assert_no_exception(at)
    assert at.selectbox(key="heads").value == 8
    assert at.number_input(key="lr").value == pytest.approx(0.01)
    assert at.text_input(key="text").value == "hello world"
    assert at.multiselect(key="show").value == ["accuracy", "lr"]
    assert not at.info


def test_invalid_values_fall_back_to_defaults_with_a_notice():
    at = _demo(heads="3", lr="abc", text="ok")
    assert_no_exception(at)
    assert at.selectbox(key="heads").value == 4
    assert at.number_input(key="lr").value == pytest.approx(0.003)
    assert at.text_input(key="text").value == "ok"
    notices = " ".join(i.value for i in at.info)
    assert "heads='3'" in notices and "lr='abc'" in notices
    assert "heads" not in at.query_params and "lr" not in at.query_params  # the bad values leave the URL
    at.run()
    assert at.selectbox(key="heads").value == 4 and len(at.info) == 2  # notices stay for the visit


def test_push_writes_only_settings_that_differ_from_defaults():
    at = _demo()
    assert at.query_params == {}
    at.selectbox(key="heads").set_value(2).run()
    assert at.query_params == {"heads": "2"}
    at.text_input(key="text").set_value("a b c").run()
    assert at.query_params == {"heads": "2", "text": "a b c"}
    at.selectbox(key="heads").set_value(4).run()
    assert at.query_params == {"text": "a b c"}


def test_a_widget_change_is_not_undone_by_the_older_url():
    at = _demo(heads="8")
    at.text_input(key="text").set_value("new").run()
    assert at.selectbox(key="heads").value == 8
    at.selectbox(key="heads").set_value(1).run()
    at.text_input(key="text").set_value("newer").run()
    assert at.selectbox(key="heads").value == 1
    assert at.query_params == {"heads": "1", "text": "newer"}


def test_a_new_link_resets_the_settings_it_leaves_out():
    at = _demo(heads="8", text="first link")
    at.query_params.clear()
    at.query_params["heads"] = "2"  # the address changes from outside, as when another link is opened
    at.run()
    assert at.selectbox(key="heads").value == 2
    assert at.text_input(key="text").value == "the cat sat"


def test_share_link_uses_the_app_address_and_the_current_settings():
    at = _demo(heads="8")
    codes = [c.value for c in at.code]
    assert codes[0] == "https://school.example/demo?heads=8&lang=en"
    assert codes[1] == "https://school.example/demo?heads=8&present=true&lang=en"


def test_url_param_parsing_rules():
    heads = UrlParam("heads", 4, choices=(1, 2, 4))
    assert heads.parse("2") == 2
    for bad in ("3", "2.5", "two"):
        with pytest.raises(ValueError):
            heads.parse(bad)
    flag = UrlParam("present", False)
    assert flag.parse("TRUE") is True and flag.parse("0") is False and flag.format(True) == "true"
    with pytest.raises(ValueError):
        flag.parse("yes please")
    lr = UrlParam("lr", 0.003, lo=1e-5, hi=1.0)
    for bad in ("nan", "inf", "2", "-1"):
        with pytest.raises(ValueError):
            lr.parse(bad)
    assert UrlParam("t", "x", max_chars=3).parse("abc") == "abc"
    with pytest.raises(ValueError):
        UrlParam("t", "x", max_chars=3).parse("abcd")
    layers = UrlParam("layers", (0, 1), choices=(0, 1, 2))
    assert layers.parse("2,0") == (2, 0) and layers.parse("") == ()
    assert layers.is_default([0, 1]) and layers.format((2, 0)) == "2,0"
    with pytest.raises(ValueError):
        layers.parse("0,5")
    view = UrlParam("view", "", choices=("", "a"))
    assert view.format(None) == "" and view.is_default(None)  # a segmented control with nothing picked


def test_a_refused_value_names_its_range_and_choices_as_a_person_reads_them():
    seed = UrlParam("seed", 0, lo=0, hi=2**31 - 1)
    with pytest.raises(ValueError, match="must be between 0 and 2,147,483,647$"):  # not 2.14748e+09
        seed.parse("99999999999999999999")
    with pytest.raises(ValueError, match="must be between 1e-05 and 1$"):
        UrlParam("lr", 0.003, lo=1e-5, hi=1.0).parse("2")
    with pytest.raises(ValueError, match="must be one of why, decide$"):  # the empty choice (none) goes unsaid
        UrlParam("beyond", "", choices=("", "why", "decide")).parse("zzz")


def test_present_in_the_url_turns_on_projector_mode():
    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"present": "true", "colors": "Rainbow"})
    at.run()
    assert_no_exception(at)
    assert at.session_state["app.presentation"] is True
    assert at.session_state["app.colorscale"] == "Viridis"
    assert any("colors='Rainbow'" in i.value for i in at.info)
    assert at.query_params == {"present": "true"}
    assert any("font-size: 130%" in h.proto.body for h in at.get("html"))  # projector mode's larger type


def test_app_runs_without_url_settings():
    at = app_at()
    assert_no_exception(at)
    assert at.session_state["app.presentation"] is False
    assert at.query_params == {}
    assert not any("font-size: 130%" in h.proto.body for h in at.get("html"))


# A page whose head count must divide the width, and whose layer must exist: link values that pass UrlParam's
# checks but not these are changed by settle_choice, with a notice only when they came from the link.
SETTLE_PAGE = f"""
import sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import streamlit as st
from ui.common.urlstate import UrlParam, bind_url, count_run, push_url, settle_choice

PARAMS = (
    UrlParam("width", 64, choices=(64, 48)),
    UrlParam("heads", 4, lo=1, hi=64),
    UrlParam("layer", 1, lo=1, hi=8),
)
count_run()
st.title("Demo")
bind_url(PARAMS, page="demo")
width = st.selectbox("Width", (64, 48), key="width")
heads = [h for h in range(1, width + 1) if width % h == 0]
settle_choice("heads", heads, default=4, why=f"the number of heads must divide {{width}}")
st.selectbox("Heads", heads, key="heads")
settle_choice("layer", range(1, 5))
st.radio("Layer", range(1, 5), key="layer")
push_url(PARAMS)
"""


def _settle_demo(**query: str) -> AppTest:
    at = AppTest.from_string(SETTLE_PAGE, default_timeout=30)
    at.query_params.update(query)
    return at.run()


def test_a_link_value_that_does_not_fit_is_changed_with_a_notice():
    at = _settle_demo(heads="5", layer="7")
    assert_no_exception(at)
    assert at.selectbox(key="heads").value == 4 and at.radio(key="layer").value == 4
    assert [i.value for i in at.info] == [
        "The link's setting heads='5' was changed to 4: the number of heads must divide 64.",
        "The link's setting layer='7' was changed to 4: the choices here are 1, 2, 3 and 4.",
    ]
    assert at.query_params == {"layer": "4"}  # the changed values go into the address bar
    at.radio(key="layer").set_value(2).run()
    assert len(at.info) == 2  # the notices stay for the visit


def test_a_link_value_that_fits_gets_no_notice():
    at = _settle_demo(width="48", heads="12", layer="3")
    assert_no_exception(at)
    assert at.selectbox(key="heads").value == 12 and at.radio(key="layer").value == 3
    assert not at.info


def test_a_widget_change_moves_a_setting_silently():
    at = _settle_demo(heads="32")  # a link value that fits, until the width changes
    at.selectbox(key="width").set_value(48).run()
    assert_no_exception(at)
    assert at.selectbox(key="heads").value == 24  # the nearest divisor of 48
    assert not at.info
    plain = _settle_demo()
    plain.selectbox(key="heads").set_value(64).run()
    plain.selectbox(key="width").set_value(48).run()
    assert plain.selectbox(key="heads").value == 48 and not plain.info


def test_share_link_carries_the_heatmap_colours():
    at = AppTest.from_string(PAGE, default_timeout=30)
    at.query_params["heads"] = "8"
    at.context["url"] = "https://school.example/demo"
    at.session_state["app.colorscale"] = "Cividis"
    at.run()
    codes = [c.value for c in at.code]
    assert codes[0] == "https://school.example/demo?heads=8&colors=Cividis&lang=en"
    assert codes[1] == "https://school.example/demo?heads=8&colors=Cividis&present=true&lang=en"


def test_home_page_has_a_share_link_with_the_app_settings():
    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=60)
    at.context["url"] = "https://school.example/"
    at.run()
    assert [c.value for c in at.code][:2] == ["https://school.example/?lang=en", "https://school.example/?present=true&lang=en"]
    at.selectbox(key="app.colorscale").set_value("Cividis").run()
    assert_no_exception(at)
    assert [c.value for c in at.code][:2] == ["https://school.example/?colors=Cividis&lang=en",
                                              "https://school.example/?colors=Cividis&present=true&lang=en"]
    assert at.query_params == {"colors": "Cividis"}


def test_unknown_names_in_a_link_are_ignored_with_a_notice():
    at = _demo(heads="8", head="2", colors="Cividis")  # "head" is mistyped; "colors" is an app-wide setting
    assert_no_exception(at)
    assert at.selectbox(key="heads").value == 8
    assert [i.value for i in at.info] == [
        "The link's setting head='2' was ignored: this page has no setting of that name."]
    at.selectbox(key="heads").set_value(2).run()
    assert len(at.info) == 1  # the notice stays for the visit
    only = _demo(zoom="3")  # a link with nothing but an unknown name keeps the settings as they are
    assert only.selectbox(key="heads").value == 4
    assert [i.value for i in only.info] == [
        "The link's setting zoom='3' was ignored: this page has no setting of that name."]


def test_the_home_page_reports_unknown_link_settings_and_names_the_start_button():
    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"present": "false", "page": "training"})
    at.run()
    assert_no_exception(at)
    assert [i.value for i in at.info] == [
        "The link's setting page='training' was ignored: this page has no setting of that name."]
    assert any("press Start and watch" in m.value for m in at.markdown)
    assert not any("press Train" in m.value for m in at.markdown)
