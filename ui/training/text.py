"""Live Training page: what the character language model reads — the built-in corpus or the user's own text —
and how its sample predictions are drawn (temperature and top-k).

The user's text is private and can be large. It never goes into the URL, a link or anything that sessions
share: it lives in this session's state, and the task built from it is kept there too, under a hash of the
text, so that it is built once per text instead of on every script run. A run on it is never kept in, nor
replayed from, the recordings that every session shares (:mod:`explorer.runs.user_data`): another visitor with
the same settings always trains their own run. Only a live share that its owner turns on shows the run to
whoever opens that link: its curves and its attention over placeholder characters, and its samples (lines of the
text) only when the owner agrees for that run (:mod:`explorer.runs.private_text`); its model is offered for
download only when the owner allows it.

These widgets are drawn only for char_lm, and Streamlit drops a widget's state while it is not drawn (on another
page, or for another task), so their values live under plain session-state keys and each widget gets its own
key, filled from the plain one before it is drawn and copied back by its ``on_change`` (see :func:`_bound`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

import streamlit as st

from explorer.host import limits
from explorer.i18n import N_, _, num
from explorer.i18n.message import localized, message_of
from transformer_core.tasks import Task, get_task
from transformer_core.tasks.language import SAMPLE_TEMPERATURE, CharLMTask, clean_text, decode_text, show_char
from ui.common.urlstate import UrlParam

CHAR_LM = "char_lm"  # the task that can read the user's text
# Settings (plain keys; the widgets showing them have the keys of widget_key()).
SOURCE = "live.text_source"  # "corpus" or "own": what char_lm trains on (not in the URL: the text is private)
TEXT = "live.text"  # str: the user's text
TEMPERATURE, TOP_K = "live.temperature", "live.top_k"  # how sample predictions are drawn (sampling only)
# Other state.
UPLOAD = "live.text_file"  # the .txt uploader
UPLOAD_NOTICE = "live.text_notice"  # (level, message) about the uploaded file, shown while it is there
USER_TASK = "live.user_task"  # (text hash, CharLMTask or None, notice or problem, characters used)

SOURCES = {"corpus": N_("Built-in corpus"), "own": N_("Your own text")}
TEMPERATURES = (0.0, 0.2, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0)
TOP_KS = (0, 1, 2, 3, 5, 10, 20, 50)  # 0: no limit
TEXT_UPLOAD_MB = 10  # largest .txt file taken (the server's own limit is higher, for checkpoints)
DEFAULTS = {SOURCE: "corpus", TEXT: ""}  # session-only settings, kept across pages like the URL's
URL_PARAMS = (
    UrlParam(TEMPERATURE, SAMPLE_TEMPERATURE, choices=TEMPERATURES, name="temperature"),
    UrlParam(TOP_K, 0, choices=TOP_KS, name="top_k"),
)
SAMPLING_KEYS = (TEMPERATURE, TOP_K)  # they change the samples shown, never the run
OWN_DESCRIPTION = N_("Predict the next character of your text, then write new text one character at a time.")
SHOWN_VOCAB = 80  # characters of the vocabulary listed under the text box
PRIVACY = N_(
    "🔒 Your text stays in this browser session: it is never put into the address, links or the recordings "
    "this server keeps for replays, and a run on it is never replayed to anyone else. If you turn on 📡 Share "
    "live, watchers see the run's curves and attention with • for every character, never a line of the "
    "text; its samples (lines of your text and what the model writes) only if you agree for that run."
)


def widget_key(key: str) -> str:
    """The key of the widget that shows the setting ``key``."""
    return f"{key}.widget"


def _keep(key: str) -> None:
    st.session_state[key] = st.session_state[widget_key(key)]


def _bound(widget: Callable[..., Any], label: str, *args: Any, key: str, **kwargs: Any) -> Any:
    """Draw ``widget`` showing the setting ``key``: filled from it before drawing, copied back on change."""
    shown = widget_key(key)
    if st.session_state.get(shown) != st.session_state[key]:
        st.session_state[shown] = st.session_state[key]
    return widget(label, *args, key=shown, on_change=_keep, args=(key,), **kwargs)


def own_text_selected(task_name: str) -> bool:
    """Whether the run trains on the user's text (char_lm with "Your own text" chosen)."""
    return task_name == CHAR_LM and st.session_state.get(SOURCE) == "own"


def text_hash(text: str) -> str:
    """A short fingerprint of ``text``: the key of its task, and part of the run's settings signature."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def text_signature(task_name: str) -> str | None:
    """The hash of the text the run trains on, or ``None`` for built-in data."""
    return text_hash(st.session_state.get(TEXT, "")) if own_text_selected(task_name) else None


def _prepared() -> tuple[str, CharLMTask | None, str | None, int]:
    """(hash, task or None, notice or problem, characters used) for the text in the box, built when it changed."""
    text = st.session_state.get(TEXT, "")
    key = text_hash(text)
    stored = st.session_state.get(USER_TASK)
    if stored is None or stored[0] != key:
        try:
            cleaned, cut = clean_text(text, max_chars=limits().max_text_chars)
            task = get_task(CHAR_LM, text=cleaned)
            stored = (key, task, " ".join(n for n in (cut, task.notice) if n) or None, len(cleaned))
        except ValueError as err:
            stored = (key, None, message_of(err), 0)
        st.session_state[USER_TASK] = stored  # one text per session: the previous task is let go
    return stored


def user_task() -> CharLMTask:
    """The character model's task on the user's text (ValueError with a friendly message if it is unusable)."""
    _key, task, message, _chars = _prepared()
    if task is None:
        raise ValueError(message)
    return task


def text_problem(task_name: str) -> str | None:
    """Why the user's text cannot be trained on, when it is chosen for ``task_name``; otherwise ``None``."""
    if not own_text_selected(task_name):
        return None
    _key, task, message, _chars = _prepared()
    return message if task is None else None


def sampling(task: Task) -> dict[str, Any]:
    """Keyword arguments for ``task.samples``: the chosen temperature and top-k (char_lm only)."""
    if task.name != CHAR_LM:
        return {}
    top_k = int(st.session_state.get(TOP_K, 0))
    return {"temperature": float(st.session_state.get(TEMPERATURE, SAMPLE_TEMPERATURE)), "top_k": top_k or None}


def sampling_caption(options: dict[str, Any]) -> str:
    """E.g. " (temperature 0.8, top-k 5)" for sample tables; empty without options."""
    if not options:
        return ""
    return f" (temperature {options['temperature']:g}, top-k {options['top_k'] or 'all'})"


_CAPTION = re.compile(r" \(temperature (\S+), top-k (\S+)\)")


def caption_shown(caption: str) -> str:
    """A sample set's :func:`sampling_caption` (English, kept with the run) in the page's language."""
    found = _CAPTION.fullmatch(caption or "")
    if found is None:
        return caption
    top_k = _("all") if found[2] == "all" else found[2]
    try:
        temperature = num(float(found[1]))
    except ValueError:
        temperature = found[1]
    return _(" (temperature {temperature}, top-k {top_k})").format(temperature=temperature, top_k=top_k)


def _on_upload() -> None:
    """Put an uploaded file's text into the text box, where it can still be edited (or say why not)."""
    file = st.session_state.get(UPLOAD)
    if file is None:  # the file was removed; its text stays in the box
        st.session_state.pop(UPLOAD_NOTICE, None)
        return
    try:
        data = file.getvalue()
        if len(data) > TEXT_UPLOAD_MB * 2**20:
            raise ValueError(
                _("The file is {size} MB; text files are read up to {limit} MB.").format(
                    size=num(len(data) / 2**20, 1), limit=TEXT_UPLOAD_MB
                )
            )
        text, cut = clean_text(decode_text(data), max_chars=limits().max_text_chars)
    except ValueError as err:
        st.session_state[UPLOAD_NOTICE] = (
            "error",
            _("{file} was not used. {reason}").format(file=file.name, reason=localized(err)),
        )
        return
    st.session_state[TEXT] = text
    loaded = _("Loaded {file} into the text box: {n} characters.").format(file=file.name, n=num(len(text)))
    st.session_state[UPLOAD_NOTICE] = ("success", loaded + (f" {cut}" if cut else ""))


def _markdown_escaped(text: str) -> str:
    # Any ASCII punctuation may be backslash-escaped in Markdown; the user's characters must show as typed.
    return "".join(f"\\{ch}" if ch.isascii() and not ch.isalnum() and not ch.isspace() else ch for ch in text)


def text_summary() -> str | None:
    """A caption about the usable text in the box: its size, its split and its vocabulary; None if unusable."""
    _key, task, notice, chars = _prepared()
    if task is None:
        return None
    vocab = "".join(show_char(ch) for ch in task.vocab)
    vocab = vocab if len(vocab) <= SHOWN_VOCAB else vocab[:SHOWN_VOCAB] + "…"
    text = _("{n} characters, {train} of them for training. Vocabulary of {size} characters: {vocab}").format(
        n=num(chars), train=num(len(task.train_text)), size=num(len(task.vocab)), vocab=_markdown_escaped(vocab)
    )
    return text + (f"  \nℹ️ {notice}" if notice else "")


def sampling_controls() -> None:
    """Temperature and top-k of the sample predictions, side by side."""
    c_temp, c_top = st.columns(2)
    _bound(
        c_temp.select_slider,
        _("Sampling temperature"),
        TEMPERATURES,
        key=TEMPERATURE,
        format_func=lambda t: _("0 (greedy)") if t == 0 else num(t),
        help=_(
            "How the sample predictions below are written. The model's scores are divided by the temperature "
            "before the softmax: below 1 the likeliest characters win more often (safer, more repetitive text), "
            "above 1 rare characters get a chance (more surprising text); 0 always takes the likeliest. "
            "Changes only the samples, not the training."
        ),
    )
    _bound(
        c_top.select_slider,
        _("Top-k"),
        TOP_KS,
        key=TOP_K,
        format_func=lambda k: _("all") if k == 0 else str(k),
        help=_(
            "Draw each next character only from the k likeliest ('all': no limit). With 1 the model always "
            "takes its likeliest character, so the samples no longer change with the temperature. Changes only "
            "the samples, not the training."
        ),
    )


def own_text_inputs() -> None:
    """The text box and the .txt uploader, with what the model will see of the text."""
    c_text, c_file = st.columns([3, 2])
    _bound(
        c_text.text_area,
        _("Your text"),
        key=TEXT,
        height=180,
        placeholder=_("Paste a story, a poem, song lyrics or code…"),
        max_chars=limits().max_text_chars,
        help=_(
            "The model learns to continue this text one character at a time; its characters become the "
            "vocabulary. The first 90% is for training, the last 10% checks the model on text it has not "
            "seen. The box takes up to {n} characters. Press Ctrl+Enter to apply."
        ).format(n=num(limits().max_text_chars)),
    )
    c_file.file_uploader(
        _("…or upload a text file"),
        type=["txt"],
        key=UPLOAD,
        on_change=_on_upload,
        max_upload_size=TEXT_UPLOAD_MB,
        help=_(
            "A plain-text file saved as UTF-8, up to {limit} MB. Its text goes into the box, where you can still "
            "edit it; the file is only read as text."
        ).format(limit=TEXT_UPLOAD_MB),
    )
    notice = st.session_state.get(UPLOAD_NOTICE)
    if notice:
        (c_file.error if notice[0] == "error" else c_file.success)(notice[1], icon="📄")
    summary = text_summary()
    if summary:
        c_text.caption(summary)
    st.caption(_(PRIVACY))


def text_panel(task_name: str) -> None:
    """For the character language model: the training text and the sampling controls (nothing for other tasks)."""
    if task_name != CHAR_LM:
        return
    c_source, c_sampling = st.columns([1, 1], vertical_alignment="bottom")
    _bound(
        c_source.radio,
        _("Training text"),
        list(SOURCES),
        key=SOURCE,
        format_func=lambda v: _(SOURCES[v]),
        horizontal=True,
        help=_(
            "What the character model learns from: the built-in corpus of grammatical sentences, or text you "
            "paste or upload (a few pages work best). Your text stays in this browser session: it is never put "
            "into links or the server's shared recordings, and runs on it are never replayed to others."
        ),
    )
    with c_sampling:
        sampling_controls()
    if st.session_state[SOURCE] == "own":
        own_text_inputs()
