"""ViT Patching is honest about its trained ViT: a picture outside the synthetic shapes gets a warning, the last
trained ViT stays after other models are trained, and an upload survives a visit to another page."""

from __future__ import annotations

import io

from PIL import Image

from tests.app.conftest import app_at, assert_no_exception
from transformer_core import CausalLM, TransformerConfig
from transformer_core.tasks import get_task
from ui.common import state
from ui.vit import controls as vc

PAGE = "pages/vit.py"


def _trained_vit() -> state.TrainedModel:
    task = get_task("vit_shapes")
    config = task.default_model_config()
    return state.TrainedModel("vision", task.name, task.title, task.build_model(config).eval(), config, step=10,
                              task=task)


def _tiny_lm() -> state.TrainedModel:
    config = TransformerConfig(vocab_size=8, max_len=12, d_model=8, n_heads=2, n_layers=1, d_ff=16)
    return state.TrainedModel("causal_lm", "char_lm", "Tiny text", CausalLM(config), config, step=5)


def _prediction(at) -> str:
    return next(m.value for m in at.markdown if "The trained ViT says" in m.value)


def test_pictures_outside_the_training_task_are_flagged():
    at = app_at(None)
    at.session_state[state.TRAINED] = {"vision": _trained_vit()}
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    said = _prediction(at)  # a sample picture: not one of the task's
    assert "outside what it learned" in said and "circle, square, triangle, cross" in said
    at.radio(key=vc.SOURCE).set_value("task").run()
    said = _prediction(at)
    assert "outside" not in said and said.endswith("sure).")


def test_the_last_vit_stays_after_a_later_text_model():
    vit = _trained_vit()
    at = app_at(None)
    at.session_state[state.TRAINED] = {"vision": vit, "causal_lm": _tiny_lm()}  # trained after the ViT
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert at.radio(key=vc.WEIGHTS).value == "trained"
    note = next(c.value for c in at.caption if "last one of this session" in c.value)
    assert "Tiny text model since" in note
    assert not [c for c in at.caption if "no ViT trained" in c.value]


def test_publishing_keeps_one_model_per_family_in_training_order():
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        import streamlit as st

        from ui.common import state

        for entry in st.session_state["entries"]:
            state.publish_trained(entry)

    vit, lm = _trained_vit(), _tiny_lm()
    at = AppTest.from_function(script)
    at.session_state["entries"] = [vit, lm, vit]  # ViT, then text, then the ViT again
    at.run()
    assert at.session_state[state.TRAINED] == {"causal_lm": lm, "vision": vit}
    assert list(at.session_state[state.TRAINED]) == ["causal_lm", "vision"]  # the ViT was trained last
    assert at.session_state[state.TRAINED]["vision"] is vit


def test_an_upload_survives_a_visit_to_another_page():
    picture = io.BytesIO()
    Image.new("RGB", (50, 40), (20, 160, 60)).save(picture, format="PNG")
    at = app_at(PAGE)
    at.radio(key=vc.SOURCE).set_value("upload").run()
    at.file_uploader(key=vc.UPLOAD).set_value(("field.png", picture.getvalue(), "image/png")).run()
    assert at.image[0].proto.imgs[0].caption.startswith("field.png")
    at.switch_page("pages/training.py").run()
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert at.radio(key=vc.SOURCE).value == "upload"
    assert at.image[0].proto.imgs[0].caption.startswith("field.png")
    assert any("uploaded earlier in this session" in c.value for c in at.caption)
