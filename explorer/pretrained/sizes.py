"""A loaded pretrained model counted as the Model Builder counts its own: parameters by component, FLOPs per
token and training memory, from the model's real modules (not a preset rebuilt from published sizes)."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.i18n import _
from transformer_core.config import ViTConfig
from transformer_core.pretrained import Pretrained
from transformer_core.sizing import StepEstimate, estimate_training_step, parameter_breakdown

# pretrained family -> the Builder's kind
FAMILY_KINDS = {"gpt2": "decoder", "llama": "decoder", "qwen2": "decoder",
                "bert": "encoder", "distilbert": "encoder", "roberta": "encoder", "vit": "vit"}


@dataclass(frozen=True)
class LoadedSizes:
    """What the Model Builder's comparison shows of one loaded model."""

    title: str  # e.g. "gpt2 (loaded from models/gpt2)"
    kind: str  # the Builder's model kind: "decoder", "encoder" or "vit"
    shape: dict[str, int]  # n_layers, d_model, n_heads, d_ff, vocab_size and seq_len (image_size, patch_size)
    breakdown: dict[str, int]  # parameters per component of the loaded module; sums to the model's n_params
    estimate: StepEstimate  # one training step at the Builder's batch size and the model's longest input


def loaded_sizes(pretrained: Pretrained, *, batch_size: int, where: str) -> LoadedSizes:
    """Count a loaded pretrained model's parameters, FLOPs and training memory.

    Args:
        pretrained: the model, as :func:`~transformer_core.pretrained.load_pretrained` returns it.
        batch_size: sequences (or pictures) per training step, as the Builder's control sets it.
        where: where it was loaded from, for the title (e.g. "models/gpt2").

    Raises:
        ValueError: for a family the Builder cannot count, or a batch size below 1.
    """
    kind = FAMILY_KINDS.get(pretrained.family)
    if kind is None:
        raise ValueError(_("The Model Builder counts GPT-2, Llama, Qwen2, BERT, DistilBERT, RoBERTa and ViT models, "
                           "not {family}.").format(family=repr(pretrained.family)))
    c = pretrained.config
    shape = {"n_layers": c.n_layers, "d_model": c.d_model, "n_heads": c.n_heads, "d_ff": c.d_ff}
    if isinstance(c, ViTConfig):
        shape |= {"vocab_size": 0, "image_size": c.image_size, "patch_size": c.patch_size,
                  "seq_len": c.num_patches + 1}
    else:
        shape |= {"vocab_size": c.vocab_size, "seq_len": c.max_len}
    est = estimate_training_step(c, kind=kind, batch_size=batch_size, model=pretrained.model)
    return LoadedSizes(_("{model} (loaded from {where})").format(model=pretrained.name, where=where), kind, shape,
                       parameter_breakdown(pretrained.model), est)
