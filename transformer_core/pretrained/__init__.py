"""Published GPT-2, Llama, Qwen2, BERT, DistilBERT, RoBERTa and ViT models running on transformer_core's own modules.

``load_pretrained("models/gpt2")`` (a folder in the Hugging Face layout) or ``load_pretrained("gpt2")`` (a Hub
model id, cache first) gives a :class:`Pretrained` whose ``model.forward_with_attention(x)`` returns
``(logits, attention)`` like every model of this package. ``python -m transformer_core.pretrained`` downloads
models and describes model folders.
"""

from .folders import FolderScan, ModelInfo, inspect_folder, list_cached_models, list_model_folders, models_dir
from .hub import HubError
from .images import ImagePreprocessor
from .loader import PRETRAINED_FAMILIES, Pretrained, check_budget, load_pretrained, read_config, read_spec
from .pooling import Pooling, read_pooling
from .tokenizer import Encoded, TextTokenizer

__all__ = [
    "PRETRAINED_FAMILIES", "Encoded", "FolderScan", "HubError", "ImagePreprocessor", "ModelInfo", "Pooling",
    "Pretrained", "TextTokenizer", "check_budget", "inspect_folder", "list_cached_models", "list_model_folders",
    "load_pretrained", "models_dir", "read_config", "read_pooling", "read_spec",
]
