"""The Attention Lab's *Pretrained* source: a published decoder (GPT-2, a Llama-family model) or text encoder (BERT,
DistilBERT, RoBERTa), its tokens, attention and predictions (or, for a sentence-embedding model, how alike a few
lines are)."""

from __future__ import annotations

import streamlit as st

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
from ui.attention.controls import LAYER, PRETRAINED_MODEL, TEMPERATURE, TOP_K, LabRun, _arrays
from ui.attention.similarity import similarity_section
from ui.common.pretrained import cache_key, load_shared, models_on_offer, pick_model, probability_table

TEXT_FAMILIES = (*CAUSAL_FAMILIES, *ENCODER_FAMILIES)  # the families the lab takes apart
TITLES = {"gpt2": "GPT-2", "llama": "Llama", "qwen2": "Qwen2", "bert": "BERT", "distilbert": "DistilBERT",
          "roberta": "RoBERTa"}
MASKS = {**{f: f"causal ({TITLES[f]} reads left to right)" for f in CAUSAL_FAMILIES},
         **{f: f"none ({TITLES[f]} reads both ways)" for f in ENCODER_FAMILIES}}
# layer 1's input: tokens, positions and (BERT, RoBERTa) segments; a Llama-family model adds no positions (RoPE)
EMBEDDINGS = {"gpt2": "E + P", "bert": r"\mathrm{LN}(E + P + S)", "distilbert": r"\mathrm{LN}(E + P)",
              "roberta": r"\mathrm{LN}(E + P + S)", **{f: "E" for f in MODERN_FAMILIES}}
EMBEDDING_NOTES = {**{f: "E = token embeddings; positions enter inside attention, as rotations of Q and K (RoPE)"
                      for f in MODERN_FAMILIES},
                   "gpt2": "E = token embeddings, P = learned positions",
                   "bert": "E = token embeddings, P = learned positions, S = segment (sentence A)",
                   "distilbert": "E = token embeddings, P = positions (DistilBERT has no segments)",
                   "roberta": "E = token embeddings, P = learned positions (from row padding_idx + 1), S = its one "
                              "segment"}


def pretrained_model() -> Pretrained | None:
    """The menu of text models and the chosen one, loaded once per server; ``None`` when there is none."""
    offer = pick_model(PRETRAINED_MODEL, TEXT_FAMILIES)
    return None if offer is None else load_shared(offer, models_on_offer().budget_bytes)


def describe(pre: Pretrained) -> str:
    """One caption line: the model, its size and how it reads the text."""
    c = pre.config
    kv = kv_heads_of(c)
    heads = f"{c.n_heads} query heads sharing {kv} K/V heads" if kv < c.n_heads else f"{c.n_heads} heads"
    modern = " RMSNorm, SwiGLU feed-forward, rotary positions." if pre.family in MODERN_FAMILIES else ""
    return (f"Weights of **{pre.name}** ({pre.architecture}): {pre.n_params:,} parameters, d_model {c.d_model}, "
            f"{heads}, {c.n_layers} layers, mask {MASKS[pre.family].split(' (')[0]}.{modern} Your text is cut into "
            "the model's own subword tokens"
            + (" (␣ marks a leading space)." if pre.family in CAUSAL_FAMILIES else "."))


@st.cache_data(max_entries=6, show_spinner="Running the model…")
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
    probability_table([g.token for g in guesses], [g.probability for g in guesses], label="Token",
                      help="␣ marks a leading space.")


def _next_token_table(pre: Pretrained, inp: PretrainedInput) -> None:
    st.subheader("What comes next?")
    left, right = st.columns(2)
    with left:
        k = st.slider("Top k", 1, 20, key=TOP_K,
                      help="How many of the most likely next tokens to list.")
    with right:
        temperature = st.slider("Temperature", 0.1, 2.0, step=0.1, key=TEMPERATURE,
                                help="Divides the scores before softmax: below 1 sharpens the distribution "
                                     "(the top token gets more), above 1 flattens it.")
    st.caption(f"{pre.name}'s probabilities for the token after “{inp.tokens[-1]}”: softmax(logits / {temperature:g}).")
    _table(next_tokens(pre, inp, k=k, temperature=temperature))


def _fill_ins(pre: Pretrained, inp: PretrainedInput) -> None:
    st.subheader("Fill in the blanks")
    mask = pre.tokenizer.mask_token or "[MASK]"
    fills = mask_fills(pre, inp)
    if not fills:
        why = "" if getattr(pre.model, "head", None) is not None else " (this model has no masked-LM head)"
        st.info(f"Put **{mask}** in your text (e.g. “the cat sat on the {mask}”) to see what "
                f"{TITLES[pre.family]} would write there{why}.", icon="🕳️")
        return
    for position, guesses in fills:
        st.caption(f"Best fill-ins for {mask} at position {position}:")
        _table(guesses)
