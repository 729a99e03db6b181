"""Command line: ``python -m transformer_core.pretrained download gpt2 --to models/`` fetches a model's files
into ``models/gpt2``; ``info <folder>`` describes a model folder; ``list <folder>`` describes every model folder
inside one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import hub
from .folders import ModelInfo, inspect_folder, list_model_folders
from .loader import check_budget, read_config


def _size(n_bytes: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{n_bytes} bytes"


def _describe(info: ModelInfo) -> str:
    return (f"{info.name}: {info.family} ({info.architecture}), {info.n_params:,} parameters, "
            f"{_size(info.n_bytes)} in memory, {_size(info.file_bytes)} on disk")


def download(model_id: str, to: Path, max_params: int | None = None) -> Path:
    """Fetch ``model_id``'s needed files into ``to/<name>`` from one commit, its config checked before weights."""
    if not hub.looks_like_model_id(model_id):
        raise ValueError(f"{model_id!r} is not a Hugging Face model id (such as gpt2 or google/vit-base-patch16-224).")
    target = Path(to) / model_id.split("/")[-1]
    return hub.fetch_model(model_id, local_dir=target,
                           check=lambda fetched: check_budget(read_config(fetched), max_params=max_params))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m transformer_core.pretrained",
                                     description="Fetch and describe pretrained GPT-2, BERT, DistilBERT, RoBERTa "
                                                 "and ViT models.")
    commands = parser.add_subparsers(dest="command", required=True)
    get = commands.add_parser("download", help="download a Hub model's config, safetensors weights and tokenizer")
    get.add_argument("model_id", help="e.g. gpt2, distilgpt2, bert-base-uncased, google/vit-base-patch16-224")
    get.add_argument("--to", type=Path, default=Path("models"), help="parent folder (default: models)")
    get.add_argument("--max-params", type=int, default=None, help="refuse models with more parameters")
    info = commands.add_parser("info", help="describe a model folder (family, parameters, size)")
    info.add_argument("folder", type=Path)
    listing = commands.add_parser("list", help="describe every model folder inside a folder")
    listing.add_argument("folder", type=Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 refused or failed)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "download":
            folder = download(args.model_id, args.to, args.max_params)
            print(_describe(inspect_folder(folder)))
            print(f"Saved in {folder}")
        elif args.command == "info":
            print(_describe(inspect_folder(args.folder)))
        else:
            scan = list_model_folders(args.folder)
            for model in scan.models:
                print(_describe(model))
            for path, reason in scan.skipped:
                print(f"skipped {path.name}: {reason}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
