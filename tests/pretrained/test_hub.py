"""Hub model ids: one listing at one commit, only safe files, single file or shards, budgets before weights.

The Hub is :class:`tests.pretrained.fake_hub.FakeHub`; nothing goes online.
"""

from __future__ import annotations

import json
import shutil
from itertools import combinations

import pytest

from tests.pretrained.fake_hub import FAILURES, FakeHub
from tests.pretrained.hf_folders import gpt2_folder
from transformer_core.pretrained import HubError, load_pretrained
from transformer_core.pretrained.__main__ import main
from transformer_core.pretrained.hub import download_with_progress


@pytest.fixture(name="hub")
def hub_fixture(tmp_path, monkeypatch):
    repo = tmp_path / "commit-a"
    gpt2_folder(repo)
    (repo / "pytorch_model.bin").write_bytes(b"pickle")
    (repo / "modeling_gpt2.py").write_text("raise SystemExit")
    hub = FakeHub(tmp_path / "cache").install(monkeypatch)
    hub.commit("a" * 40, repo)
    return hub


def _pickle_only(tmp_path, name="pickles"):
    folder = tmp_path / name
    gpt2_folder(folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    (folder / "tf_model.h5").write_bytes(b"h5")
    return folder


def test_model_ids_fetch_only_safe_files_from_one_commit_and_then_load_from_the_cache(hub):
    pre = load_pretrained("someone/tiny-gpt2")
    assert pre.family == "gpt2" and pre.name == "someone/tiny-gpt2"
    assert hub.fetched() == ["config.json", "tokenizer.json", "model.safetensors"]
    assert {rev for kind, _, rev in hub.calls if kind == "file"} == {"a" * 40}  # by sha, never "main"
    repo = hub.cache / "models--someone--tiny-gpt2"
    assert (repo / "refs" / "main").read_text() == "a" * 40  # the cache knows which commit main is
    hub.calls = []
    load_pretrained("someone/tiny-gpt2")
    assert [kind for kind, *_ in hub.calls] == ["snapshot"]  # cached: nothing goes online


def test_over_budget_models_are_refused_before_any_weight_is_fetched(hub):
    with pytest.raises(ValueError, match="parameters; the limit here is 1,000"):
        load_pretrained("someone/tiny-gpt2", max_params=1000)
    assert "model.safetensors" not in hub.fetched()


def test_cli_download_writes_a_model_folder(hub, tmp_path, capsys):
    assert main(["download", "someone/tiny-gpt2", "--to", str(tmp_path / "models")]) == 0
    folder = tmp_path / "models" / "tiny-gpt2"
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert "tiny-gpt2: gpt2 (GPT2LMHeadModel)" in capsys.readouterr().out
    assert load_pretrained(folder).family == "gpt2"


def test_a_pickle_only_repo_is_refused_before_anything_is_fetched_naming_its_files(hub, tmp_path):
    hub.commit("b" * 40, _pickle_only(tmp_path))
    with pytest.raises(HubError) as caught:
        download_with_progress("someone/pickles", tmp_path / "models" / "pickles")
    text = str(caught.value)
    assert "no model.safetensors" in text and "pytorch_model.bin, tf_model.h5" in text
    assert "safetensors version" in text
    assert hub.fetched() == [] and not (tmp_path / "models").exists()


def test_everything_comes_from_the_first_commit_when_main_moves_meanwhile(hub, tmp_path):
    newer = tmp_path / "commit-b"
    gpt2_folder(newer, layers=3, seed=1)
    hub.commits["b" * 40] = newer
    hub.move_main_to = "b" * 40  # main moves right after the listing
    folder = download_with_progress("someone/tiny-gpt2", tmp_path / "models" / "tiny-gpt2")
    assert {rev for kind, _, rev in hub.calls if kind == "file"} == {"a" * 40}
    assert json.loads((folder / "config.json").read_text())["n_layer"] == 2
    assert load_pretrained(folder).config.n_layers == 2  # config and weights belong together


@pytest.mark.parametrize("failure, phrase", [
    ("gated", "is gated"), ("not found", "no public model called"), ("rate limit", "429 Too Many Requests"),
    ("server error", r"server error \(503\)"), ("missing file", "no longer has the file tokenizer.json"),
    ("offline", "may be offline"),
])
def test_each_hub_failure_gets_its_own_message(hub, tmp_path, failure, phrase):
    if failure == "missing file":
        hub.fail_file = ("tokenizer.json", failure)
    else:
        hub.fail_listing = failure
    with pytest.raises(HubError, match=phrase) as caught:
        download_with_progress("someone/tiny-gpt2", tmp_path / "models" / "tiny-gpt2")
    assert "Client Error" not in str(caught.value) and str(tmp_path) not in str(caught.value)
    assert "model.safetensors" not in hub.fetched()


def test_the_failure_messages_differ_and_say_what_to_do(hub, tmp_path):
    texts = {}
    for failure in FAILURES:
        hub.fail_listing = failure
        with pytest.raises(HubError) as caught:
            download_with_progress("someone/tiny-gpt2", tmp_path / "m")
        texts[failure] = str(caught.value)
    assert all(a != b for a, b in combinations(texts.values(), 2))
    assert "HF_TOKEN" in texts["gated"] and "Wait a few minutes" in texts["rate limit"]
    assert "--to models/" in texts["offline"]


def _sharded(tmp_path):
    folder = tmp_path / "sharded"
    gpt2_folder(folder, width=32, vocab=64)
    single = folder / "model.safetensors"
    model = load_pretrained(folder).model  # the same weights, saved again in two shards with an index
    import transformers

    transformers.GPT2LMHeadModel.from_pretrained(folder).save_pretrained(folder / "split", max_shard_size="40KB")
    shards = sorted(p.name for p in (folder / "split").glob("model-*.safetensors"))
    assert len(shards) >= 2, "the test needs a model stored in several shards"
    for path in (folder / "split").iterdir():
        if path.name.startswith("model"):
            shutil.move(path, folder / path.name)
    shutil.rmtree(folder / "split")
    return folder, single, shards, model


def test_a_repo_with_one_file_and_shards_downloads_only_the_one_file(hub, tmp_path):
    folder, _, shards, _ = _sharded(tmp_path)
    hub.commit("c" * 40, folder)
    download_with_progress("someone/sharded", tmp_path / "models" / "sharded")
    weights = [n for n in hub.fetched() if n.startswith("model")]
    assert weights == ["model.safetensors"]


def test_only_the_shards_the_index_names_are_fetched(hub, tmp_path):
    folder, single, shards, model = _sharded(tmp_path)
    single.unlink()
    stray = "model-00009-of-00009.safetensors"  # left over from an older upload; not in the index
    shutil.copy(folder / shards[0], folder / stray)
    hub.commit("d" * 40, folder)
    old = tmp_path / "models" / "sharded"
    gpt2_folder(old, width=32, vocab=64, seed=1)  # an older download, stored in one file: it must not be read
    reports = []
    target = download_with_progress("someone/sharded", old, lambda *r: reports.append(r))
    assert not (target / "model.safetensors").exists()
    fetched = [n for n in hub.fetched() if n.startswith("model")]
    assert fetched == ["model.safetensors.index.json", *shards] and stray not in fetched
    assert [r[2] for r in reports] == [*shards, ""] and reports[-1][0] == reports[-1][1]
    loaded = load_pretrained(target).model
    assert all((a == b).all() for a, b in zip(loaded.state_dict().values(), model.state_dict().values(), strict=True))


def test_a_download_over_the_limit_is_refused_before_its_weights(hub, tmp_path):
    with pytest.raises(HubError, match=r"lists \d+ kB of files to download, but the limit here is 1 kB"):
        download_with_progress("someone/tiny-gpt2", tmp_path / "models" / "x", max_bytes=1000)
    assert hub.fetched() == []  # one file: its size was known from the listing


def test_a_file_of_unknown_size_is_never_fetched(hub, tmp_path):
    hub.unsized = {"model.safetensors"}
    with pytest.raises(HubError, match="did not say how large model.safetensors"):
        download_with_progress("someone/tiny-gpt2", tmp_path / "models" / "x", max_bytes=10**9)
    assert "model.safetensors" not in hub.fetched()
    hub.calls = []
    with pytest.raises(HubError, match="did not say how large"):  # with no limit given, just the same
        load_pretrained("someone/tiny-gpt2")
    assert "model.safetensors" not in hub.fetched()


def test_a_file_larger_than_listed_is_deleted_and_refused(hub, tmp_path):
    hub.grown = {"model.safetensors": b"\0" * 4096}
    target = tmp_path / "models" / "x"
    with pytest.raises(HubError, match="more than the .* its listing said; it was deleted"):
        download_with_progress("someone/tiny-gpt2", target, max_bytes=10**9)
    assert not (target / "model.safetensors").exists()
