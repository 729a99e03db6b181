"""A neuron's top sentences are the argmax of the library's activations over the corpus, sentence by sentence."""

from __future__ import annotations

import pytest
import torch

from explorer.lab import neuron_corpus as nc
from explorer.lab.internals import build_lab_encoder
from explorer.lab.text_input import SENTENCE_BUCKETS, tokenize
from tests.pretrained.hf_folders import gpt2_folder
from transformer_core import CausalLM, Seq2SeqTransformer, TransformerConfig
from transformer_core.neurons import neuron_activations
from transformer_core.pretrained import load_pretrained


def _words(text: str):
    lab = tokenize(text, "sentence")
    return None if lab.empty else (lab.ids, lab.tokens)


def _brute_force(model, read, sentences, layer: int, neuron: int) -> list[tuple[float, int, int]]:
    """(score, sentence, position) for every readable sentence, highest first, straight from the library."""
    scores = []
    for i, text in enumerate(sentences):
        got = read(text)
        if got is None:
            continue
        acts = neuron_activations(model, list(got[0]))[layer, :, neuron]  # (T,)
        scores.append((float(acts.max()), i, int(acts.argmax())))
    return sorted(scores, reverse=True)


def test_corpus_is_shipped_with_its_licence() -> None:
    sentences = nc.corpus_sentences()
    assert 200 <= len(sentences) <= 500 and len(set(sentences)) == len(sentences)
    assert "public domain" in (nc.CORPUS.parent / "README.md").read_text().lower()


@pytest.mark.parametrize("layer", [0, 1])
def test_top_sentences_are_the_argmax_of_the_library_on_a_random_encoder(layer: int) -> None:
    config = TransformerConfig(vocab_size=SENTENCE_BUCKETS + 1, max_len=64, d_model=16, n_heads=2, n_layers=2,
                               d_ff=32, pad_id=0)
    model = build_lab_encoder(config, seed=1)
    sentences = nc.corpus_sentences()[:40]
    seen = []
    scan = nc.scan_corpus(model, _words, sentences=sentences, top=5, progress=lambda d, n: seen.append((d, n)))
    assert seen[-1] == (40, 40) and len(seen) == 3  # one report per chunk of 16
    assert scan.values.shape == (2, 32, 5) and scan.read == 40 and scan.skipped == 0
    for neuron in (0, 7, 31):
        expected = _brute_force(model, _words, sentences, layer, neuron)[:5]
        got = scan.top(layer, neuron, 5)
        assert [e.sentence for e in got] == [sentences[i] for _, i, _ in expected]
        assert [e.value for e in got] == pytest.approx([v for v, _, _ in expected], abs=1e-6)
        assert [e.position for e in got] == [p for _, _, p in expected]
        assert got[0].tokens == tokenize(got[0].sentence, "sentence").tokens


def test_top_sentences_on_a_published_gpt2(tmp_path) -> None:
    gpt2_folder(tmp_path / "gpt2", layers=2, heads=2, width=16)
    pre = load_pretrained(tmp_path / "gpt2")

    def read(text: str):
        enc = pre.tokenizer.encode(text)
        return (enc.ids, enc.tokens) if enc.ids else None

    sentences = nc.corpus_sentences()[:20]
    scan = nc.scan_corpus(pre.model, read, sentences=sentences, top=3)
    expected = _brute_force(pre.model, read, sentences, 1, 5)[:3]
    assert [e.sentence for e in scan.top(1, 5, 3)] == [sentences[i] for _, i, _ in expected]
    assert expected[0][0] != expected[-1][0]  # the oracle is not flat


def test_unreadable_sentences_are_skipped_and_nothing_readable_is_refused() -> None:
    model = CausalLM(TransformerConfig(vocab_size=5, max_len=16, d_model=8, n_heads=2, n_layers=1, d_ff=16)).eval()
    vocab = {"a": 1, "b": 2, " ": 3}

    def read(text: str):
        ids = [vocab[c] for c in text if c in vocab]
        return (ids, [c for c in text if c in vocab]) if ids else None

    scan = nc.scan_corpus(model, read, sentences=["a b", "xyz", "bab"], top=5)
    assert scan.read == 2 and scan.skipped == 1 and scan.tokens[1] == ()
    assert {e.sentence for e in scan.top(0, 0)} == {"a b", "bab"}
    with pytest.raises(ValueError, match="cannot read"):
        nc.scan_corpus(model, read, sentences=["xyz"])


def test_encoder_decoder_reads_its_encoder_and_cls_gets_a_label() -> None:
    model = Seq2SeqTransformer(TransformerConfig(vocab_size=13, max_len=8, d_model=8, n_heads=2, n_layers=2,
                                                 d_ff=16, pad_id=0)).eval()
    acts = nc.neurons_of(model, [3, 4, 5])
    assert acts.shape == (2, 3, 16)
    assert nc.stream_labels(["a", "b"], 3) == ("CLS", "a", "b") and nc.stream_labels(["a", "b"], 2) == ("a", "b")
    assert nc.top_neurons(torch.tensor([[0.0, 3.0, 1.0], [2.0, -1.0, 0.5]]), 2) == [1, 0]


def test_coverage_of_character_vocabularies() -> None:
    assert nc.coverage(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,?'")) == pytest.approx(1.0)
    assert nc.coverage(list("0123456789")) < 0.01
    assert nc.coverage(list("ACDEFGHIKLMNPQRSTVWY")) < nc.MIN_COVERAGE  # a protein model's amino acids
