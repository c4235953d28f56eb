"""Command line: ``python -m sandbox {run,check,bench}``.

python -m sandbox run CODE_FILE [--stdin FILE] [--timeout S] [--memory-mb M] --json
python -m sandbox check CODE_FILE --tests TESTS_FILE [--setup FILE] [--timeout S] --json
python -m sandbox bench --mbpp PATH [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _read(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise SystemExit(f"error: cannot read {what} {path!r}: {exc.strerror}") from None


def _print(result, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
        return
    d = result.to_dict()
    for key in (
        "status",
        "passed",
        "tests_passed",
        "tests_total",
        "exit_code",
        "error_type",
        "error_message",
        "duration_s",
    ):
        if key in d:
            print(f"{key}: {d[key]}")
    if d.get("stdout"):
        print("--- stdout ---\n" + d["stdout"], end="" if d["stdout"].endswith("\n") else "\n")
    if d.get("stderr"):
        print("--- stderr ---\n" + d["stderr"], end="" if d["stderr"].endswith("\n") else "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--timeout", type=float, default=10.0, help="wall-clock limit in seconds")
    common.add_argument("--memory-mb", type=int, default=512, help="address-space limit in MiB")
    common.add_argument("--strict", action="store_true", help="refuse to run without full isolation")
    common.add_argument("--json", action="store_true", help="print one JSON object")
    p_run = sub.add_parser("run", parents=[common], help="run a program")
    p_run.add_argument("code_file")
    p_run.add_argument("--stdin", help="file whose contents are the program's stdin")
    p_check = sub.add_parser("check", parents=[common], help="run a program against assert tests")
    p_check.add_argument("code_file")
    p_check.add_argument("--tests", required=True, help="file with one assert statement per line")
    p_check.add_argument("--setup", help="code run after the program and before the tests")
    p_bench = sub.add_parser("bench", help="throughput on the MBPP test split vs a human-eval-style executor")
    p_bench.add_argument(
        "--mbpp",
        default=os.environ.get("MBPP_DATASET_PATH", "../shared/data/mbpp"),
        help="mbpp.jsonl or its directory (default: $MBPP_DATASET_PATH or ../shared/data/mbpp)",
    )
    p_bench.add_argument("--workers", type=int, default=2)
    p_bench.add_argument("--repeats", type=int, default=3, help="best of N timed runs of our sandbox")
    args = parser.parse_args(argv)

    if args.cmd == "bench":
        from sandbox.bench import main as bench

        return bench(args.mbpp, workers=args.workers, repeats=args.repeats)

    from sandbox import IsolationError, Sandbox

    code = _read(args.code_file, "code file")
    try:
        sb = Sandbox(
            workers=1, timeout_s=args.timeout, memory_mb=args.memory_mb, isolation="strict" if args.strict else "auto"
        )
    except IsolationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with sb:
        if args.cmd == "run":
            stdin = _read(args.stdin, "stdin file") if args.stdin else ""
            result = sb.run(code, stdin=stdin)
        else:
            tests = [t for t in _read(args.tests, "tests file").splitlines() if t.strip()]
            if not tests:
                raise SystemExit(f"error: {args.tests} holds no tests (one assert statement per line)")
            setup = _read(args.setup, "setup file") if args.setup else ""
            result = sb.check(code, tests, setup=setup)
    _print(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
