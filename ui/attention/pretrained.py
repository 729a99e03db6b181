"""The Attention Lab's *Pretrained* source: a published decoder (GPT-2, a Llama-family model) or text encoder (BERT,
DistilBERT, RoBERTa), its tokens, attention and predictions (or, for a sentence-embedding model, how alike a few
lines are)."""

from __future__ import annotations

import streamlit as st

from explorer.i18n import N_, _, ngettext, num
from explorer.lab.kv_groups import kv_heads_of
from explorer.lab.text_input import MAX_TOKENS
from explorer.pretrained.lab import (
    CAUSAL_FAMILIES,
    ENCODER_FAMILIES,
    MODERN_FAMILIES,
    Guess,
    PretrainedInput,
    block_layers,
    encode,
    mask_fills,
    next_tokens,
)
from explorer.pretrained.similarity import embeds_sentences
from transformer_core.pretrained import Pretrained
from ui.attention.keys import LAYER, PRETRAINED_MODEL, TEMPERATURE, TOP_K
from ui.attention.lab_run import LabRun, _arrays
from ui.attention.labels import PRETRAINED_MASKS, shown_mask
from ui.attention.similarity import similarity_section
from ui.common.pretrained import cache_key, load_shared, models_on_offer, pick_model, probability_table

TEXT_FAMILIES = (*CAUSAL_FAMILIES, *ENCODER_FAMILIES)  # the families the lab takes apart
TITLES = {"gpt2": "GPT-2", "llama": "Llama", "qwen2": "Qwen2", "bert": "BERT", "distilbert": "DistilBERT",
          "roberta": "RoBERTa"}
# English, as runs are cached for every visitor; shown through ui.attention.labels.shown_mask
MASKS = {**{f: PRETRAINED_MASKS["causal"].format(model=TITLES[f]) for f in CAUSAL_FAMILIES},
         **{f: PRETRAINED_MASKS["none"].format(model=TITLES[f]) for f in ENCODER_FAMILIES}}
# layer 1's input: tokens, positions and (BERT, RoBERTa) segments; a Llama-family model adds no positions (RoPE)
EMBEDDINGS = {"gpt2": "E + P", "bert": r"\mathrm{LN}(E + P + S)", "distilbert": r"\mathrm{LN}(E + P)",
              "roberta": r"\mathrm{LN}(E + P + S)", **{f: "E" for f in MODERN_FAMILIES}}
EMBEDDING_NOTES = {**{f: N_("E = token embeddings; positions enter inside attention, as rotations of Q and K (RoPE)")
                      for f in MODERN_FAMILIES},
                   "gpt2": N_("E = token embeddings, P = learned positions"),
                   "bert": N_("E = token embeddings, P = learned positions, S = segment (sentence A)"),
                   "distilbert": N_("E = token embeddings, P = positions (DistilBERT has no segments)"),
                   "roberta": N_("E = token embeddings, P = learned positions (from row padding_idx + 1), S = its "
                                 "one segment")}


def pretrained_model() -> Pretrained | None:
    """The menu of text models and the chosen one, loaded once per server; ``None`` when there is none."""
    offer = pick_model(PRETRAINED_MODEL, TEXT_FAMILIES)
    return None if offer is None else load_shared(offer, models_on_offer().budget_bytes)


def describe(pre: Pretrained) -> str:
    """One caption line: the model, its size and how it reads the text."""
    c = pre.config
    kv = kv_heads_of(c)
    heads = (_("{n} query heads sharing {kv} K/V heads").format(n=num(c.n_heads), kv=num(kv)) if kv < c.n_heads
             else ngettext("{n} head", "{n} heads", c.n_heads).format(n=num(c.n_heads)))
    layers = ngettext("{n} layer", "{n} layers", c.n_layers).format(n=num(c.n_layers))
    modern = " " + _("RMSNorm, SwiGLU feed-forward, rotary positions.") if pre.family in MODERN_FAMILIES else ""
    reads = (_("Your text is cut into the model's own subword tokens (␣ marks a leading space).")
             if pre.family in CAUSAL_FAMILIES else _("Your text is cut into the model's own subword tokens."))
    return _("Weights of **{model}** ({architecture}): {params} parameters, d_model {d_model}, {heads}, {layers}, "
             "mask {mask}.").format(model=pre.name, architecture=pre.architecture, params=num(pre.n_params),
                                    d_model=c.d_model, heads=heads, layers=layers,
                                    mask=shown_mask(MASKS[pre.family].split(" (")[0])) + modern + " " + reads


@st.cache_data(max_entries=6, show_spinner=False)
def run_pretrained(_pre: Pretrained, name: str, text: str, layer: int) -> LabRun:
    """The model on ``text``: every layer's weights and every intermediate of ``layer`` (0-based).

    ``name`` is the model's :func:`ui.common.pretrained.cache_key` (the model itself is not hashed).
    """
    inp = encode(_pre, text, MAX_TOKENS)
    c = _pre.config
    shape = dict(kv_heads=kv_heads_of(c), rms_norm=getattr(c, "norm_type", "layernorm") == "rmsnorm")
    rotary = c.positional == "rope"
    if inp.empty:
        return LabRun((), [], c.n_heads, c.d_model, c.pre_norm, MASKS[_pre.family], rotary, _pre.name,
                      notices=list(inp.notices), **shape)
    weights, chosen = block_layers(_pre, inp, layer)
    at = max(0, min(layer, len(weights) - 1))
    steps = [_arrays(chosen.attention) if i == at else {"weights": w.float().numpy()} for i, w in enumerate(weights)]
    mlp = [_arrays(chosen.mlp) if i == at else {} for i in range(len(weights))]
    return LabRun(inp.tokens, steps, c.n_heads, c.d_model, c.pre_norm, MASKS[_pre.family], rotary, _pre.name,
                  notices=list(inp.notices), embedding=EMBEDDINGS[_pre.family],
                  embedding_note=EMBEDDING_NOTES[_pre.family], mlp=mlp, **shape)


def chosen_layer() -> int:
    """The layer the picker holds (0-based), read before the picker is drawn."""
    return int(st.session_state.get(LAYER, 1)) - 1


def predictions(pre: Pretrained, text: str) -> None:
    """A decoder (GPT-2, a Llama-family model): the next-token distribution for the text. An encoder: the best
    fill-ins for each mask token, or, without a masked-LM head (a sentence-embedding model), how alike a few
    lines are."""
    if embeds_sentences(pre):
        similarity_section(pre, cache_key(pre))
        return
    inp = encode(pre, text, MAX_TOKENS)
    if inp.empty:
        return
    if pre.family in CAUSAL_FAMILIES:
        _next_token_table(pre, inp)
    else:
        _fill_ins(pre, inp)


def _table(guesses: list[Guess]) -> None:
    probability_table([g.token for g in guesses], [g.probability for g in guesses], label=_("Token"),
                      help=_("␣ marks a leading space."))


def _next_token_table(pre: Pretrained, inp: PretrainedInput) -> None:
    st.subheader(_("What comes next?"))
    left, right = st.columns(2)
    with left:
        k = st.slider(_("Top k"), 1, 20, key=TOP_K,
                      help=_("How many of the most likely next tokens to list."))
    with right:
        temperature = st.slider(_("Temperature"), 0.1, 2.0, step=0.1, key=TEMPERATURE,
                                help=_("Divides the scores before softmax: below 1 sharpens the distribution "
                                       "(the top token gets more), above 1 flattens it."))
    st.caption(_("{model}'s probabilities for the token after “{token}”: softmax(logits / {t}).").format(
        model=pre.name, token=inp.tokens[-1], t=f"{temperature:g}"))
    _table(next_tokens(pre, inp, k=k, temperature=temperature))


def _fill_ins(pre: Pretrained, inp: PretrainedInput) -> None:
    st.subheader(_("Fill in the blanks"))
    mask = pre.tokenizer.mask_token or "[MASK]"
    fills = mask_fills(pre, inp)
    if not fills:
        if getattr(pre.model, "head", None) is not None:
            text = _("Put **{mask}** in your text (e.g. “the cat sat on the {mask}”) to see what {model} would "
                     "write there.")
        else:
            text = _("Put **{mask}** in your text (e.g. “the cat sat on the {mask}”) to see what {model} would "
                     "write there (this model has no masked-LM head).")
        st.info(text.format(mask=mask, model=TITLES[pre.family]), icon="🕳️")
        return
    for position, guesses in fills:
        st.caption(_("Best fill-ins for {mask} at position {position}:").format(mask=mask, position=position))
        _table(guesses)
