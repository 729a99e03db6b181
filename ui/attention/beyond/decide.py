"""*Where does it decide?*: activation patching and direct logit attribution on two texts that differ in a word.

The clean text gives one answer, the corrupt text (one word changed) another. Patching runs the corrupt text with
one piece of the clean run put back — the residual stream at one (layer, position), or one head's output — and
measures how much of the clean answer's lead returns; the parts of direct logit attribution add up to the clean
run's logit difference. Patching runs on a button, with progress and a Stop button; results are kept per visitor,
keyed by the model, the texts and the answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from explorer.i18n import N_, _, ngettext, num
from explorer.lab import decide as lab
from explorer.lab.decide_pairs import CAUSAL_PAIRS, MASKED_PAIRS, PAIRS_BY_TASK, TextPair, fitting_pairs
from explorer.lab.subjects import token_labeller
from explorer.lab.text_input import MAX_TEXT_CHARS, MAX_TOKENS
from explorer.pretrained.lab import CAUSAL_FAMILIES, ENCODER_FAMILIES, encode, shown_token
from transformer_core.models import CausalLM, Seq2SeqTransformer
from ui.attention.beyond import decide_charts as draw_
from ui.attention.beyond.context import LensContext
from ui.attention.keys import DECIDE_CLEAN, DECIDE_CORRUPT, DECIDE_STACK, DECIDE_WHAT
from ui.attention.lab_run import trained_input

EXAMPLE = "attn.decide.example"  # the curated pair picked ("own" for typed texts)
ANSWER, OTHER = "attn.decide.answer", "attn.decide.other"  # the two answers compared (token ids)
ANSWERS_FOR = "attn.decide.answers_for"  # the setup the answers were defaulted for
RESULTS = "attn.decide.results"  # {what a result depends on: Patching or attribution}, this visitor's only
RUNNING = "attn.decide.running"  # set while patching runs: still set on the next run means it was stopped
KEEP = 8  # results kept per visitor
OWN = "own"
WHAT_TITLES = {"residual": N_("Residual stream (layer × position)"), "heads": N_("Heads (layer × head)")}
STACK_TITLES = {"encoder": N_("Encoder (the digits read)"), "decoder": N_("Decoder (the answer so far)"),
                "cross": N_("Cross-attention heads")}
STACK_NOTES = {"encoder": N_("encoder"), "decoder": N_("decoder"), "cross": N_("cross-attention heads")}
CAPTION = N_("Patching runs the corrupt text with one piece of the clean run put back and measures how much of the "
             "clean answer's lead over the other answer comes back: 1 (dark red) brings all of it back, 0 nothing. "
             "It shows which activations carry the difference between the two texts — only for this pair, not the "
             "model's general method. Values above 1 or below 0 happen (a patch can overshoot or push the other "
             "way), and when several parts carry the same information, patching one of them restores little: "
             "redundancy hides parts.")


@dataclass(frozen=True)
class Reader:
    """How this view reads a text for the shown model."""

    name: str  # names the model in the results' keys
    kind: str  # one of explorer.lab.decide.KINDS
    read: Callable[[str], lab.Reading]  # raises ValueError with a message for students
    label: Callable[[int], str]  # an output id as text
    pairs: tuple[TextPair, ...]  # curated pairs for this kind of model
    mask_id: int | None = None  # BERT's [MASK] id


def _pretrained_reader(ctx: LensContext) -> Reader | str:
    pre = ctx.pre
    tok = pre.tokenizer

    def read(text: str) -> lab.Reading:
        inp = encode(pre, text, MAX_TOKENS)
        if inp.empty:
            raise ValueError(_("Type both texts: each needs at least one token."))
        return lab.Reading(inp.ids, inp.tokens)

    def label(i: int) -> str:
        return shown_token(tok.id_to_token(i) or f"#{i}")

    if pre.family in CAUSAL_FAMILIES:
        return Reader(pre.name, "causal", read, label, CAUSAL_PAIRS)
    if pre.family in ENCODER_FAMILIES and getattr(pre.model, "head", None) is not None and tok.mask_token:
        return Reader(pre.name, "masked", read, label, MASKED_PAIRS, tok.token_to_id(tok.mask_token))
    return _("{model} has no output layer that names words, so there are no two answers to compare.").format(
        model=pre.name)


def _trained_reader(ctx: LensContext) -> Reader | str:
    entry = ctx.trained

    def read(text: str) -> lab.Reading:
        inp, _task, _vocab = trained_input(entry, text)
        if inp.dropped:
            raise ValueError(_("The {task} model does not read {characters}; type only characters of its "
                               "task.").format(task=_(entry.task_title), characters=", ".join(map(repr, inp.dropped))))
        if inp.empty:
            raise ValueError(_("Type both texts in the {task} model's characters.").format(task=_(entry.task_title)))
        return lab.Reading(inp.ids, inp.tokens)

    _inp, _task, vocab = trained_input(entry, "")
    name = f"{entry.family}:{entry.task_name}:{entry.step}:{id(entry.model)}"
    pairs = PAIRS_BY_TASK.get(entry.task_name, ())
    if isinstance(entry.model, CausalLM):
        return Reader(name, "causal", read, token_labeller(vocab), pairs)
    if isinstance(entry.model, Seq2SeqTransformer) and entry.task_name in PAIRS_BY_TASK:
        return Reader(name, "seq2seq", read, lab.digit_label, pairs)
    return _("The {task} model outputs numbers, not a choice between answers, so there is no answer to bring back. "
             "Train a character model or a digit task on Live Training, or pick a pretrained model.").format(
        task=_(entry.task_title))


def reader(ctx: LensContext) -> Reader | str:
    """The reader of the shown model, or why this view cannot run on it."""
    if ctx.pre is not None:
        return _pretrained_reader(ctx)
    if ctx.trained is not None:
        try:
            return _trained_reader(ctx)
        except ValueError as err:
            return str(err)
    return _("Random weights predict nothing, so there is no answer to bring back. Pick a pretrained model "
             "(GPT-2, Llama, BERT) or one trained on Live Training.")


def offered(ctx: LensContext) -> str | None:
    """``None`` when the shown model gives answers to compare, else why not."""
    found = reader(ctx)
    return found if isinstance(found, str) else None


def _pick_example(pairs: dict[str, TextPair]) -> None:
    pair = pairs.get(st.session_state[EXAMPLE])
    if pair is not None:
        st.session_state[DECIDE_CLEAN], st.session_state[DECIDE_CORRUPT] = pair.clean, pair.corrupt


def _lengths(r: Reader) -> Callable[[str], int | None]:
    def count(text: str) -> int | None:
        try:
            return len(r.read(text).ids)
        except ValueError:
            return None
    return count


def _texts(r: Reader) -> tuple[str, str]:
    """The example picker and the two text boxes; curated pairs that the model reads unevenly are left out."""
    pairs = {p.key: p for p in fitting_pairs(r.pairs, _lengths(r))}
    clean, corrupt = st.session_state.get(DECIDE_CLEAN, ""), st.session_state.get(DECIDE_CORRUPT, "")
    if not clean and not corrupt and pairs:
        first = next(iter(pairs.values()))
        st.session_state[DECIDE_CLEAN], st.session_state[DECIDE_CORRUPT] = clean, corrupt = first.clean, first.corrupt
    st.session_state[EXAMPLE] = next((k for k, p in pairs.items() if (p.clean, p.corrupt) == (clean, corrupt)), OWN)
    titles = {**{k: p.title for k, p in pairs.items()}, OWN: N_("Your own texts")}
    st.selectbox(_("Example pair"), list(titles), format_func=lambda k: _(titles[k]), key=EXAMPLE,
                 on_change=_pick_example, args=(pairs,),
                 help=_("Two texts that differ in one word and make the model answer differently. Pick one, or type "
                        "your own below."))
    chosen = pairs.get(st.session_state[EXAMPLE])
    if chosen is not None:
        st.caption(_(chosen.about))
    left, right = st.columns(2)
    with left:
        st.text_input(_("Clean text"), key=DECIDE_CLEAN, max_chars=MAX_TEXT_CHARS,
                      help=_("The text whose answer patching brings back into the corrupt run."))
    with right:
        st.text_input(_("Corrupt text"), key=DECIDE_CORRUPT, max_chars=MAX_TEXT_CHARS,
                      help=_("The same text with one word changed, so that the answer changes. It must have as many "
                             "tokens as the clean text."))
    return st.session_state[DECIDE_CLEAN], st.session_state[DECIDE_CORRUPT]


def _answers(r: Reader, setup: lab.Setup, model) -> tuple[int, int]:
    """Two drop-downs over both texts' likeliest outputs, defaulting to each text's top one."""
    clean_top, corrupt_top = lab.candidates(model, setup)
    answer, other, same = lab.default_answers(clean_top, corrupt_top)
    options = list(dict.fromkeys([*clean_top, *corrupt_top]))
    signature = (r.name, setup.clean, setup.corrupt, setup.position)
    if st.session_state.get(ANSWERS_FOR) != signature or st.session_state.get(ANSWER) not in options \
            or st.session_state.get(OTHER) not in options:
        st.session_state[ANSWER], st.session_state[OTHER] = answer, other
        st.session_state[ANSWERS_FOR] = signature

    def title(i: int) -> str:
        on_clean, on_corrupt = i == clean_top[0], i == corrupt_top[0]
        if on_clean and on_corrupt:
            return _("“{token}” (top on clean, top on corrupt)").format(token=r.label(i))
        if on_clean:
            return _("“{token}” (top on clean)").format(token=r.label(i))
        if on_corrupt:
            return _("“{token}” (top on corrupt)").format(token=r.label(i))
        return f"“{r.label(i)}”"

    left, right = st.columns(2)
    with left:
        st.selectbox(_("Clean answer"), options, format_func=title, key=ANSWER,
                     help=_("The answer whose lead patching measures, read {where}.").format(where=setup.read_at))
    with right:
        st.selectbox(_("Other answer"), options, format_func=title, key=OTHER,
                     help=_("The answer it is compared with: the metric is logit(clean answer) − logit(other)."))
    if same:
        st.caption(_("Both texts' top answer is “{token}”; the other answer defaults to the next choice.").format(
            token=r.label(answer)))
    return int(st.session_state[ANSWER]), int(st.session_state[OTHER])


def _keep(key: tuple, value) -> None:
    results = st.session_state.setdefault(RESULTS, {})
    results.pop(key, None)
    results[key] = value
    while len(results) > KEEP:
        results.pop(next(iter(results)))


def _run(model, setup: lab.Setup, answer: int, other: int, what: str, key: tuple, stop) -> None:
    """Patch layer by layer with a progress bar; a click anywhere (Stop) interrupts it at the next update."""
    with stop:
        st.button(_("Stop"), icon=":material/stop:", key="attn.decide.stop",
                  help=_("Stops patching; nothing is kept from an unfinished run."))
    bar = st.progress(0.0, text=_("Patching layer 1…"))
    st.session_state[RUNNING] = True

    def progress(done: int, total: int) -> None:
        bar.progress(done / total, text=_("Patched {done} of {total} layers…").format(done=done, total=total))

    result = lab.run_patching(model, setup, answer, other, what, progress)
    st.session_state.pop(RUNNING, None)
    bar.empty()
    stop.empty()
    _keep(key, result)


def _patching(r: Reader, model, setup: lab.Setup, answer: int, other: int, projector: bool) -> None:
    what = st.radio(_("What to patch"), list(WHAT_TITLES), format_func=lambda w: _(WHAT_TITLES[w]), key=DECIDE_WHAT,
                    horizontal=True, help=_("Residual stream: everything the model carries at one position entering "
                                            "one layer. Heads: one attention head's output, at every position."))
    key = (r.name, setup.clean, setup.corrupt, setup.position, setup.stack, answer, other, what)
    with st.container(horizontal=True, vertical_alignment="center"):
        start = st.button(_("Patch"), type="primary", icon=":material/play_arrow:", key="attn.decide.patch",
                          help=_("Runs the corrupt text once per patch, layer by layer (GPT-2 small: about 15 s "
                                 "on a CPU)."))
        stop = st.empty()  # Stop, only while patching runs (it is the click that interrupts the run)
    if st.session_state.pop(RUNNING, None) and not start:
        st.info(_("Patching was stopped before it finished. Press **Patch** to run it again."), icon="⏹️")
    if start:
        _run(model, setup, answer, other, what, key, stop)
    result = st.session_state.get(RESULTS, {}).get(key)
    if result is None:
        if not start:
            st.info(_("Press **Patch** to see where the clean answer can be brought back."), icon="🩹")
        return
    if abs(result.clean - result.corrupt) <= 1e-9:
        st.info(_("Both texts give the same logit difference, so there is nothing to bring back. Pick other answers "
                  "or change the corrupt text."), icon="🟰")
        return
    note = "" if setup.stack is None else _(STACK_NOTES[setup.stack])  # the stack patched, named in the title
    if what == "residual":
        draw_.residual_grid(result, setup, stack_note=note, projector=projector)
    else:
        draw_.heads_grid(result, stack_note=note, projector=projector)
    st.caption(_("Logit difference “{answer}” − “{other}” {where}: {clean} on the clean text, {corrupt} on the "
                 "corrupt one.").format(answer=r.label(answer), other=r.label(other), where=setup.read_at,
                                        clean=num(result.clean, 3), corrupt=num(result.corrupt, 3)))


def _attribution(r: Reader, model, setup: lab.Setup, answer: int, other: int, projector: bool) -> None:
    key = (r.name, setup.clean, setup.position, answer, other, "dla")
    dla = st.session_state.get(RESULTS, {}).get(key)
    if dla is None:
        dla = lab.attribution(model, setup, answer, other)
        _keep(key, dla)
    st.markdown(_("**Which heads and MLPs push the answer?**"))
    if isinstance(dla, str):
        st.info(dla, icon="ℹ️")
        return
    draw_.attribution_bars(dla, r.label(answer), r.label(other), projector=projector)


def draw(ctx: LensContext) -> None:
    """The texts, the answers, the patching grid and the attribution bars."""
    r = reader(ctx)
    if isinstance(r, str):
        st.info(r, icon="ℹ️")
        return
    if not ctx.projector:
        st.caption(_(CAPTION))
    if r.kind == "seq2seq":
        st.radio(_("Stack patched"), list(STACK_TITLES), format_func=lambda s: _(STACK_TITLES[s]), key=DECIDE_STACK,
                 horizontal=True, help=_("The encoder–decoder has two streams: the encoder's over the digits read "
                                         "and the decoder's over the answer so far (the same in both runs). "
                                         "Cross-attention heads patch the heads; their residual grid is the "
                                         "decoder's."))
    clean_text, corrupt_text = _texts(r)
    try:
        clean, corrupt = r.read(clean_text), r.read(corrupt_text)
    except ValueError as err:
        st.warning(str(err), icon="⌨️")
        return
    if len(clean.ids) != len(corrupt.ids):
        st.warning(_("The clean text has {clean} tokens and the corrupt text {corrupt}: patching swaps position for "
                     "position, so both need the same number. Change words for words of as many tokens (the table "
                     "shows where they part).").format(clean=len(clean.ids), corrupt=len(corrupt.ids)), icon="📏")
        draw_.token_table(clean.tokens, corrupt.tokens)
        return
    model = ctx.model
    try:
        setup = lab.prepare(model, r.kind, clean, corrupt, mask_id=r.mask_id,
                            stack=st.session_state.get(DECIDE_STACK) if r.kind == "seq2seq" else None)
    except ValueError as err:
        st.warning(str(err), icon="⌨️")
        return
    differ = [i for i, (a, b) in enumerate(zip(clean.ids, corrupt.ids, strict=True)) if a != b]
    if not differ:
        st.info(_("The two texts are the same token for token: change a word in the corrupt text."), icon="🟰")
        return
    changed = ", ".join(f"{i}: “{clean.tokens[i]}” → “{corrupt.tokens[i]}”" for i in differ[:4])
    st.caption(ngettext("{n} tokens each; they differ at position {changed}. The answer is read {where}.",
                        "{n} tokens each; they differ at positions {changed}. The answer is read {where}.",
                        len(differ[:4])).format(n=len(clean.ids), changed=changed, where=setup.read_at))
    answer, other = _answers(r, setup, model)
    if answer == other:
        st.warning(_("Pick two different answers to compare."), icon="⚖️")
        return
    _patching(r, model, setup, answer, other, ctx.projector)
    _attribution(r, model, setup, answer, other, ctx.projector)
    if ctx.projector:
        st.caption(_(CAPTION))

