"""Shared fixtures: one sandbox per session, MBPP from ../shared/data/mbpp (or $MBPP_DATASET_PATH)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # 2-thread torch spins otherwise (see CLAUDE.md)


def mbpp_dir() -> Path | None:
    candidates = [os.environ.get("MBPP_DATASET_PATH"), str(REPO.parent / "shared" / "data" / "mbpp")]
    for c in candidates:
        if c and (Path(c) / "mbpp.jsonl").is_file():
            return Path(c)
        if c and Path(c).is_file() and c.endswith(".jsonl"):
            return Path(c).parent
    return None


@pytest.fixture(scope="session")
def mbpp_path() -> Path:
    path = mbpp_dir()
    if path is None:
        pytest.skip(
            "MBPP not found: set MBPP_DATASET_PATH to the folder holding mbpp.jsonl "
            "(this checkout expects ../shared/data/mbpp)"
        )
    return path


@pytest.fixture(scope="session")
def mbpp_rows(mbpp_path) -> list[dict]:
    with open(mbpp_path / "mbpp.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def sanitized_rows(mbpp_path) -> list[dict]:
    path = mbpp_path / "sanitized-mbpp.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def sb():
    from sandbox import Sandbox

    with Sandbox(workers=2, timeout_s=5, memory_mb=512) as box:
        yield box


@pytest.fixture(scope="session")
def full_isolation(sb):
    """Tests of namespace/seccomp properties. CI sets RLCG_REQUIRE_FULL_ISOLATION=1: there they must run."""
    if not sb.isolation.full:
        reason = "full isolation unavailable here: " + "; ".join(sb.isolation.problems)
        if os.environ.get("RLCG_REQUIRE_FULL_ISOLATION") == "1":
            pytest.fail(reason + " (RLCG_REQUIRE_FULL_ISOLATION=1)")
        pytest.skip(reason)
    return sb


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny Qwen2 (random weights) and BPE tokenizer built locally: no Hub access."""
    from utils.demo import PROMPT, corpus
    from utils.tiny_model import build_tokenizer, save, tiny_qwen2

    texts = [PROMPT + p for p in corpus(500)] + ['"""\nWrite a function.\nassert f(1) == 2\n"""\n']
    tok = build_tokenizer(texts, vocab_size=300)
    model = tiny_qwen2(tok, hidden=32, layers=1, heads=2)
    return save(model, tok, tmp_path_factory.mktemp("tiny-model"))


def run_script(args: list[str], timeout: int = 600, env: dict | None = None):
    """Run a top-level script the way a user does: a fresh process from the repo root."""
    import subprocess
    import sys

    full_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
        "WANDB_MODE": "disabled",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=full_env
    )


def tiny_grpo_args(model_dir, output_dir, *extra: str) -> list[str]:
    """`grpo_code_execution.py` on the CPU demo config, shrunk for tests, plus overrides."""
    return [
        "grpo_code_execution.py",
        "--config",
        "configs/demo_cpu.yaml",
        f"--model.name_or_path={model_dir}",
        f"--training_args.output_dir={output_dir}",
        "--training_args.per_device_train_batch_size=4",
        "--training_args.num_generations=4",
        "--training_args.max_completion_length=8",
        "--training_args.save_steps=10",
        "--sandbox.workers=1",
        *extra,
    ]
