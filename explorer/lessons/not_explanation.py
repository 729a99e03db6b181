"""The experiment of the lesson "Attention is not explanation": where a model looks is not what it used.

The model is a one-layer, one-head decoder (the library's :class:`~transformer_core.models.CausalLM`) whose weights
are set by hand, not trained, so that the case is clear and the same on every machine, with no download. It agrees
a verb with its subject: after "the key to the cabinets" it says "is", after "the keys to the cabinet" "are". Its
head does what many heads of real models do: it parks most of its attention on the first token (an *attention
sink*), whose value vector carries nothing, and gives the subject a smaller share that carries the number.

The lesson reads it with the library's own tools: the attention weights, gradient × input and integrated gradients
(:func:`~transformer_core.attribution.token_attributions`), and activation patching
(:func:`~transformer_core.patching.patch_residual`). :func:`findings` measures what the lesson claims.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_core.attribution import Attribution, token_attributions
from transformer_core.config import TransformerConfig
from transformer_core.models import CausalLM
from transformer_core.patching import Patching, logit_difference, patch_residual

WORDS = ("the", "a", "key", "keys", "to", "cabinet", "cabinets", "is", "are")  # the model's whole vocabulary
SENTENCE = "the key to the cabinets"  # the curated example
ANSWER, OTHER = "is", "are"  # the answer explained, and the one it is weighed against
CHANGES = ((0, "a"), (1, "keys"), (4, "cabinet"))  # (position, new word): one word changed per patching run
IG_STEPS = 64  # integrated gradients' points; the completeness gap is then below 1e-4

# The residual stream's 8 directions, each with one job (the weights below only read and write these).
SINGULAR, PLURAL, SUBJECT_SINGULAR, SUBJECT_PLURAL, ARTICLE, SINK, OTHER_WORD, CONSTANT = range(8)


def _config() -> TransformerConfig:
    return TransformerConfig(vocab_size=len(WORDS), max_len=8, d_model=8, n_heads=1, n_layers=1, d_ff=8,
                             norm_type="rmsnorm", positional="learned", bias=False, embed_scale=False)


def agreement_model() -> CausalLM:
    """The lesson's model, in eval mode: every weight zero except those set here (the MLP adds nothing)."""
    model = CausalLM(_config()).eval()
    v = {w: i for i, w in enumerate(WORDS)}
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        rows = model.embed.tokens.weight  # (V, C): what each word is
        for word, feature in (("the", ARTICLE), ("a", ARTICLE), ("a", OTHER_WORD), ("to", OTHER_WORD),
                              ("is", OTHER_WORD), ("are", OTHER_WORD), ("key", SINGULAR), ("cabinet", SINGULAR),
                              ("keys", PLURAL), ("cabinets", PLURAL)):
            rows[v[word], feature] = 1.0
        positions = model.embed.positions.table  # (max_len, C): every position a constant, two of them salient
        positions[:, CONSTANT] = 3.0
        positions[0, SINK] = 3.0  # the first token draws most of the attention (the sink)
        positions[1, SINK] = 2.0  # the subject's place draws some
        block = model.blocks[0]
        for norm in (block.norm1, block.norm2, model.final_norm):
            norm.weight.fill_(1.0)
        attn = block.self_attn
        attn.q_proj.weight[0, CONSTANT] = 1.5  # every query asks the same: "which token is salient?"
        attn.k_proj.weight[0, SINK] = 1.5
        attn.v_proj.weight[SUBJECT_SINGULAR, SINGULAR] = 1.0  # values carry a word's number, nothing else
        attn.v_proj.weight[SUBJECT_PLURAL, PLURAL] = 1.0
        attn.out_proj.weight[SUBJECT_SINGULAR, SUBJECT_SINGULAR] = 4.0
        attn.out_proj.weight[SUBJECT_PLURAL, SUBJECT_PLURAL] = 4.0
        head = model.lm_head.weight  # (V, C): "is" reads a singular subject, "are" a plural one
        head[v["is"], SUBJECT_SINGULAR] = head[v["are"], SUBJECT_PLURAL] = 6.0
        head[v["is"], SUBJECT_PLURAL] = head[v["are"], SUBJECT_SINGULAR] = -6.0
    return model


def encode(sentence: str) -> list[int]:
    """The ids of a sentence of the model's words.

    Raises:
        ValueError: for an empty sentence, a word the model does not know, or more than 8 words.
    """
    words = sentence.split()
    unknown = [w for w in words if w not in WORDS]
    if not words or unknown or len(words) > 8:
        raise ValueError(f"The lesson's model reads up to 8 of these words: {', '.join(WORDS)}"
                         + (f" (not {', '.join(unknown)})." if unknown else "."))
    return [WORDS.index(w) for w in words]


def changed(position: int, word: str, sentence: str = SENTENCE) -> str:
    """``sentence`` with the word at ``position`` replaced by ``word``."""
    words = sentence.split()
    words[position] = word
    return " ".join(words)


def next_word(model: CausalLM, sentence: str = SENTENCE) -> dict[str, float]:
    """The model's probability of each word after ``sentence``, likeliest first."""
    with torch.no_grad():
        probs = model(torch.tensor([encode(sentence)]))[0, -1].softmax(dim=-1)  # (V,)
    order = probs.argsort(descending=True).tolist()
    return {WORDS[i]: float(probs[i]) for i in order}


def attention_map(model: CausalLM, sentence: str = SENTENCE) -> np.ndarray:
    """The head's weights ``(T, T)``: row t is where token t looks (the last row predicts the next word)."""
    with torch.no_grad():
        _, weights = model.forward_with_attention(torch.tensor([encode(sentence)]))
    return weights["decoder"][0][0, 0].numpy()


def attributions(model: CausalLM, method: str, sentence: str = SENTENCE) -> Attribution:
    """How much each word moved the logit of :data:`ANSWER` after ``sentence`` (``"grad_x_input"`` or
    ``"integrated_gradients"``)."""
    return token_attributions(model, encode(sentence), WORDS.index(ANSWER), method=method, steps=IG_STEPS)


@dataclass(frozen=True)
class Change:
    """One word of the sentence changed: the answer then, and patching the clean run back in."""

    position: int  # which word was changed (0-based)
    sentence: str  # the changed sentence
    answer: str  # the model's likeliest next word after it
    patching: Patching  # logit(is) - logit(are), with each position's residual put back from the clean sentence


def change(model: CausalLM, position: int, word: str) -> Change:
    """Change one word of :data:`SENTENCE` and patch the original back in, one position at a time."""
    corrupt = changed(position, word)
    metric = logit_difference(WORDS.index(ANSWER), WORDS.index(OTHER))
    patched = patch_residual(model, encode(SENTENCE), encode(corrupt), metric)
    return Change(position, corrupt, next(iter(next_word(model, corrupt))), patched)


@dataclass(frozen=True)
class Findings:
    """What the lesson claims, measured on its model."""

    answer: str  # the model's next word after the sentence
    most_attended: int  # the position the last token attends to most
    attention_share: float  # ...and its weight
    most_attributed: tuple[int, int]  # the position with the largest |attribution|: gradient × input, integrated
    changes: tuple[Change, ...]  # each word of CHANGES changed in turn


def findings(model: CausalLM) -> Findings:
    """Measure the lesson's example: attention's favourite, attribution's, and what changing each word does."""
    row = attention_map(model)[-1]
    tops = tuple(int(np.abs(attributions(model, m).values).argmax()) for m in ("grad_x_input",
                                                                                 "integrated_gradients"))
    return Findings(next(iter(next_word(model))), int(row.argmax()), float(row.max()), tops,
                    tuple(change(model, p, w) for p, w in CHANGES))
