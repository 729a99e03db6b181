"""Every weight layout seen in published checkpoints loads and gives transformers' outputs and attention."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.pretrained.real_layouts import ENCODERS, FAMILIES, LAYOUTS, POSITIONS, VOCAB, applies, write_layout
from transformer_core.pretrained import inspect_folder
from transformer_core.pretrained.loader import build_model, read_config

LOGITS_ATOL, ATTN_ATOL = 1e-4, 1e-5  # today's tolerances (test_equivalence.py)
CASES = [(f, layout) for f in FAMILIES for layout in LAYOUTS if applies(f, layout)]


@pytest.mark.parametrize("family, layout", CASES, ids=[f"{f}-{lay}" for f, lay in CASES])
def test_layout_loads_and_matches_transformers(tmp_path, family, layout):
    hf = write_layout(family, layout, tmp_path)
    ours = build_model(tmp_path, read_config(tmp_path))
    ids = torch.randint(3, VOCAB, (2, POSITIONS - 4), generator=torch.Generator().manual_seed(5))
    valid = torch.ones_like(ids, dtype=torch.bool)
    valid[1, -5:] = False  # the second text is shorter: padded on the right
    if family == "roberta":
        ids[~valid] = hf.config.pad_token_id  # RoBERTa numbers positions by the padding it sees
    with torch.no_grad():
        ref = hf(ids, attention_mask=valid.long(), output_attentions=True)
        out, attention = ours.forward_with_attention(ids, valid=valid)
    expected = ref.logits if hasattr(ref, "logits") else ref.last_hidden_state
    torch.testing.assert_close(out[valid], expected[valid], atol=LOGITS_ATOL, rtol=0)
    (weights,) = attention.values()
    for mine, theirs in zip(weights, ref.attentions, strict=True):
        keys = valid[1]
        torch.testing.assert_close(mine[0], theirs[0], atol=ATTN_ATOL, rtol=0)
        torch.testing.assert_close(mine[1][:, keys][:, :, keys], theirs[1][:, keys][:, :, keys], atol=ATTN_ATOL,
                                   rtol=0)
    # RoBERTa's rows before position 0 (padding_idx + 1 of them) and BertModel's pooler are not used.
    offset = (hf.config.pad_token_id + 1) * hf.config.hidden_size if family == "roberta" else 0
    used = sum(p.numel() for name, p in hf.named_parameters() if not name.startswith("pooler."))
    assert inspect_folder(tmp_path).n_params == used - offset


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f][3]])
def test_a_tied_copy_that_differs_is_refused(tmp_path, family):
    write_layout(family, "tied-twice", tmp_path)
    path = tmp_path / "model.safetensors"
    tensors = load_file(path)
    copy = next(iter(FAMILIES[family][3]))
    tensors[copy] = tensors[copy] + 1
    save_file(tensors, path)
    inspect_folder(tmp_path)  # the headers alone agree
    with pytest.raises(ValueError, match=f"stores the tied weight .* twice, and its copy {copy} differs"):
        build_model(tmp_path, read_config(tmp_path))


@pytest.mark.parametrize("family", ENCODERS)
def test_an_integer_tensor_the_model_reads_is_refused(tmp_path, family):
    write_layout(family, "today", tmp_path)
    path = tmp_path / "model.safetensors"
    tensors = load_file(path)
    name = next(n for n in tensors if n.endswith("word_embeddings.weight"))
    tensors[name] = tensors[name].to(torch.int64)
    save_file(tensors, path)
    with pytest.raises(ValueError, match=rf"must be floating point .* stores {name} \(I64\)"):
        inspect_folder(tmp_path)


def _forge(path, name, **entry):
    """Rewrite one header entry of a safetensors file, keeping its data."""
    import json
    import struct

    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header[name].update(entry)
    text = json.dumps(header).encode()
    text += b" " * (size - len(text)) if len(text) <= size else b""
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + size:])


@pytest.mark.parametrize("entry, message", [
    ({"dtype": "I4"}, "stores 'h.0.attn.bias' as I4, which is not a safetensors dtype this loader knows"),
    ({"data_offsets": [-4, 0], "shape": [1]}, "the data offsets of 'h.0.attn.bias' are not valid"),
    ({"shape": [1, 1, 3, 3]}, "the size of 'h.0.attn.bias' does not match its shape"),
])
def test_every_header_entry_is_validated_even_of_buffers_the_model_skips(tmp_path, entry, message):
    write_layout("gpt2", "no-prefix", tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["h.0.attn.bias"] = torch.ones(1, 1, POSITIONS, POSITIONS, dtype=torch.bool)
    save_file(tensors, tmp_path / "model.safetensors")
    inspect_folder(tmp_path)  # a valid bool mask is skipped
    _forge(tmp_path / "model.safetensors", "h.0.attn.bias", **entry)
    with pytest.raises(ValueError, match=message):
        inspect_folder(tmp_path)
