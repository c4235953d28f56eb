"""MBPP: loading (Hub or local files), problem selection, prompts, program assembly and scoring.

    python -m evaluation.mbpp --samples samples.jsonl [--dataset PATH] [--split test] [--sanitized] --out r.json
    python -m evaluation.mbpp --model PATH_OR_ID [--num-questions N] [--n-samples 10 --k 1 10] --out r.json

Splits (Austin et al. 2021; the HF ``full`` config): prompt 1-10, test 11-510, validation 511-600, train
601-974; the sanitized subset (427 tasks) uses the same id ranges. A program is the extracted code, then
``test_setup_code`` (tasks 367 and 927 build trees with the solution's own ``Node`` class), then the tests;
the sanitized set runs ``test_imports`` before the tests. Scoring goes through ``Sandbox.check``.
"""

from __future__ import annotations

import functools
import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from utils.jsonrows import read_rows

SPLITS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}
HUB_ID = "google-research-datasets/mbpp"
FEW_SHOT_IDS = (2, 3, 4)  # the paper's 3-shot prompt


class DatasetError(ValueError):
    """MBPP could not be loaded: the message names the file (and line) and the fix."""


@dataclass
class Problem:
    task_id: int
    text: str
    reference: str
    tests: list[str]
    setup: str = ""
    challenge_tests: list[str] = field(default_factory=list)
    test_imports: list[str] = field(default_factory=list)

    @functools.cached_property
    def entry_points(self) -> frozenset[str]:
        from sandbox import entry_points_from

        return entry_points_from(self.reference, self.tests)

    def check_setup(self) -> str:
        """Code run after the candidate and before the tests."""
        return "\n".join([*self.test_imports, self.setup]).strip()


def _row_to_problem(row: dict, sanitized: bool, where: str) -> Problem:
    try:
        return Problem(
            task_id=int(row["task_id"]),
            text=str(row["prompt"] if sanitized else row["text"]),
            reference=str(row["code"]),
            tests=[str(t) for t in row["test_list"]],
            setup=str(row.get("test_setup_code") or ""),
            challenge_tests=[str(t) for t in row.get("challenge_test_list") or []],
            test_imports=[str(t) for t in row.get("test_imports") or []],
        )
    except (KeyError, TypeError, ValueError) as exc:
        need = "task_id, prompt, code, test_list" if sanitized else "task_id, text, code, test_list"
        raise DatasetError(
            f"{where}: malformed MBPP row ({type(exc).__name__}: {exc}); expected fields {need}"
        ) from None


def default_path() -> str | None:
    return os.environ.get("MBPP_DATASET_PATH") or None


def _local_file(path: str, sanitized: bool) -> Path:
    p = Path(os.path.expanduser(path))
    if p.is_dir():
        p = p / ("sanitized-mbpp.json" if sanitized else "mbpp.jsonl")
    if not p.is_file():
        want = "sanitized-mbpp.json" if sanitized else "mbpp.jsonl"
        raise DatasetError(f"MBPP file not found: {p} (expected {want} or a folder holding it)")
    return p


def load_local(path: str, sanitized: bool = False) -> list[Problem]:
    p = _local_file(path, sanitized)
    problems = []
    for where, row in read_rows(p, DatasetError):
        # a .jsonl of sanitized rows (prompt, no text) is read as sanitized too
        is_sanitized = sanitized or (isinstance(row, dict) and "prompt" in row and "text" not in row)
        problems.append(_row_to_problem(row, is_sanitized, where))
    return problems


def load_hub(sanitized: bool = False, cache_dir: str | None = None) -> list[Problem]:
    from datasets import concatenate_datasets, load_dataset

    config = "sanitized" if sanitized else "full"
    try:
        ds = load_dataset(HUB_ID, config, cache_dir=cache_dir)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types; all mean "not available"
        raise DatasetError(
            f"could not load {HUB_ID} ({config}) from the Hub or its cache: {str(exc).splitlines()[0]}. "
            "Offline, set evaluation.dataset_path / MBPP_DATASET_PATH to a folder with mbpp.jsonl, or run "
            "`python -m utils.prefetch --config <your config>` on a machine with internet."
        ) from None
    rows = concatenate_datasets(list(ds.values()))
    return [_row_to_problem(dict(r), sanitized, f"{HUB_ID}[{i}]") for i, r in enumerate(rows)]


def load(path: str | None = None, sanitized: bool = False, split: str | None = "test") -> list[Problem]:
    """MBPP problems of a split (by task_id ranges), sorted by task_id; all splits for ``split=None``."""
    path = path or default_path()
    problems = load_local(path, sanitized) if path else load_hub(sanitized)
    if split is not None:
        if split not in SPLITS:
            raise DatasetError(f"unknown MBPP split {split!r}; valid: {', '.join(SPLITS)}")
        lo, hi = SPLITS[split]
        problems = [p for p in problems if lo <= p.task_id <= hi]
    return sorted(problems, key=lambda p: p.task_id)


def select(problems: Sequence[Problem], n: int | None, how: str = "first", seed: int = 0) -> list[Problem]:
    """The first ``n`` by task_id (the same across runs) or a seeded random ``n``."""
    if n is None or n <= 0 or n >= len(problems):
        return list(problems)
    if how == "first":
        return list(problems[:n])
    if how == "random":
        return sorted(random.Random(seed).sample(list(problems), n), key=lambda p: p.task_id)
    raise DatasetError(f"unknown selection {how!r}; valid: first, random")


# ------------------------------------------------------------------------------------------ prompts
def prompt_docstring(problem: Problem) -> str:
    """The seed system's format: the problem and its first test in a docstring, then code."""
    return f'"""\n{problem.text}\n{problem.tests[0]}\n"""\n'


def prompt_three_shot(problem: Problem, shots: Sequence[Problem]) -> str:
    """The original paper's prompt: three solved examples (tasks 2, 3, 4), then the problem."""

    def block(p: Problem) -> str:
        tests = "\n".join(p.tests)
        return (
            f"You are an expert Python programmer, and here is your task: {p.text} "
            f"Your code should pass these tests:\n\n{tests}\n"
        )

    parts = [f"{block(s)}[BEGIN]\n{s.reference.strip()}\n[DONE]\n" for s in shots]
    parts.append(f"{block(problem)}[BEGIN]\n")
    return "\n".join(parts)


def prompt_chat(problem: Problem) -> list[dict]:
    """Chat messages for instruct models; apply the tokenizer's chat template to them."""
    return [
        {
            "role": "user",
            "content": f"{problem.text}\nYour code should pass this test:\n{problem.tests[0]}\n"
            "Write the Python function in a ```python code block.",
        }
    ]


def build_prompt(problem: Problem, fmt: str, shots: Sequence[Problem] = ()):
    if fmt == "docstring":
        return prompt_docstring(problem)
    if fmt == "three_shot":
        if len(shots) != 3:
            raise DatasetError("the three_shot prompt needs MBPP tasks 2, 3 and 4 (the prompt split)")
        return prompt_three_shot(problem, shots)
    if fmt == "chat":
        return prompt_chat(problem)
    raise DatasetError(f"unknown prompt_format {fmt!r}; valid: docstring, three_shot, chat")


def few_shot_examples(path: str | None = None, sanitized: bool = False) -> list[Problem]:
    by_id = {p.task_id: p for p in load(path, sanitized=False, split="prompt")}
    return [by_id[i] for i in FEW_SHOT_IDS if i in by_id]


# ------------------------------------------------------------------------------------------ CLI
def read_samples(path: str) -> list[dict]:
    """``{"task_id": int, "completion": str}`` per line (several lines per task for pass@k)."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"samples file not found: {p}")
    out = []
    for where, row in read_rows(p, DatasetError, lines=True):
        if not isinstance(row, dict) or not isinstance(row.get("completion"), str):
            raise DatasetError(f'{where}: each line needs "task_id" (int) and "completion" (str)')
        try:
            task_id = int(row["task_id"])
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f'{where}: "task_id" must be an integer MBPP task id') from None
        out.append({"task_id": task_id, "completion": row["completion"]})
    if not out:
        raise DatasetError(f"{p}: no samples")
    return out


def _generate_cli(args, problems: list[Problem]) -> list[dict]:
    from evaluation.generation import hf_generate, prompts_for, stops_for
    from utils.config import ModelSection
    from utils.offline import load_causal_lm, load_tokenizer

    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    mcfg = ModelSection(name_or_path=args.model, dtype=args.dtype)
    tok = load_tokenizer(mcfg, offline)
    shots = few_shot_examples(args.dataset) if args.prompt_format == "three_shot" else []
    prompts = prompts_for(problems, args.prompt_format, tok, shots)
    stops = stops_for(args.prompt_format)
    if args.vllm:
        from vllm import LLM, SamplingParams  # the gpu extra

        llm = LLM(model=args.model, dtype=args.dtype if args.dtype != "float32" else "auto")
        params = SamplingParams(
            n=args.n_samples, temperature=args.temperature, max_tokens=args.max_new_tokens, stop=list(stops) or None
        )
        outs = llm.generate(prompts, params)
        comps = [[o.text for o in out.outputs] for out in outs]
    else:
        import torch

        model = load_causal_lm(mcfg, offline)
        if torch.cuda.is_available():
            model = model.to("cuda")
        comps = hf_generate(
            model,
            tok,
            prompts,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            n=args.n_samples,
            batch_size=args.batch_size,
            stops=stops,
        )
    return [
        {"task_id": p.task_id, "prompt": pr, "completion": c} for p, pr, cs in zip(problems, prompts, comps) for c in cs
    ]


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m evaluation.mbpp", description="Score MBPP completions.")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--samples", help='JSONL of {"task_id": int, "completion": str}')
    src.add_argument("--model", help="generate completions with this model (Hub id or local folder)")
    parser.add_argument(
        "--dataset",
        default=default_path(),
        help="mbpp.jsonl / sanitized-mbpp.json or their folder (default: $MBPP_DATASET_PATH, else the Hub)",
    )
    parser.add_argument("--split", default="test", choices=[*SPLITS, "all"])
    parser.add_argument("--sanitized", action="store_true")
    parser.add_argument("--challenge", action="store_true", help="also run challenge_test_list")
    parser.add_argument("--num-questions", type=int, default=None)
    parser.add_argument("--selection", default="first", choices=["first", "random"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompt-format", default="docstring", choices=["docstring", "three_shot", "chat"])
    parser.add_argument("--n-samples", type=int, default=1)
    parser.add_argument("--k", type=int, nargs="+", default=[1])
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--vllm", action="store_true", help="generate with vLLM (gpu extra)")
    parser.add_argument(
        "--extraction",
        default="auto",
        choices=["auto", "first_block", "last_block", "whole"],
        help="how to get code from a completion: auto = a fenced block if any, else the text; "
        "whole = run the completion exactly as written",
    )
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (default: the usable cores)")
    parser.add_argument("--out", help="results JSON path")
    args = parser.parse_args(argv)

    from evaluation.scoring import score_samples, summary_line
    from sandbox import Sandbox
    from utils.config import ConfigError

    try:
        problems = load(args.dataset, args.sanitized, None if args.split == "all" else args.split)
        if args.samples:
            samples = read_samples(args.samples)
            wanted = {s["task_id"] for s in samples}
            problems = [p for p in problems if p.task_id in wanted]
            missing = wanted - {p.task_id for p in problems}
            if missing:
                raise DatasetError(f"{args.samples}: task_ids not in the {args.split} split: {sorted(missing)[:10]}")
        else:
            problems = select(problems, args.num_questions, args.selection, args.seed)
            samples = _generate_cli(args, problems)
    except (DatasetError, ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from sandbox import default_workers

    with Sandbox(workers=args.workers or default_workers(), timeout_s=args.timeout) as sb:
        result = score_samples(
            problems,
            samples,
            sb,
            extraction=args.extraction,
            include_challenge=args.challenge,
            ks=args.k,
            progress=True,
        )
    print(summary_line(result))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
