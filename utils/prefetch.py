"""``python -m utils.prefetch --config CONFIG``: download everything a config needs, for later offline runs.

Run it where there is internet (a login node); it fills the Hugging Face cache ($HF_HOME) with the model and
tokenizer (model.name_or_path at model.revision), MBPP (full and sanitized, when evaluation or data use it) and
a Hub dataset named in data.source. Copy that cache to the offline cluster, or share it, and run there.
"""

from __future__ import annotations

import argparse
import os
import sys

from omegaconf import OmegaConf


def plan(cfg: dict) -> list[tuple[str, str, dict]]:
    """(kind, name, kwargs) to fetch for a config mapping."""
    model = cfg.get("model") or {}
    data = cfg.get("data") or {}
    evaluation = cfg.get("evaluation") or {}
    items: list[tuple[str, str, dict]] = []
    name = model.get("name_or_path", "Qwen/Qwen2.5-1.5B")
    if not os.path.isdir(os.path.expanduser(str(name))):
        items.append(("model", name, {"revision": model.get("revision"), "cache_dir": model.get("cache_dir")}))
    source = str(data.get("source", "builtin"))
    uses_mbpp = (source == "mbpp" and not data.get("path")) or (
        evaluation.get("enabled") and not evaluation.get("dataset_path")
    )
    if uses_mbpp:
        items += [("dataset", "google-research-datasets/mbpp", {"name": c}) for c in ("full", "sanitized")]
    if source not in ("builtin", "demo", "mbpp") and not source.endswith((".json", ".jsonl")):
        items.append(("dataset", source, {"split": data.get("split", "train")}))
    return items


def fetch(items) -> None:
    from datasets import load_dataset
    from huggingface_hub import snapshot_download

    for kind, name, kwargs in items:
        print(f"fetching {kind} {name} {kwargs or ''}", flush=True)
        if kind == "model":
            path = snapshot_download(name, revision=kwargs.get("revision"), cache_dir=kwargs.get("cache_dir"))
            print(f"  -> {path}")
        else:
            load_dataset(name, **{k: v for k, v in kwargs.items() if v})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.prefetch", description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--dry-run", action="store_true", help="only list what would be fetched")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.config):
        print(f"error: config file not found: {args.config}", file=sys.stderr)
        return 2
    cfg = OmegaConf.to_container(OmegaConf.load(args.config)) or {}
    items = plan(cfg)
    if not items:
        print("nothing to fetch: the config uses local files only")
        return 0
    for kind, name, kwargs in items:
        print(f"{kind:8s} {name} {kwargs}")
    if args.dry_run:
        return 0
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        print(
            "error: HF_HUB_OFFLINE=1 is set; prefetch needs internet (unset it on a machine that has it)",
            file=sys.stderr,
        )
        return 2
    try:
        fetch(items)
    except Exception as exc:  # noqa: BLE001 - any network/auth failure: one line with the cause
        print(f"error: prefetch failed: {type(exc).__name__}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    print("done: the Hugging Face cache now holds everything this config needs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
