"""Execution rewards: run the model's code in the sandbox and score what happened.

Each factory returns an ``async`` reward function with TRL's contract
``f(prompts, completions, completion_ids, **columns, log_metric=...) -> list[float | None]``; TRL runs async
reward functions concurrently, and the sandbox runs the batch's programs in parallel.
"""

from __future__ import annotations

import importlib
import time
from collections import Counter
from dataclasses import dataclass

from sandbox import Sandbox
from sandbox.results import SANDBOX_ERROR
from utils.extraction import extract_code, has_fenced_block

SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
TIERS = ("output", "no_output", "syntax_error", "runtime_error", "timeout", "no_code")


@dataclass
class ExecutionTiers:
    """The seed system's tiers, configurable. A warning on stderr is not a failure."""

    success_output: float = 1.0  # ran, printed something
    success_no_output: float = 0.5  # ran, printed nothing
    syntax_error: float = -0.5  # SyntaxError / IndentationError
    runtime_error: float = -1.0  # any exception, non-zero exit, crash, memory or output limit
    timeout: float = -1.0
    no_code: float = -1.0  # nothing to run (no code block under a block extraction policy, or empty)


def completion_text(completion) -> str:
    """A completion as text: plain strings as they are, chat completions as their last message's content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content", "")
        if isinstance(content, list):  # content blocks
            return "".join(b.get("text", "") for b in content if isinstance(b, dict))
        return str(content)
    return str(completion)


def classify(result) -> str | None:
    """The tier of one ExecResult; None for an infrastructure failure."""
    if result.status == SANDBOX_ERROR:
        return None
    if result.status == "ok":
        return "output" if result.stdout.strip() else "no_output"
    if result.status == "timeout":
        return "timeout"
    if result.error_type in SYNTAX_ERRORS:
        return "syntax_error"
    return "runtime_error"


def execution_reward(sandbox: Sandbox, tiers: ExecutionTiers | None = None, extraction: str = "first_block"):
    tiers = tiers or ExecutionTiers()
    value = {
        "output": tiers.success_output,
        "no_output": tiers.success_no_output,
        "syntax_error": tiers.syntax_error,
        "runtime_error": tiers.runtime_error,
        "timeout": tiers.timeout,
        "no_code": tiers.no_code,
    }

    async def execution(prompts, completions, log_metric=None, **_):
        codes = [extract_code(completion_text(c), extraction) for c in completions]
        runnable = [i for i, c in enumerate(codes) if c.strip()]
        start = time.perf_counter()
        results = await sandbox.arun_many([codes[i] for i in runnable])
        elapsed = time.perf_counter() - start
        kinds: list[str | None] = ["no_code"] * len(codes)
        for i, r in zip(runnable, results):
            kinds[i] = classify(r)
        rewards = [None if k is None else value[k] for k in kinds]
        if log_metric is not None:
            n = len(kinds)
            counts = Counter(kinds)
            for tier in TIERS:
                log_metric(f"reward/tier/{tier}", counts.get(tier, 0) / n)
            log_metric("reward/successful_executions", (counts["output"] + counts["no_output"]) / n)
            log_metric("reward/infra_failures", counts.get(None, 0))
            log_metric("reward/execution_time_s", elapsed)
        return rewards

    return execution


def tests_reward(sandbox: Sandbox, extraction: str = "first_block"):
    """Fraction of the row's tests passed (``tests`` column: assert statements; optional ``setup`` and
    ``entry_points`` columns). Rows without tests give None (TRL skips them for this function)."""

    async def tests(prompts, completions, tests=None, setup=None, entry_points=None, log_metric=None, **_):
        n = len(completions)
        tests = tests or [None] * n
        setup = setup or [""] * n
        entry_points = entry_points or [()] * n
        idx = [i for i in range(n) if tests[i]]
        items = [
            {
                "code": extract_code(completion_text(completions[i]), extraction),
                "tests": list(tests[i]),
                "setup": setup[i] or "",
                "entry_points": tuple(entry_points[i] or ()),
            }
            for i in idx
        ]
        start = time.perf_counter()
        results = await sandbox.acheck_many(items)
        elapsed = time.perf_counter() - start
        rewards: list[float | None] = [None] * n
        infra = 0
        for i, r in zip(idx, results):
            if r.status == SANDBOX_ERROR:
                infra += 1
                continue
            rewards[i] = r.tests_passed / r.tests_total if r.tests_total else 0.0
        if log_metric is not None and idx:
            scored = [rewards[i] for i in idx if rewards[i] is not None]
            log_metric("reward/tests_all_passed", sum(1 for x in scored if x == 1.0) / max(1, len(scored)))
            log_metric("reward/tests_infra_failures", infra)
            log_metric("reward/tests_time_s", elapsed)
        return rewards

    return tests


def format_reward():
    def format(prompts, completions, **_):
        return [1.0 if has_fenced_block(completion_text(c)) else 0.0 for c in completions]

    return format


# Built-in rewards by name: each entry builds the function from (sandbox, tiers, extraction).
REGISTRY = {
    "execution": lambda sandbox, tiers, extraction: execution_reward(sandbox, tiers, extraction),
    "tests": lambda sandbox, tiers, extraction: tests_reward(sandbox, extraction),
    "format": lambda sandbox, tiers, extraction: format_reward(),
}


def _import(path: str):
    module, _, attr = path.replace(":", ".").rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"reward function {path!r}: cannot import it ({exc})") from None


def build_reward_funcs(funcs: dict[str, float], sandbox: Sandbox, tiers=None, extraction="first_block"):
    """(functions, weights) for ``rewards.funcs``: built-in names or dotted paths to plain TRL reward
    functions (``my_pkg.rewards:length_penalty``)."""
    if not funcs:
        raise ValueError("rewards.funcs is empty: name at least one reward, e.g. {execution: 1.0}")
    out, weights = [], []
    for name, weight in funcs.items():
        if name in REGISTRY:
            fn = REGISTRY[name](sandbox, tiers, extraction)
        elif "." in name or ":" in name:
            fn = _import(name)
        else:
            raise ValueError(
                f"rewards.funcs: unknown reward {name!r}; built-ins: {', '.join(REGISTRY)}, "
                "or a dotted path module:function"
            )
        out.append(fn)
        weights.append(float(weight))
    return out, weights
