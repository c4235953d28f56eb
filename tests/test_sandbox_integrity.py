"""Verdict integrity: a program must never be able to fake a pass.

Each test is one attack class seen against real harnesses (see README, "What the sandbox protects against").
The function under test is wrong (or absent) in every attack, so any pass would be a forged one.
"""

from __future__ import annotations

import pytest

TESTS = ["assert add(2, 3) == 5", "assert add(10, -4) == 6", "assert add(0, 0) == 0"]
WRONG = "def add(a, b):\n    return a - b\n"


def _assert_not_passed(sb, code, tests=TESTS, **kw):
    t = sb.check(code, tests, **kw)
    assert not t.passed, t
    assert t.tests_passed < t.tests_total
    return t


def test_control_a_correct_solution_passes(sb):
    assert sb.check("def add(a, b):\n    return a + b", TESTS).passed


@pytest.mark.parametrize(
    "attack",
    [
        "import sys\nsys.exit(0)",
        "import os\nos._exit(0)",
        "raise SystemExit(0)",
        "import atexit, os\natexit.register(lambda: os._exit(0))\nraise RuntimeError",
    ],
)
def test_exit_before_tests_fails(sb, attack):
    t = _assert_not_passed(sb, WRONG + attack)
    assert t.tests_passed == 0


def test_exit_inside_the_function_under_test_fails(sb):
    code = "import os\ndef add(a, b):\n    os._exit(0)\n"
    t = _assert_not_passed(sb, code)
    assert t.tests_passed == 0 and t.tests[0].error_type in ("NotRun", "SystemExit")


def test_sys_exit_inside_the_function_fails(sb):
    code = "import sys\ndef add(a, b):\n    sys.exit(0)\n"
    t = _assert_not_passed(sb, code)
    assert t.tests_passed == 0


def test_reexec_with_optimisation_to_strip_asserts_fails(sb):
    code = WRONG + "import os, sys\nos.execv(sys.executable, [sys.executable, '-O', '-c', 'pass'])\n"
    assert _assert_not_passed(sb, code).tests_passed == 0


def test_settrace_jumping_over_asserts_changes_nothing(sb):
    code = WRONG + (
        "import sys\n"
        "def tracer(frame, event, arg):\n"
        "    if event == 'line' and 'assert' in str(frame.f_code.co_consts):\n"
        "        raise SystemExit(0)\n"
        "    return tracer\n"
        "sys.settrace(tracer)\n"
    )
    _assert_not_passed(sb, code)


def test_always_equal_object_cannot_pass(sb):
    code = (
        "class Any:\n"
        "    def __eq__(self, other): return True\n"
        "    def __ne__(self, other): return False\n"
        "    def __hash__(self): return 0\n"
        "    def __repr__(self): return '5'\n"
        "def add(a, b):\n    return Any()\n"
    )
    t = _assert_not_passed(sb, code)
    assert t.tests_passed == 0 and t.tests[0].error_type == "AssertionError"


def test_truthiness_of_non_data_values_is_kept(sb):
    code = "import re\ndef m(s):\n    return re.match('a+', s)\n"
    t = sb.check(code, ["assert m('aa')", "assert not m('b')", "assert m('aa') is not None", "assert m('a') != 1"])
    assert t.passed, t


def test_builtin_subclass_with_custom_eq_cannot_pass(sb):
    code = "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b):\n    return I(99)\n"
    assert _assert_not_passed(sb, code).tests_passed == 0


def test_always_equal_inside_a_container_cannot_pass(sb):
    code = "class A:\n    __eq__ = lambda s, o: True\ndef f():\n    return [A()]\n"
    _assert_not_passed(sb, code, tests=["assert f() == [1]"])


def test_fake_pass_markers_on_stdout_change_nothing(sb):
    code = WRONG + "print('PASSED\\nAll tests passed\\nOK')\nprint('{\"passed\": true}')\n"
    _assert_not_passed(sb, code)


def test_forged_frames_on_the_result_pipe_cannot_create_a_pass(sb):
    # The program writes fake result frames and a fake 'done' to every descriptor it has, then exits.
    code = WRONG + (
        "import os\n"
        'fake = b\'{"t": "ran"}\\n\' + b\'\'.join(b\'{"t": "v", "k": %d, "v": 999}\\n\' % k for k in range(3))'
        ' + b\'{"t": "i", "k": 0, "ok": true}\\n{"t": "done"}\\n\'\n'
        "for fd in range(0, 20):\n"
        "    try:\n"
        "        os.write(fd, fake)\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    t = _assert_not_passed(sb, code)
    assert t.tests_passed == 0


def test_expected_values_are_not_in_the_sandbox(sb):
    # The candidate hunts for the expected value everywhere it can see; it is never sent to the sandbox.
    code = (
        "import gc, sys\n"
        "def hit(text):\n"
        "    return str(int('4242') * 100 + 42) in text  # the target is never stored anywhere\n"
        "def secret():\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, (str, dict, list, tuple)) and hit(repr(o)[:100000]):\n"
        "            return 'found in memory'\n"
        "    f = sys._getframe().f_back\n"
        "    while f:\n"
        "        if hit(repr(f.f_locals)) or hit(repr(f.f_code.co_consts)):\n"
        "            return 'found in a frame'\n"
        "        f = f.f_back\n"
        "    return None\n"
    )
    t = _assert_not_passed(sb, code, tests=["assert secret() == 424242"])
    assert t.tests[0].error_type == "AssertionError"


def test_shadowed_builtins_used_by_tests_are_not_used(sb):
    code = (
        "def sorted(x, **k):\n    return [1, 2, 3]\n"
        "def set(x=()):\n    return {1, 2, 3}\n"
        "def len(x):\n    return 3\n"
        "def isinstance(a, b):\n    return True\n"
        "def f():\n    return [9]\n"
    )
    tests = [
        "assert sorted(f()) == [1, 2, 3]",
        "assert set(f()) == {1, 2, 3}",
        "assert len(f()) == 3",
        "assert isinstance(f(), dict)",
    ]
    assert _assert_not_passed(sb, code, tests=tests).tests_passed == 0


def test_monkeypatching_modules_used_by_tests_changes_nothing(sb):
    code = "import math\nmath.isclose = lambda *a, **k: True\ndef area():\n    return 1.0\n"
    _assert_not_passed(sb, code, tests=["assert math.isclose(area(), 3.14)"])


def test_state_does_not_leak_between_programs(sb):
    poison = "import math, builtins\nmath.sqrt = lambda x: 4\nbuiltins.abs = lambda x: 0\n"
    sb.run_many([poison] * 4)
    t = sb.check("import math\ndef f():\n    return math.sqrt(9) + abs(-1)", ["assert f() == 4.0"])
    assert t.passed


def test_segfault_and_deep_recursion_fail_and_the_batch_goes_on(sb):
    items = [
        {"code": "import ctypes\nctypes.string_at(0)\n" + WRONG, "tests": TESTS},
        {"code": "def add(a, b):\n    return add(a, b)\n", "tests": TESTS},
        {
            "code": "import sys\nsys.setrecursionlimit(10 ** 7)\ndef add(a, b):\n    return add(a, b) + 1\n",
            "tests": TESTS,
        },
        {"code": "def add(a, b):\n    return a + b", "tests": TESTS},
    ]
    seg, rec, deep, good = sb.check_many(items)
    assert seg.status == "crashed" and not seg.passed
    assert not rec.passed and rec.tests[0].error_type == "RecursionError"
    assert not deep.passed and deep.status in ("crashed", "failed", "memory", "timeout")
    assert good.passed


def test_killing_the_host_side_pipes_does_not_fake_anything(sb):
    code = (
        WRONG
        + "import os\nfor fd in range(3, 64):\n    try:\n        os.close(fd)\n    except OSError:\n        pass\n"
    )
    _assert_not_passed(sb, code)
    assert sb.check("def add(a, b):\n    return a + b", TESTS).passed


def test_inline_tests_cannot_be_faked_by_exiting(sb):
    # A test that is not a single assert runs inside the sandbox; exiting still fails it.
    tests = ["x = add(1, 1)\nassert x == 2"]
    t = sb.check("import os\ndef add(a, b):\n    os._exit(0)", tests)
    assert not t.passed
    ok = sb.check("def add(a, b):\n    return a + b", tests)
    assert ok.passed and ok.tests[0].evaluated_in_sandbox
