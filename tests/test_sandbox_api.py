"""The public API and CLI of sandbox/: statuses, stdout/stderr, stdin, order of results, async forms."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from sandbox import Sandbox, TestResult
from tests.conftest import REPO


def test_run_ok_with_output(sb):
    r = sb.run("print('hello', 6 * 7)")
    assert r.status == "ok" and r.exit_code == 0
    assert r.stdout == "hello 42\n"
    assert r.error_type is None


def test_run_reads_stdin(sb):
    r = sb.run("import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))", stdin="1 2 3\n")
    assert r.stdout == "6\n"


def test_run_input_builtin(sb):
    assert sb.run("print(input()[::-1])", stdin="abc\n").stdout == "cba\n"


def test_runtime_error_type_and_traceback(sb):
    r = sb.run("def f():\n    return 1 / 0\nf()")
    assert r.status == "error" and r.exit_code == 1
    assert r.error_type == "ZeroDivisionError"
    assert "ZeroDivisionError: division by zero" in r.stderr
    assert 'File "main.py", line 2, in f' in r.stderr
    assert "server.py" not in r.stderr  # the harness's own frames are not shown


def test_syntax_and_indentation_errors(sb):
    assert sb.run("def f(:\n  pass").error_type == "SyntaxError"
    assert sb.run("if True:\nprint(1)").error_type == "IndentationError"


def test_syntax_error_at_runtime_is_not_a_syntax_error(sb):
    # A program that compiles and then raises SyntaxError (eval of bad text) failed at run time.
    r = sb.run("eval('1 +')")
    assert r.status == "error" and r.error_type == "RuntimeSyntaxError"


def test_warning_on_stderr_is_not_failure(sb):
    r = sb.run("import warnings\nwarnings.warn('careful')\nprint('done')")
    assert r.status == "ok" and "careful" in r.stderr and r.stdout == "done\n"


def test_sys_exit_codes(sb):
    assert sb.run("import sys; sys.exit(0)").status == "ok"
    r = sb.run("import sys; sys.exit(3)")
    assert r.status == "error" and r.exit_code == 3 and r.error_type == "SystemExit"
    r = sb.run("raise SystemExit('bye')")
    assert r.exit_code == 1 and "bye" in r.stderr


def test_stdout_is_capped(sb):
    r = sb.run("print('x' * 200000)")
    assert r.status == "ok"
    assert len(r.stdout) == sb.max_output_bytes and r.stdout_truncated


def test_unicode_and_undecodable_output(sb):
    r = sb.run("import sys\nprint('héllo ✓')\nsys.stdout.flush()\nsys.stdout.buffer.write(b'\\xff\\xfe\\n')")
    assert r.stdout.startswith("héllo ✓\n") and "\ufffd" in r.stdout


def test_check_pass_partial_and_verdicts(sb):
    code = "def add(a, b):\n    return a + b if a < 10 else 0"
    t = sb.check(code, ["assert add(1, 2) == 3", "assert add(20, 1) == 21", "assert add(2, 2) == 4"])
    assert isinstance(t, TestResult)
    assert not t.passed and t.status == "failed"
    assert (t.tests_passed, t.tests_total) == (2, 3)
    assert [v.passed for v in t.tests] == [True, False, True]
    assert t.tests[1].error_type == "AssertionError"
    assert t.pass_fraction == 2 / 3
    ok = sb.check("def add(a, b):\n    return a + b", ["assert add(1, 2) == 3"])
    assert ok.passed and ok.status == "passed" and ok.error_type is None


def test_check_setup_runs_after_code(sb):
    code = "class Node:\n    def __init__(self, v):\n        self.v = v\ndef val(n):\n    return n.v"
    t = sb.check(code, ["assert val(root) == 7"], setup="root = Node(7)")
    assert t.passed


def test_check_program_error_fails_every_test(sb):
    t = sb.check("def f(x):\n    return x\nraise ValueError('boom')", ["assert f(1) == 1", "assert f(2) == 2"])
    assert not t.passed and t.status == "error" and t.error_type == "ValueError"
    assert t.tests_passed == 0


def test_check_test_raising(sb):
    t = sb.check("def f(x):\n    return [x]", ["assert f(1)[3] == 1", "assert f(2) == [2]"])
    assert [v.error_type for v in t.tests] == ["IndexError", None]
    assert t.tests_passed == 1


def test_check_values_of_many_types(sb):
    code = """
import collections, decimal, fractions
def f():
    return {'a': (1, 2.5, None, True), 2: [b'x', {3, 4}, frozenset({5})], 'big': 10 ** 40, 'c': 1 + 2j}
def g():
    return (x * x for x in range(4))
def h():
    return collections.Counter('abca'), collections.OrderedDict(a=1), collections.deque([1, 2])
def k():
    return decimal.Decimal('1.10'), fractions.Fraction(1, 3), range(0, 10, 2), float('inf')
"""
    tests = [
        "assert f() == {'a': (1, 2.5, None, True), 2: [b'x', {3, 4}, frozenset({5})], 'big': 10 ** 40, 'c': 1 + 2j}",
        "assert list(g()) == [0, 1, 4, 9]",
        "assert h()[0] == {'a': 2, 'b': 1, 'c': 1} and h()[1] == {'a': 1} and list(h()[2]) == [1, 2]",
        "assert k()[0] == decimal.Decimal('1.1') and k()[1] * 3 == 1 and list(k()[2]) == [0, 2, 4, 6, 8]",
        "assert math.isinf(k()[3])",
    ]
    t = sb.check(code, tests)
    assert t.passed, [(v.test, v.error_type, v.error_message) for v in t.tests]


def test_check_floats_with_isclose_and_tolerance(sb):
    t = sb.check(
        "def area(r):\n    return 3.14159 * r * r",
        ["assert math.isclose(area(2), 12.56636, rel_tol=1e-6)", "assert abs(area(1) - 3.14159) < 1e-9"],
    )
    assert t.passed


def test_entry_point_that_shadows_a_builtin(sb):
    # MBPP task 126 asks for a function named `sum`.
    code = "def sum(a, b):\n    return a + b"
    assert sb.check(code, ["assert sum(2, 3) == 5"], entry_points=["sum"]).passed


def test_many_results_in_input_order(sb):
    codes = [f"import time\ntime.sleep({0.05 * (i % 3)})\nprint({i})" for i in range(12)]
    assert [r.stdout for r in sb.run_many(codes)] == [f"{i}\n" for i in range(12)]
    items = [{"code": f"def f():\n    return {i}", "tests": [f"assert f() == {i}"]} for i in range(10)]
    items[4]["tests"] = ["assert f() == -1"]
    assert [t.passed for t in sb.check_many(items)] == [i != 4 for i in range(10)]


def test_async_forms(sb):
    async def main():
        r = await sb.arun("print(5)")
        rs = await sb.arun_many(["print(1)", "print(2)"])
        t = await sb.acheck("def f():\n    return 1", ["assert f() == 1"])
        ts = await sb.acheck_many([{"code": "def f():\n    return 2", "tests": ["assert f() == 2"]}])
        return r, rs, t, ts

    r, rs, t, ts = asyncio.run(main())
    assert r.stdout == "5\n" and [x.stdout for x in rs] == ["1\n", "2\n"] and t.passed and ts[0].passed


def test_per_call_timeout_override(sb):
    r = sb.run("import time\ntime.sleep(3)", timeout_s=0.5)
    assert r.status == "timeout" and r.duration_s < 2


def test_closed_sandbox_refuses_work():
    box = Sandbox(workers=1)
    box.close()
    try:
        box.run("print(1)")
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed sandbox ran a program")


def _cli(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "sandbox", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_cli_run_json(tmp_path):
    (tmp_path / "p.py").write_text("import sys\nprint(sys.stdin.read().upper())\n")
    (tmp_path / "in.txt").write_text("abc")
    proc = _cli("run", str(tmp_path / "p.py"), "--stdin", str(tmp_path / "in.txt"), "--timeout", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "ok" and out["stdout"] == "ABC\n" and out["exit_code"] == 0


def test_cli_check_json(tmp_path):
    (tmp_path / "p.py").write_text("def sq(x):\n    return x * x\n")
    (tmp_path / "t.txt").write_text("assert sq(3) == 9\nassert sq(4) == 15\n")
    proc = _cli("check", str(tmp_path / "p.py"), "--tests", str(tmp_path / "t.txt"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["passed"] is False and out["status"] == "failed"
    assert (out["tests_passed"], out["tests_total"]) == (1, 2)


def test_cli_missing_file_is_one_clear_line(tmp_path):
    proc = _cli("run", str(tmp_path / "nope.py"), "--json")
    assert proc.returncode != 0
    assert "cannot read code file" in proc.stderr and "Traceback" not in proc.stderr


def test_default_workers_share_the_cores_among_local_processes(monkeypatch):
    from sandbox import default_workers

    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert default_workers() == cores
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores * 4))
    assert default_workers() == 1
