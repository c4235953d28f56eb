"""Offline cluster mode and model loading with one clear error when something is missing.

``offline: auto`` is on for MIT Supercloud and whenever ``HF_HUB_OFFLINE=1``. Offline sets the Hugging Face
offline variables and ``WANDB_MODE=offline`` and loads everything with local files only; a missing model or
dataset names what is missing, where we looked, and the command that fetches it on a machine with internet.
"""

from __future__ import annotations

import os

from utils.config import ConfigError

OFFLINE_VARS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


def setup_environment(cfg, offline: bool, output_dir: str | None = None) -> list[str]:
    """Set process-wide variables for offline mode and W&B; returns notes for the start-up summary."""
    notes = []
    if offline:
        os.environ.update(OFFLINE_VARS)
        notes.append("offline: HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1")
    mode = cfg.wandb.mode
    if mode == "online" and offline:
        mode = "offline"
        notes.append("wandb: offline (offline mode); sync later with `wandb sync <run dir>`")
    if mode != "disabled":
        os.environ["WANDB_MODE"] = mode
        if output_dir:  # runs (offline ones too, for `wandb sync`) live with the run, not in the cwd
            os.makedirs(output_dir, exist_ok=True)
            os.environ.setdefault("WANDB_DIR", os.path.abspath(output_dir))
        os.environ.setdefault("WANDB_PROJECT", cfg.wandb.project)
        if cfg.wandb.entity:
            os.environ.setdefault("WANDB_ENTITY", cfg.wandb.entity)
        if cfg.wandb.tags:
            os.environ.setdefault("WANDB_TAGS", ",".join(cfg.wandb.tags))
    return notes


def hf_cache_dir(cache_dir: str | None = None) -> str:
    if cache_dir:
        return cache_dir
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def missing_message(what: str, name: str, cache_dir: str | None, config_path: str | None) -> str:
    fetch = f"python -m utils.prefetch --config {config_path}" if config_path else f"hf download {name}"
    return (
        f"{what} {name!r} is not available offline: it is not a local folder and not in the Hugging Face cache "
        f"({hf_cache_dir(cache_dir)}). On a machine with internet run `{fetch}` and copy that cache here "
        f"(or set HF_HOME to it), or point the config at a local folder."
    )


def _is_local(path: str) -> bool:
    return os.path.isdir(os.path.expanduser(path))


def _from_pretrained(load, what: str, model_cfg, offline: bool, config_path: str | None, **kwargs):
    """``load(name, ...)`` with local files only when offline; a missing model is one clear ConfigError."""
    name = model_cfg.name_or_path
    try:
        return load(
            name,
            revision=model_cfg.revision,
            cache_dir=model_cfg.cache_dir,
            trust_remote_code=model_cfg.trust_remote_code,
            local_files_only=offline,
            **kwargs,
        )
    except OSError as exc:
        if offline or not _is_local(name):
            detail = "" if offline else f" ({str(exc).splitlines()[0]})"
            raise ConfigError(missing_message(what, name, model_cfg.cache_dir, config_path) + detail) from None
        raise


def load_tokenizer(model_cfg, offline: bool, config_path: str | None = None, padding_side: str = "left"):
    from transformers import AutoTokenizer

    tok = _from_pretrained(AutoTokenizer.from_pretrained, "tokenizer", model_cfg, offline, config_path)
    tok.padding_side = padding_side
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def torch_dtype(name: str):
    import torch

    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}
    if name not in table:
        raise ConfigError(f"model.dtype: expected one of {', '.join(table)}, got {name!r}")
    return table[name]


def load_causal_lm(model_cfg, offline: bool, config_path: str | None = None):
    from transformers import AutoModelForCausalLM

    kwargs = {"dtype": torch_dtype(model_cfg.dtype)}
    if model_cfg.attn_implementation:
        kwargs["attn_implementation"] = model_cfg.attn_implementation
    return _from_pretrained(AutoModelForCausalLM.from_pretrained, "model", model_cfg, offline, config_path, **kwargs)


def peft_config(lora_cfg):
    """A peft LoraConfig from the lora section, or None when LoRA is off."""
    if not lora_cfg.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=lora_cfg.r,
        lora_alpha=lora_cfg.alpha,
        lora_dropout=lora_cfg.dropout,
        target_modules=list(lora_cfg.target_modules),
        task_type="CAUSAL_LM",
    )
