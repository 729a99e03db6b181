"""The same code on a CUDA GPU: every model kind, both attention paths, training, cached generation, switching
heads off and the pretrained loaders give on the GPU what they give on the CPU (and what transformers gives on the
GPU). Skipped where no CUDA device is present, as on the CI machine; run with ``pytest tests/core/test_on_cuda.py``
on a machine with one."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from transformer_core import CausalLM, Seq2SeqTransformer, TransformerConfig, VisionTransformer, ViTConfig
from transformer_core.generation import generate
from transformer_core.interventions import ablate_heads
from transformer_core.optim import AdamW
from transformer_core.positional import kinds as positional_kinds
from transformer_core.tasks import get_task
from transformer_core.training import Trainer, default_train_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

ATOL = 1e-4  # float32 on both devices, TF32 off: only the order of the sums differs
TINY = TransformerConfig(vocab_size=23, max_len=16, d_model=32, n_heads=4, n_layers=2, d_ff=64)
LLAMA = replace(TINY, n_kv_heads=2, norm_type="rmsnorm", feed_forward="swiglu", positional="rope", bias=False,
                embed_scale=False)


@pytest.fixture(autouse=True)
def _exact_float32():
    """Matrix products in true float32 (TF32 would round inputs to 10 bits of mantissa on Ampere and later)."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _pair(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The model on the CPU and an exact copy of it on the GPU, both in eval mode."""
    model = model.eval()
    gpu = type(model)(model.config).cuda().eval()
    gpu.load_state_dict(model.state_dict())
    return model, gpu


def _close_nested(cpu, gpu) -> None:
    if isinstance(cpu, torch.Tensor):
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, atol=ATOL, rtol=0)
    elif isinstance(cpu, dict):
        for key in cpu:
            _close_nested(cpu[key], gpu[key])
    elif isinstance(cpu, list | tuple):
        assert len(cpu) == len(gpu)
        for a, b in zip(cpu, gpu, strict=True):
            _close_nested(a, b)


@pytest.mark.parametrize("positional", positional_kinds())
def test_seq2seq_logits_and_attention_equal_the_cpu(positional):
    torch.manual_seed(0)
    cpu, gpu = _pair(Seq2SeqTransformer(replace(TINY, positional=positional)))
    src, tgt = torch.randint(1, 23, (3, 12)), torch.randint(1, 23, (3, 9))
    with torch.no_grad():
        expected = cpu.forward_with_attention(src, tgt)
        got = gpu.forward_with_attention(src.cuda(), tgt.cuda())
        fused = gpu(src.cuda(), tgt.cuda())  # the fused kernel, no weights asked for
    _close_nested(expected, got)
    torch.testing.assert_close(fused.cpu(), expected[0], atol=ATOL, rtol=0)


@pytest.mark.parametrize("config", [replace(TINY, positional="rope"), replace(TINY, positional="alibi"), LLAMA],
                         ids=["gpt-rope", "gpt-alibi", "llama-gqa"])
def test_causal_lm_equals_the_cpu_and_its_cached_generation_equals_a_full_forward(config):
    torch.manual_seed(1)
    cpu, gpu = _pair(CausalLM(config))
    ids = torch.randint(0, 23, (2, 14))
    with torch.no_grad():
        _close_nested(cpu.forward_with_attention(ids), gpu.forward_with_attention(ids.cuda()))
    prompt = ids[:1, :5].cuda()  # (1, 5)
    steps = list(generate(gpu, prompt, 8))
    tokens = torch.cat([prompt[0], torch.tensor([s.token_id for s in steps], device="cuda")])
    with torch.no_grad():
        full, weights = gpu.forward_with_attention(tokens[None])
    for step in steps:  # each cached step is the full forward's row at its position
        torch.testing.assert_close(step.logits, full[0, step.position - 1], atol=ATOL, rtol=0)
        for layer, row in enumerate(step.attention):
            expected = weights["decoder"][layer][0, :, step.position - 1, : step.position]
            torch.testing.assert_close(row, expected, atol=ATOL, rtol=0)
    cpu_tokens = [s.token_id for s in generate(cpu, prompt.cpu(), 8)]
    assert [s.token_id for s in steps] == cpu_tokens  # greedy: the same text on both devices


def test_vit_equals_the_cpu():
    torch.manual_seed(2)
    cpu, gpu = _pair(VisionTransformer(ViTConfig(image_size=16, patch_size=4, d_model=32, n_heads=4, n_layers=2,
                                                 d_ff=64, num_classes=5)))
    images = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        _close_nested(cpu.forward_with_attention(images), gpu.forward_with_attention(images.cuda()))


def test_switching_heads_off_gives_the_same_logits_on_both_devices():
    torch.manual_seed(3)
    cpu, gpu = _pair(CausalLM(LLAMA))
    ids = torch.randint(0, 23, (2, 10))
    heads = [("decoder", 0, 1), ("decoder", 1, 3)]
    with torch.no_grad(), ablate_heads(cpu, heads), ablate_heads(gpu, heads):
        expected, got = cpu(ids), gpu(ids.cuda())
    torch.testing.assert_close(got.cpu(), expected, atol=ATOL, rtol=0)
    with torch.no_grad():
        assert not torch.allclose(gpu(ids.cuda()).cpu(), expected, atol=1e-3)  # they were really off


def test_adamw_equals_torch_on_the_gpu():
    torch.manual_seed(4)
    ours_params = [torch.randn(7, 5, device="cuda", requires_grad=True) for _ in range(3)]
    ref_params = [p.detach().clone().requires_grad_(True) for p in ours_params]
    ours = AdamW([{"params": ours_params, "weight_decay": 0.1}], lr=1e-2)
    ref = torch.optim.AdamW(ref_params, lr=1e-2, weight_decay=0.1)
    for _ in range(5):
        for params, opt in ((ours_params, ours), (ref_params, ref)):
            opt.zero_grad()
            sum((p**2).sum() for p in params).backward()
            opt.step()
    for a, b in zip(ours_params, ref_params, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


@pytest.mark.parametrize("task_name", ["reverse", "copy", "sort"])
def test_a_run_trains_on_the_gpu(task_name):
    task = get_task(task_name)
    trainer = Trainer(task, train_config=default_train_config(task, device="cuda", steps=120, seed=5))
    assert next(trainer.model.parameters()).device.type == "cuda"
    rows = [trainer.train_step() for _ in range(120)]
    losses = [r["loss"] for r in rows if r]
    assert all(torch.isfinite(torch.tensor(losses))) and trainer.status == "done"
    assert sum(losses[-10:]) / 10 < 0.7 * sum(losses[:10]) / 10  # it learns
    assert trainer.snapshots and all(s.step <= 120 for s in trainer.snapshots)


def test_pretrained_folders_load_on_the_gpu_and_equal_transformers_there(tmp_path):
    from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, vit_folder
    from transformer_core.pretrained import load_pretrained

    made = {"gpt2": gpt2_folder(tmp_path / "gpt2", layers=2, heads=2),
            "llama": llama_folder(tmp_path / "llama", heads=6, kv_heads=2, width=36),
            "qwen2": llama_folder(tmp_path / "qwen2", qwen2=True, heads=4, kv_heads=1, width=32)}
    bert, vit = bert_folder(tmp_path / "bert"), vit_folder(tmp_path / "vit")
    ids = torch.randint(0, 40, (2, 12), generator=torch.Generator().manual_seed(6)).cuda()
    for name, hf in made.items():
        pre = load_pretrained(tmp_path / name, device="cuda")
        hf = hf.cuda().eval()
        with torch.no_grad():
            ref = hf(ids, output_attentions=True)
            logits, attention = pre.model.forward_with_attention(ids)
        assert logits.device.type == "cuda" and ref.logits.abs().sum() > 0, name
        torch.testing.assert_close(logits, ref.logits, atol=ATOL, rtol=0, msg=name)
        for mine, theirs in zip(attention["decoder"], ref.attentions, strict=True):
            torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0, msg=name)
    for name, hf, inputs in (("bert", bert, {"input_ids": ids % 20}),
                             ("vit", vit, {"pixel_values": torch.randn(2, 3, 32, 32, device="cuda")})):
        pre = load_pretrained(tmp_path / name, device="cuda")
        assert next(pre.model.parameters()).device.type == "cuda", name
        hf = hf.cuda().eval()
        with torch.no_grad():
            ref = hf(**inputs, output_attentions=True)
            _, attention = pre.model.forward_with_attention(next(iter(inputs.values())))
        for mine, theirs in zip(attention["encoder"], ref.attentions, strict=True):
            torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0, msg=name)


@pytest.mark.parametrize("config", [TINY, LLAMA], ids=["gpt", "llama"])
def test_attribution_patching_logit_attribution_and_neurons_equal_the_cpu(config):
    from transformer_core.attribution import token_attributions
    from transformer_core.neurons import neuron_activations
    from transformer_core.patching import direct_logit_attribution, logit_difference, patch_heads, patch_residual

    torch.manual_seed(3)
    cpu, gpu = _pair(CausalLM(config))
    clean, corrupt = [3, 7, 1, 9, 4, 2], [3, 7, 5, 9, 4, 2]
    for method in ("grad_x_input", "integrated_gradients"):
        a, b = (token_attributions(m, clean, 5, method=method, steps=8) for m in (cpu, gpu))
        assert abs(a.values).sum() > 0, method  # the oracle is not flat
        torch.testing.assert_close(torch.as_tensor(b.values), torch.as_tensor(a.values), atol=ATOL, rtol=0, msg=method)
    metric = logit_difference(5, 6)
    for patch in (patch_residual, patch_heads):
        a, b = (patch(m, clean, corrupt, metric) for m in (cpu, gpu))
        assert a.clean != a.corrupt
        torch.testing.assert_close(torch.as_tensor(b.patched), torch.as_tensor(a.patched), atol=ATOL, rtol=0)
    a, b = (direct_logit_attribution(m, clean, 5, 6) for m in (cpu, gpu))
    torch.testing.assert_close(torch.as_tensor(b.heads), torch.as_tensor(a.heads), atol=ATOL, rtol=0)
    assert abs(float(b.total) - float(a.total)) < ATOL
    a, b = (neuron_activations(m, clean) for m in (cpu, gpu))
    assert a.abs().sum() > 0
    torch.testing.assert_close(b.cpu(), a, atol=ATOL, rtol=0)
