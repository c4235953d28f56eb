"""Execution, tests and format rewards, each tier through the real sandbox."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

from rewards import ExecutionTiers, build_reward_funcs, execution_reward, format_reward
from rewards import tests_reward as make_tests_reward  # not collected as a test
from utils.extraction import extract_code


def _call(fn, completions, **cols):
    metrics = {}
    out = fn(
        prompts=["p"] * len(completions),
        completions=completions,
        completion_ids=None,
        log_metric=lambda k, v: metrics.__setitem__(k, v),
        **cols,
    )
    if asyncio.iscoroutine(out):
        out = asyncio.run(out)
    return out, metrics


def test_every_execution_tier(sb):
    fn = execution_reward(sb, ExecutionTiers(), extraction="auto")
    completions = [
        "```python\nprint('hi')\n```",  # output
        "```python\nx = 1\n```",  # no output
        "```python\ndef f(:\n```",  # syntax error
        "```python\nif True:\nprint(1)\n```",  # indentation error -> syntax tier
        "```python\n1 / 0\n```",  # runtime error
        "```python\nwhile True:\n    pass\n```",  # timeout
        "```python\nimport warnings\nwarnings.warn('w')\nprint(2)\n```",  # a warning is not a failure
        "",  # no code
    ]
    rewards, metrics = _call(fn, completions)
    assert rewards == [1.0, 0.5, -0.5, -0.5, -1.0, -1.0, 1.0, -1.0]
    assert metrics["reward/tier/output"] == 2 / 8 and metrics["reward/tier/timeout"] == 1 / 8
    assert metrics["reward/successful_executions"] == 3 / 8 and metrics["reward/infra_failures"] == 0
    assert metrics["reward/execution_time_s"] > 0


def test_tiers_are_configurable_and_block_policy(sb):
    fn = execution_reward(sb, ExecutionTiers(success_output=2.0, no_code=-3.0), extraction="first_block")
    rewards, _ = _call(fn, ["print(1)", "```python\nprint(1)\n```", "```py\nx=1\n```\n```python\nprint(3)\n```"])
    assert rewards == [-3.0, 2.0, 0.5]  # no block -> no_code; the first block is run


def test_chat_completions_are_read(sb):
    fn = execution_reward(sb, extraction="auto")
    rewards, _ = _call(fn, [[{"role": "assistant", "content": "```python\nprint(5)\n```"}]])
    assert rewards == [1.0]


def test_tests_reward_fraction_and_rows_without_tests(sb):
    fn = make_tests_reward(sb, extraction="auto")
    code = "```python\ndef sq(x):\n    return x * x if x < 3 else 0\n```"
    tests = ["assert sq(1) == 1", "assert sq(2) == 4", "assert sq(3) == 9"]
    rewards, metrics = _call(
        fn, [code, code, "no code here"], tests=[tests, None, tests], setup=["", "", ""], entry_points=[[], [], []]
    )
    assert rewards[0] == 2 / 3 and rewards[1] is None and rewards[2] == 0.0
    assert metrics["reward/tests_all_passed"] == 0.0


def test_format_reward():
    fn = format_reward()
    assert fn(prompts=["p", "p"], completions=["```python\nx=1\n```", "x=1"]) == [1.0, 0.0]


def test_infrastructure_failure_gives_none_not_a_penalty():
    """Kill the sandbox's worker while it runs a program: that sample is None (TRL skips it)."""
    from sandbox import Sandbox

    with Sandbox(workers=1, timeout_s=10) as box:
        fn = execution_reward(box, extraction="whole")

        def kill_worker():
            time.sleep(0.5)
            os.killpg(box._workers[0].proc.pid, signal.SIGKILL)

        threading.Thread(target=kill_worker).start()
        rewards, metrics = _call(fn, ["import time\ntime.sleep(5)\nprint(1)"])
        assert rewards == [None] and metrics["reward/infra_failures"] == 1
        rewards, _ = _call(fn, ["print(1)"])  # the worker was restarted
        assert rewards == [1.0]


def test_registry_and_dotted_paths(sb):
    funcs, weights = build_reward_funcs({"execution": 1.0, "format": 0.5, "tests.test_rewards:_length": 0.1}, sb)
    assert [getattr(f, "__name__", "") for f in funcs] == ["execution", "format", "_length"] and weights == [
        1.0,
        0.5,
        0.1,
    ]
    import pytest

    with pytest.raises(ValueError, match="unknown reward"):
        build_reward_funcs({"nope": 1.0}, sb)


def _length(prompts, completions, **_):
    return [float(len(c)) for c in completions]


def test_extraction_policies():
    text = "Here:\n```python\na = 1\n```\nand\n```python\nb = 2\n```"
    assert extract_code(text, "first_block") == "a = 1\n"
    assert extract_code(text, "last_block") == "b = 2\n"
    assert extract_code(text, "whole") == text
    assert extract_code("x = 1\nprint(x)\n```\nExplanation", "auto") == "x = 1\nprint(x)\n"  # prompt opened it
    assert extract_code("```python\nunterminated = 1", "first_block") == "unterminated = 1"
