"""Reward functions for TRL trainers, chosen by name (or dotted import path) with weights in YAML.

Built-ins (``rewards.code_execution``): ``execution`` (run/no-output/syntax/runtime tiers), ``tests`` (fraction
of the row's test cases passed), ``format`` (a fenced python block). Everything model-written runs in the
sandbox; an infrastructure failure gives ``None`` for that sample (TRL leaves it out), never a penalty.
"""

from rewards.code_execution import (
    REGISTRY,
    ExecutionTiers,
    build_reward_funcs,
    execution_reward,
    format_reward,
    tests_reward,
)

__all__ = ["REGISTRY", "ExecutionTiers", "build_reward_funcs", "execution_reward", "format_reward", "tests_reward"]
