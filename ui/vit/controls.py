"""Widget groups and session-state keys of the ViT page (picture, patching, model, layer and head)."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st
import torch

from explorer.heads import MAX_HEADS, head_choices
from explorer.host import limits
from explorer.i18n import N_, _, ngettext, num, percent
from explorer.i18n.message import localized
from explorer.images import (
    FIT_MODES,
    MAX_BYTES,
    MAX_PIXELS,
    ImageError,
    image_to_tensor_array,
    prepare_image,
)
from explorer.lab.vit_walkthrough import (
    MAX_PATCHES,
    MIN_PATCHES,
    ViTWalkthrough,
    num_patches,
    random_vit,
    valid_patch_sizes,
    walk_through,
)
from transformer_core import ViTConfig
from transformer_core.tasks import get_task
from ui.common import state
from ui.common.charts import layer_head_picker
from ui.common.images import UPLOAD_TYPES, Picture, decode_upload, load_sample, sample_names
from ui.common.urlstate import UrlParam, settle_choice

MAX_UPLOAD_MB = MAX_BYTES // (1024 * 1024)  # the uploader refuses bigger files before they reach the server

SOURCE = "vit.source"  # "sample" or "upload"
SAMPLE = "vit.sample"  # name of the sample picture
TASK_PICTURE = "vit.task_picture"  # seed of the picture drawn by the trained model's task
UPLOAD = "vit.upload"  # the file uploader
UPLOADED = "vit.uploaded"  # (file name, bytes) of the last upload, kept for the session (the uploader forgets it)
SIZE = "vit.size"  # image_size in pixels
FIT = "vit.fit"  # how the picture is fitted to a square: center-crop, resize or pad
PATCH = "vit.patch"  # patch size in pixels
WEIGHTS = "vit.weights"  # "random" or "trained"
D_MODEL = "vit.d_model"  # width of the random ViT
HEADS = "vit.heads"  # heads of the random ViT
LAYERS = "vit.layers"  # blocks of the random ViT
SEED = "vit.seed"  # seed of the random weights
LAYER = "vit.layer"  # layer shown in the attention section (1-based)
HEAD = "vit.head"  # head shown large in the attention section (1-based)
PRETRAINED = "vit.pretrained"  # the pretrained ViT's menu label
PRE_LAYER = "vit.pre_layer"  # layer shown for the pretrained ViT (1-based)
PRE_HEAD = "vit.pre_head"  # head shown large for the pretrained ViT (1-based)

FIT_LABELS = {"center-crop": N_("center-crop"), "resize": N_("resize"), "pad": N_("pad")}  # FIT_MODES, as shown
SAMPLE_LABELS = {"house": N_("house"), "smiley": N_("smiley"), "shapes": N_("shapes"), "digit": N_("digit"),
                 "checkerboard": N_("checkerboard")}  # the sample pictures' names, as shown (others show their own)
SOURCE_LABELS = {"sample": N_("Sample"), "upload": N_("Upload your own"), "task": N_("From the training task")}

IMAGE_SIZES = (32, 48, 64, 96, 128, 224)
D_MODELS = (16, 32, 48, 64, 96, 128, 192, 256)
MAX_LAYERS = 8
KEPT = (SOURCE, SAMPLE, TASK_PICTURE, SIZE, FIT, PATCH, WEIGHTS, D_MODEL, HEADS, LAYERS, SEED, LAYER, HEAD,
        PRETRAINED, PRE_LAYER, PRE_HEAD)

URL_PARAMS = [
    UrlParam(SAMPLE, "house", choices=tuple(sample_names()) or ("house",)),
    UrlParam(SIZE, 64, choices=IMAGE_SIZES),
    UrlParam(FIT, "center-crop", choices=FIT_MODES),
    UrlParam(PATCH, 8, lo=1, hi=max(IMAGE_SIZES)),
    UrlParam(D_MODEL, 64, choices=D_MODELS),
    UrlParam(HEADS, 4, lo=1, hi=64),
    UrlParam(LAYERS, 4, lo=1, hi=MAX_LAYERS),
    UrlParam(SEED, 0, lo=0, hi=2**31 - 1),
    UrlParam(LAYER, 1, lo=1, hi=MAX_LAYERS),
    UrlParam(HEAD, 1, lo=1, hi=64),
]
_DEFAULTS = {p.key: p.default for p in URL_PARAMS}


def image_sizes() -> list[int]:
    """Image sizes offered on this host."""
    return [s for s in IMAGE_SIZES if s <= limits().max_image_size] or [IMAGE_SIZES[0]]


def d_models() -> list[int]:
    """Model widths offered on this host."""
    return [d for d in D_MODELS if d <= limits().max_d_model] or [D_MODELS[0]]


def patch_choices(size: int, fixed: ViTConfig | None = None) -> list[int]:
    """Patch sizes offered for ``size`` (only the trained model's own when one is used)."""
    return [fixed.patch_size] if fixed is not None else valid_patch_sizes(size)


def _keep_upload() -> None:
    file = st.session_state.get(UPLOAD)
    st.session_state[UPLOADED] = None if file is None else (file.name, file.getvalue())


def _uploaded_picture() -> Picture | None:
    """The uploaded picture (the one of an earlier visit while the uploader is empty), or None; says why not."""
    kept = st.session_state.get(UPLOADED)
    file = st.file_uploader(_("Your picture"), type=UPLOAD_TYPES, key=UPLOAD, max_upload_size=MAX_UPLOAD_MB,
                            on_change=_keep_upload,
                            help=_("Up to {mb} MB and {megapixels} megapixels; it is checked, converted to RGB and "
                                   "fitted to image_size.").format(mb=num(MAX_UPLOAD_MB),
                                                                   megapixels=num(MAX_PIXELS // 1_000_000)))
    if file is not None and kept is None:  # uploaded before this session kept uploads
        kept = (file.name, file.getvalue())
    if kept is None:
        st.caption(_("No file yet — showing the sample meanwhile."))
        return None
    name, data = kept
    if file is None:
        st.caption(_("Showing **{name}**, uploaded earlier in this session; drop another file to replace it.").format(
            name=name))
    try:
        return decode_upload(name, data)
    except ImageError as err:
        st.error(_("**{name}**: {error} Showing the sample instead.").format(
            name=name, error=localized(err)), icon="🖼️")
        return None


def picture_controls(task: Any | None = None) -> Picture:
    """Sample, upload or (with a trained ViT) a picture from its task; a bad upload says why, the sample stays."""
    names = sample_names()
    sources = ["sample", "upload"] + (["task"] if task is not None and hasattr(task, "images") else [])
    if st.session_state.get(SOURCE) not in sources:
        st.session_state[SOURCE] = "sample"
    source = st.radio(
        _("Picture"), sources, key=SOURCE, horizontal=True,
        format_func=lambda v: _(SOURCE_LABELS[v]),
        help=_("One of the pictures drawn by the app, your own PNG, JPEG, WebP, GIF or BMP file, or (with a "
               "trained ViT) a fresh picture like the ones it learned from."),
    )
    if source == "task":
        st.session_state.setdefault(TASK_PICTURE, 0)
        seed = st.number_input(_("Picture number"), 0, 10_000, key=TASK_PICTURE,
                               help=_("Each number draws a different picture of the training task."))
        return Picture(_task_picture(task, int(seed)), _("training-task picture {seed}").format(seed=seed))
    settle_choice(SAMPLE, names, default=_DEFAULTS[SAMPLE])
    sample = st.selectbox(_("Sample"), names, key=SAMPLE, disabled=source == "upload", format_func=sample_label,
                          help=_("Pictures drawn by the app from simple shapes."))
    picture = Picture(load_sample(sample), _("sample “{sample}”").format(sample=sample_label(sample)))
    if source == "upload":
        picture = _uploaded_picture() or picture
    for note in picture.notes:
        st.caption(f"ℹ️ {localized(note)}")
    return picture


def sample_label(name: str) -> str:
    """A sample picture's name in the reader's language (a sample not listed keeps its file name)."""
    return _(SAMPLE_LABELS[name]) if name in SAMPLE_LABELS else name


def _task_picture(task: Any, seed: int) -> np.ndarray:
    return np.ascontiguousarray(task.images(1, seed=seed)[0])  # (H, W, 3) uint8


def trained_task(entry: state.TrainedModel | None) -> Any | None:
    """The task the trained ViT learned: the one stored with it, else rebuilt for its image size and classes
    (None if that fails)."""
    if entry is None:
        return None
    if getattr(entry, "task", None) is not None:
        return entry.task
    config = entry.config
    for options in ({"num_classes": config.num_classes, "image_size": config.image_size}, {}):
        try:
            return get_task(entry.task_name, **options)
        except ValueError:
            continue
    return None


def trained_vit() -> state.TrainedModel | None:
    """The ViT trained on the Live Training page, if there is one."""
    entries = [e for e in state.trained_models() if isinstance(e.config, ViTConfig)]
    return entries[0] if entries else None


def weights_control(trained: state.TrainedModel | None) -> bool:
    """Random or trained weights; True when the trained ViT is used."""
    if trained is None:
        st.caption(_("Weights: random (no ViT trained in this session yet)."))
        st.page_link("pages/training.py", label=_("Train a ViT on shapes in Live Training"), icon="📈",
                     query_params={"task": "vit_shapes"})
        return False
    st.session_state.setdefault(WEIGHTS, "trained")  # a trained ViT is the more telling default
    choice = st.radio(
        _("Weights"), ["random", "trained"], key=WEIGHTS,
        format_func=lambda v: _("Random") if v == "random" else _("Trained: {task} (step {step})").format(
            task=_(trained.task_title), step=num(trained.step)),
        help=_("Random weights show the mechanics; the trained ViT shows attention that learned what matters."),
    )
    latest = state.latest_trained()
    if latest is not None and latest is not trained:
        st.caption(_("The trained ViT is the last one of this session ({steps} steps). Live Training has trained a "
                     "{task} model since; that model is not a ViT, so it does not replace it here.").format(
            steps=num(trained.step), task=_(latest.task_title)))
    return choice == "trained"


def geometry_controls(fixed: ViTConfig | None, projector: bool) -> tuple[int, int, str]:
    """Image size, fit mode and patch size; a trained ViT fixes the first and the last."""
    if fixed is not None:
        size, patch = fixed.image_size, fixed.patch_size
        st.selectbox(_("Image size (pixels)"), [size], disabled=True, key="vit.fixed_size",
                     help=_("The trained ViT only reads pictures of this size."))
        st.selectbox(_("Patch size P (pixels)"), [patch], disabled=True, key="vit.fixed_patch",
                     format_func=lambda p: _patch_label(size, p),
                     help=_("The trained ViT's patch size; its projection expects exactly these patches."))
        st.caption(_("Image and patch size are fixed by the trained ViT; choose Random weights to change them."))
    else:
        sizes = image_sizes()
        settle_choice(SIZE, sizes, default=_DEFAULTS[SIZE],
                      why=_("this host offers images up to {size} pixels").format(size=sizes[-1]))
        size = st.selectbox(_("Image size (pixels)"), sizes, key=SIZE,
                            help=_("The picture is scaled to image_size × image_size before it is cut into "
                                   "patches."))
        patches = patch_choices(size)
        settle_choice(PATCH, patches, default=_DEFAULTS[PATCH],
                      why=_("only patches of {sizes} pixels cut a {size}-pixel image into {low} to {high} "
                            "patches").format(sizes=", ".join(map(str, patches)), size=size, low=num(MIN_PATCHES),
                                              high=num(MAX_PATCHES)))
        patch = st.select_slider(
            _("Patch size P (pixels)"), patches, key=PATCH,
            format_func=lambda p: _patch_label(size, p),
            help=_("Side of each square patch. Only sizes that divide image_size and give 4 to 400 patches are "
                   "offered."),
        )
    fit = st.session_state.get(FIT, _DEFAULTS[FIT])
    if not projector:
        fit = st.radio(_("Fit to a square"), FIT_MODES, key=FIT, horizontal=True,
                       format_func=lambda m: _(FIT_LABELS.get(m, m)),
                       help=_("center-crop keeps the middle square, resize stretches, pad adds white borders."))
    return size, patch, fit


def _patch_label(size: int, patch: int) -> str:
    """"8 px → 64 patches": a patch size and the patches it cuts a ``size``-pixel picture into."""
    n = num_patches(size, patch)
    return ngettext("{patch} px → {n} patch", "{patch} px → {n} patches", n).format(patch=patch, n=num(n))


def model_controls(fixed: ViTConfig | None, size: int, patch: int, projector: bool) -> ViTConfig:
    """Width, heads, layers and seed of the random ViT (or the trained ViT's configuration, shown read-only)."""
    if fixed is not None:
        st.caption(_("Trained ViT: d_model {d_model}, {heads} heads, {layers} layers, {channels} input "
                     "channel(s).").format(d_model=fixed.d_model, heads=fixed.n_heads, layers=fixed.n_layers,
                                           channels=fixed.in_channels))
        return fixed
    widths = d_models()
    d_model = settle_choice(D_MODEL, widths, default=_DEFAULTS[D_MODEL],
                            why=_("this host offers d_model up to {d_model}").format(d_model=widths[-1]))
    head_options = head_choices(d_model)
    heads = settle_choice(HEADS, head_options, default=_DEFAULTS[HEADS],
                          why=_("the number of heads must divide d_model {d_model} and be at most {most}").format(
                              d_model=d_model, most=MAX_HEADS))
    depth = min(MAX_LAYERS, limits().max_layers)
    layers = settle_choice(LAYERS, range(1, depth + 1), default=_DEFAULTS[LAYERS],
                           why=_("this host allows at most {depth} layers").format(depth=depth))
    st.session_state.setdefault(SEED, _DEFAULTS[SEED])
    if not projector:
        c1, c2 = st.columns(2)
        c3, c4 = st.columns(2)
        d_model = c1.selectbox("d_model", widths, key=D_MODEL,
                               help=_("Width of every token vector after the projection."))
        heads = c2.selectbox(_("Heads"), head_options, key=HEADS,
                             help=_("Attention heads per layer; each gets d_model / heads numbers per token."))
        layers = c3.slider(_("Layers"), 1, depth, key=LAYERS,
                           help=_("Encoder blocks; the rollout multiplies the attention of all of them."))
        c4.number_input(_("Seed"), 0, 2**31 - 1, key=SEED,
                        help=_("Seed of the random weights: same seed, same model."))
    return ViTConfig(image_size=size, patch_size=patch, d_model=d_model, n_heads=heads, n_layers=layers,
                     d_ff=4 * d_model)


def layer_head_controls(layers: int, heads: int) -> tuple[int, int]:
    """The layer and head to show large, 0-based."""
    return layer_head_picker(layers, heads, keys=(LAYER, HEAD), helps=(
        _("Which encoder block's attention to show (1 = first)."),
        _("The head shown large; every head of the layer is shown below.")))


@st.cache_data(max_entries=16, show_spinner=False)
def fitted_pixels(pixels: np.ndarray, size: int, fit: str) -> np.ndarray:
    """The picture fitted to ``size x size`` pixels, ``(size, size, 3)`` uint8."""
    from PIL import Image

    return prepare_image(Image.fromarray(pixels), size, fit)


@st.cache_resource(max_entries=8, show_spinner=False)
def _random_model(config: ViTConfig, seed: int) -> torch.nn.Module:
    # Read-only: only ever run in eval mode under no_grad, never trained or changed.
    return random_vit(config, seed)


@st.cache_data(max_entries=8, show_spinner=False)
def _random_walkthrough(config: ViTConfig, seed: int, pixels: np.ndarray) -> ViTWalkthrough:
    image = torch.from_numpy(image_to_tensor_array(pixels, config.in_channels))
    return walk_through(_random_model(config, seed), image)


def run_walkthrough(config: ViTConfig, fixed: ViTConfig | None, pixels: np.ndarray,
                    task: Any | None = None) -> ViTWalkthrough:
    """The picture through the random ViT (cached) or through the trained ViT of this session."""
    trained = trained_vit()
    if fixed is not None and trained is not None:
        image = torch.from_numpy(image_to_tensor_array(pixels, fixed.in_channels))
        return walk_through(trained.model, image, getattr(task, "model_input", None))
    return _random_walkthrough(config, int(st.session_state.get(SEED, 0)), pixels)


def prediction_text(walk: ViTWalkthrough, task: Any | None, trained: bool, *, from_task: bool = False) -> str:
    """What the classifier says, or why its output means nothing yet.

    Args:
        from_task: the picture was drawn by the trained model's own task; any other picture (a sample, an upload)
            lies outside what the model learned, and the text says its answer means nothing there.
    """
    if not trained:
        return _("With random weights the {n} class scores mean nothing yet; train a ViT to see attention that has "
                 "learned where to look.").format(n=num(walk.logits.numel()))
    probs = walk.logits.softmax(dim=-1)
    best = int(probs.argmax())
    classes = getattr(task, "classes", None)
    name = classes[best] if classes is not None and best < len(classes) else _("class {n}").format(n=best)
    sure = percent(float(probs[best]))
    if from_task:
        return _("The trained ViT says **{name}** ({sure} sure).").format(name=name, sure=sure)
    if classes:
        return _("The trained ViT says **{name}** ({sure} sure) — but this picture is **outside what it learned**: "
                 "it has only seen the task's synthetic pictures of shapes ({classes}), so on any other picture its "
                 "answer and its confidence mean nothing. Choose *From the training task* to test it on pictures "
                 "like the ones it learned from.").format(name=name, sure=sure, classes=", ".join(classes))
    return _("The trained ViT says **{name}** ({sure} sure) — but this picture is **outside what it learned**: it "
             "has only seen the task's synthetic pictures of shapes, so on any other picture its answer and its "
             "confidence mean nothing. Choose *From the training task* to test it on pictures like the ones it "
             "learned from.").format(name=name, sure=sure)
