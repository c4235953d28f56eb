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
