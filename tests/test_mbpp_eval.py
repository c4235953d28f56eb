"""MBPP evaluation: the CLI, scoring, pass@k, prompts, selection, an external check, and the training callback."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from evaluation import mbpp
from evaluation.scoring import score_samples
from tests.conftest import REPO, run_script, tiny_grpo_args


def _cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "evaluation.mbpp", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _references_through_cli(rows, mbpp_path, tmp_path, *flags):
    samples = _write(tmp_path / "s.jsonl", [{"task_id": r["task_id"], "completion": r["code"]} for r in rows])
    out = tmp_path / "r.json"
    proc = _cli("--samples", str(samples), "--dataset", str(mbpp_path), "--split", "all", *flags, "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, json.loads(out.read_text())


def test_all_974_references_pass_through_the_cli(mbpp_path, mbpp_rows, tmp_path):
    proc, result = _references_through_cli(mbpp_rows, mbpp_path, tmp_path, "--challenge")
    assert result["problems_passed"] == result["total_problems"] == 974 and result["pass@1"] == 1.0
    assert "974/974 problems passed" in proc.stdout


def test_all_427_sanitized_references_pass_through_the_cli(mbpp_path, sanitized_rows, tmp_path):
    _, result = _references_through_cli(sanitized_rows, mbpp_path, tmp_path, "--sanitized")
    assert result["problems_passed"] == 427 and result["total_problems"] == 427


def test_wrong_crashing_hanging_and_malicious_completions(mbpp_path, tmp_path):
    ref = {p.task_id: p for p in mbpp.load(str(mbpp_path), split="test")}
    rows = [
        {"task_id": 11, "completion": ref[11].reference},  # correct
        {"task_id": 12, "completion": "def sort_matrix(m):\n    return m"},  # wrong
        {"task_id": 13, "completion": "import ctypes\nctypes.string_at(0)"},  # crashes (segfault)
        {"task_id": 14, "completion": "while True:\n    pass"},  # hangs
        {"task_id": 15, "completion": "import sys\nsys.exit(0)"},  # exits before the tests
        {
            "task_id": 16,
            "completion": "class A:\n    __eq__ = lambda s, o: True\ndef text_lowercase_underscore(t):\n    return A()",
        },  # always-equal
        {"task_id": 17, "completion": "import os\nprint(os.listdir('/'))\nopen('/etc/passwd').read()"},
    ]
    samples = _write(tmp_path / "s.jsonl", rows)
    proc = _cli(
        "--samples", str(samples), "--dataset", str(mbpp_path), "--timeout", "2", "--out", str(tmp_path / "r.json")
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "r.json").read_text())
    per = {t["task_id"]: t for t in result["per_task"]}
    assert per[11]["passed"] and result["problems_passed"] == 1 and result["total_problems"] == 7
    assert per[12]["status"] == "failed" and "AssertionError" in per[12]["error"]
    assert per[13]["status"] == "crashed" and per[14]["status"] == "timeout"
    assert not per[15]["passed"] and not per[16]["passed"] and not per[17]["passed"]
    for t in result["per_task"]:
        assert {"task_id", "passed", "tests_passed", "status", "error"} <= set(t)
        assert t["samples"][0]["tests"] and "code" in t["samples"][0]


def test_malformed_samples_line_is_one_clear_error(tmp_path, mbpp_path):
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"task_id": 11, "completion": "x"}\n{"task_id": "eleven", "completion": "x"}\n')
    proc = _cli("--samples", str(bad), "--dataset", str(mbpp_path))
    assert proc.returncode == 2 and f"{bad}:2" in proc.stderr and "Traceback" not in proc.stderr


def test_unbiased_pass_at_k(sb, mbpp_path):
    problems = mbpp.load(str(mbpp_path), split="test")[:2]
    a, b = problems
    wrong = "def nothing():\n    pass"
    samples = (
        [{"task_id": a.task_id, "completion": a.reference}] * 2
        + [{"task_id": a.task_id, "completion": wrong}] * 3
        + [{"task_id": b.task_id, "completion": wrong}] * 5
    )
    r = score_samples(problems, samples, sb, ks=[1, 2, 5])
    # task a: n=5, c=2 -> pass@1 = 0.4, pass@2 = 1 - C(3,2)/C(5,2) = 0.7, pass@5 = 1; task b: 0
    assert r["pass@k"]["pass@1"] == pytest.approx(0.2)
    assert r["pass@k"]["pass@2"] == pytest.approx(0.35)
    assert r["pass@k"]["pass@5"] == pytest.approx(0.5)
    assert r["problems_passed"] == 1 and r["num_samples"] == 10


def test_prompt_formats_and_selection(mbpp_path):
    problems = mbpp.load(str(mbpp_path), split="test")
    assert [p.task_id for p in problems[:3]] == [11, 12, 13] and len(problems) == 500
    p = problems[0]
    doc = mbpp.build_prompt(p, "docstring")
    assert p.text in doc and p.tests[0] in doc and doc.startswith('"""')
    shots = mbpp.few_shot_examples(str(mbpp_path))
    assert [s.task_id for s in shots] == [2, 3, 4]
    three = mbpp.build_prompt(p, "three_shot", shots)
    assert three.count("[BEGIN]") == 4 and three.count("[DONE]") == 3 and shots[0].text in three
    chat = mbpp.build_prompt(p, "chat")
    assert chat[0]["role"] == "user" and p.text in chat[0]["content"]
    first = mbpp.select(problems, 5, "first")
    assert [q.task_id for q in first] == [11, 12, 13, 14, 15]
    r1 = mbpp.select(problems, 5, "random", seed=1)
    assert [q.task_id for q in r1] == [q.task_id for q in mbpp.select(problems, 5, "random", seed=1)]
    assert {mbpp.SPLITS[s] for s in ("train", "validation")} == {(601, 974), (511, 600)}
    assert len(mbpp.load(str(mbpp_path), split="train")) == 374


def test_setup_code_order_for_tasks_367_and_927(sb, mbpp_path):
    problems = {p.task_id: p for p in mbpp.load(str(mbpp_path), split=None) if p.task_id in (367, 927)}
    samples = [{"task_id": t, "completion": p.reference} for t, p in problems.items()]
    r = score_samples(list(problems.values()), samples, sb)
    assert r["problems_passed"] == 2


def _external(path, n, seed, verdict_key):
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = random.Random(seed).sample(rows, n)
    return [{"task_id": r["task_id"], "completion": r["completion"]} for r in rows], [r[verdict_key] for r in rows]


def test_verdicts_agree_with_independent_harnesses(sb, mbpp_path):
    """../shared/data/mbpp_samples: real model completions with verdicts from independent harnesses."""
    base = mbpp_path.parent / "mbpp_samples"
    if not (base / "qwen3_0.6b_gaozhan13.jsonl").is_file():
        pytest.skip(f"external MBPP samples not found in {base}")
    problems = mbpp.load(str(mbpp_path), split="test")
    for name, n, key in (("qwen3_0.6b_gaozhan13.jsonl", 600, "passed"), ("ldb_seeds.jsonl", 400, "recheck_passed")):
        samples, expected = _external(base / name, n, seed=0, verdict_key=key)
        # The files hold the program text exactly as the source harness executed it: run it whole.
        r = score_samples(problems, samples, sb, timeout_s=5, extraction="whole")
        by_task = {}
        for t in r["per_task"]:
            by_task.setdefault(t["task_id"], []).extend(s["passed"] for s in t["samples"])
        ours = [by_task[s["task_id"]].pop(0) for s in samples]
        disagree = [(s["task_id"], e) for s, e, o in zip(samples, expected, ours) if e != o]
        assert not disagree, f"{name}: {len(disagree)} disagreements: {disagree[:10]}"


def test_callback_logs_initial_interval_final_without_dropping_trl_logs(tiny_model_dir, mbpp_path, tmp_path):
    out = tmp_path / "run"
    proc = run_script(
        tiny_grpo_args(
            tiny_model_dir,
            out,
            "--training_args.max_steps=3",
            "--evaluation.enabled=true",
            f"--evaluation.dataset_path={mbpp_path}",
            "--evaluation.num_questions=3",
            "--evaluation.max_new_tokens=8",
            "--evaluation.eval_interval_steps=2",
        ),
        env={"MBPP_EVAL_NUM_QUESTIONS": "2"},
    )  # the command line wins over the environment
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [(r["step"]) for r in rows if "mbpp_eval/pass_rate" in r]
    assert evals == [0, 2, 3]
    train_steps = [r["step"] for r in rows if "rewards/execution/mean" in r]
    assert train_steps == [1, 2, 3]  # TRL's own log at step 2 survived the evaluation at step 2
    ev = next(r for r in rows if "mbpp_eval/pass_rate" in r)
    assert ev["mbpp_eval/total_problems"] == 3 and "mbpp_eval/problems_passed" in ev and "mbpp_eval/eval_time_s" in ev
    files = sorted(p.name for p in (out / "eval_results").iterdir())
    assert files == ["mbpp_step_0_initial.json", "mbpp_step_2_interval.json", "mbpp_step_3_final.json"]
    detail = json.loads((out / "eval_results" / "mbpp_step_3_final.json").read_text())
    sample = detail["per_task"][0]["samples"][0]
    assert {"prompt", "completion", "code", "tests", "status"} <= set(sample)
