"""Secure, fast execution of model-written Python.

    from sandbox import Sandbox
    with Sandbox(workers=2, timeout_s=10, memory_mb=512) as sb:
        r = sb.run(code, stdin="")           # ExecResult
        t = sb.check(code, tests, setup="")  # TestResult (MBPP-style assert tests)

No dependency on TRL or torch. See README, "What the sandbox protects against, and what it does not".
"""

from sandbox.asserts import entry_points_from, split_test
from sandbox.isolation import IsolationError
from sandbox.pool import Sandbox, default_workers
from sandbox.results import ExecResult, TestResult, TestVerdict

__all__ = [
    "ExecResult",
    "IsolationError",
    "Sandbox",
    "TestResult",
    "TestVerdict",
    "default_workers",
    "entry_points_from",
    "split_test",
]
