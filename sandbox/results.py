"""Result records returned by the sandbox. Plain dataclasses; ``to_dict()`` gives the CLI's JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# ExecResult.status values
OK = "ok"  # exited 0
ERROR = "error"  # exception, non-zero exit, or syntax error (see error_type)
TIMEOUT = "timeout"  # killed at the wall-clock deadline (or CPU limit)
MEMORY = "memory"  # MemoryError under the address-space limit
OUTPUT_LIMIT = "output_limit"  # stdout/stderr (or result data) exceeded the cap
CRASHED = "crashed"  # killed by a signal (segfault, abort, ...)
SANDBOX_ERROR = "sandbox_error"  # our infrastructure failed: never score this as the model's fault

# TestResult.status adds
PASSED = "passed"  # every test passed
FAILED = "failed"  # the program ran, and at least one test failed


@dataclass
class ExecResult:
    status: str
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error_type: str | None = None
    error_message: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TestVerdict:
    __test__ = False  # not a pytest class
    test: str
    passed: bool
    error_type: str | None = None  # AssertionError when the comparison was false
    error_message: str | None = None
    evaluated_in_sandbox: bool = False  # True when the test could not be split (see README)


@dataclass
class TestResult:
    __test__ = False  # not a pytest class
    passed: bool
    status: str
    tests_passed: int
    tests_total: int
    tests: list[TestVerdict] = field(default_factory=list)
    error_type: str | None = None
    error_message: str | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0

    @property
    def pass_fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 0.0

    def to_dict(self) -> dict:
        return asdict(self)
