"""What every second-lens view is given: the model the Lab shows, bound to the text, and what the page drew."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_core.pretrained import Pretrained
from ui.attention.head_switch import Shown
from ui.attention.lab_run import LabRun
from ui.common import state


@dataclass(frozen=True)
class LensContext:
    """The page's model and text, as a view reads them (never changes them: the model may be shared)."""

    shown: Shown  # the model bound to the text: its Subject (model, how its output is read), ids, token labels
    pre: Pretrained | None  # the pretrained model when one runs (its tokenizer reads texts a view types)
    trained: state.TrainedModel | None  # the Live Training model when one runs
    run: LabRun  # the attention the page drew: every layer's weights, for the attention row beside a lens
    text: str  # the text in the page's box
    layer: int  # the layer the page shows, 0-based
    head: int  # the head the page shows, 0-based
    projector: bool  # projector mode: the picture first, compact

    @property
    def model(self):
        """The shown model (``torch.nn.Module``), only read."""
        return self.shown.subject.model
