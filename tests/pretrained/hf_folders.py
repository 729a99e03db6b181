"""Random-initialised Hugging Face models saved as model folders, for the pretrained loader's tests.

``transformers`` is the test oracle only; nothing downloads (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "attention", "is", "all", "you", "need"]


def gpt2_folder(path: Path, *, layers: int = 2, heads: int = 2, width: int = 16, vocab: int = 40,
                positions: int = 24, tied: bool = True, seed: int = 0):
    """A random GPT2LMHeadModel saved with a small byte-level BPE tokenizer; returns the HF model."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(n_layer=layers, n_head=heads, n_embd=width, vocab_size=vocab,
                                     n_positions=positions, tie_word_embeddings=tied, bos_token_id=0,
                                     eos_token_id=0, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(path)
    _bpe_tokenizer(vocab).save(str(path / "tokenizer.json"))
    return model


def llama_folder(path: Path, *, qwen2: bool = False, layers: int = 2, heads: int = 4, kv_heads: int = 2,
                 width: int = 32, ff: int = 48, vocab: int = 40, positions: int = 32, tied: bool = False,
                 rope: dict | None = None, seed: int = 0):
    """A random LlamaForCausalLM (or Qwen2ForCausalLM) saved with a small byte-level BPE tokenizer; returns it.

    Every weight is drawn anew, larger than transformers' init and with non-trivial norm scales and Q/K/V biases
    (zeros at init), so that attention is far from uniform and every tensor's mapping is tested.
    """
    torch.manual_seed(seed)
    settings = dict(vocab_size=vocab, hidden_size=width, intermediate_size=ff, num_hidden_layers=layers,
                    num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=positions,
                    tie_word_embeddings=tied, rms_norm_eps=1e-5, bos_token_id=0, eos_token_id=0,
                    rope_parameters=rope or {"rope_type": "default", "rope_theta": 500.0},
                    attn_implementation="eager")
    config_class, model_class = ((transformers.Qwen2Config, transformers.Qwen2ForCausalLM) if qwen2 else
                                 (transformers.LlamaConfig, transformers.LlamaForCausalLM))
    model = model_class(config_class(**settings)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(1.0 if name.endswith("norm.weight") else 0.0, 0.3 if p.dim() == 2 else 0.2)
    model.save_pretrained(path)
    _bpe_tokenizer(vocab).save(str(path / "tokenizer.json"))
    return model


def _bpe_tokenizer(vocab: int) -> Tokenizer:
    from tokenizers import decoders, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator([" ".join(WORDS)] * 4, trainer)
    assert tok.get_vocab_size() <= vocab, "the test model's vocabulary must hold every token"
    return tok


def bert_folder(path: Path, *, layers: int = 2, heads: int = 2, width: int = 16, ff: int = 32,
                positions: int = 24, segments: int = 2, mlm: bool = True, seed: int = 0):
    """A random BertForMaskedLM (or BertModel) saved with a WordLevel tokenizer; returns the HF model."""
    torch.manual_seed(seed)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    config = transformers.BertConfig(num_hidden_layers=layers, num_attention_heads=heads, hidden_size=width,
                                     intermediate_size=ff, vocab_size=len(vocab) + 3,
                                     max_position_embeddings=positions, type_vocab_size=segments,
                                     attn_implementation="eager")
    cls = transformers.BertForMaskedLM if mlm else transformers.BertModel
    model = cls(config).eval()
    model.save_pretrained(path)
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.save(str(path / "tokenizer.json"))
    return model


def vit_folder(path: Path, *, layers: int = 2, heads: int = 2, width: int = 16, ff: int = 32, image: int = 32,
               patch: int = 8, classes: int = 5, preprocessor: dict | None = None, seed: int = 0):
    """A random ViTForImageClassification saved with its preprocessor_config.json; returns the HF model."""
    torch.manual_seed(seed)
    labels = {i: f"thing {i}" for i in range(classes)}
    config = transformers.ViTConfig(num_hidden_layers=layers, num_attention_heads=heads, hidden_size=width,
                                    intermediate_size=ff, image_size=image, patch_size=patch, id2label=labels,
                                    label2id={v: k for k, v in labels.items()}, attn_implementation="eager")
    model = transformers.ViTForImageClassification(config).eval()
    model.save_pretrained(path)
    settings = preprocessor or {
        "do_resize": True, "size": {"height": image, "width": image}, "resample": 2, "do_rescale": True,
        "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.485, 0.456, 0.406],
        "image_std": [0.229, 0.224, 0.225], "image_processor_type": "ViTImageProcessor",
    }
    (path / "preprocessor_config.json").write_text(json.dumps(settings))
    return model


def bad_folders(root: Path) -> dict[str, str]:
    """Four broken model folders inside ``root``; returns folder name -> a phrase of the reason it is refused."""
    gpt2_folder(root / "pickle-only")
    weights = (root / "pickle-only" / "model.safetensors")
    weights.rename(weights.with_name("pytorch_model.bin"))
    gpt2_folder(root / "truncated")
    path = root / "truncated" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    gpt2_folder(root / "unsupported")
    _edit_config(root / "unsupported", model_type="t5")
    gpt2_folder(root / "oversized")
    _edit_config(root / "oversized", n_layer=100_000)
    return {"pickle-only": "only as pickles", "truncated": "truncated", "unsupported": "'t5' is not supported",
            "oversized": "describes 100,000 layers"}


def _edit_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def mark_special_tokens(folder: Path) -> None:
    """Make BERT's [PAD], [UNK], [CLS], [SEP] and [MASK] special tokens, as published BERT tokenizers have them."""
    path = folder / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.save(str(path))
