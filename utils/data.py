"""Training prompts: a built-in set written by the project, MBPP with its tests, or any JSON/JSONL/HF dataset.

Every row has ``prompt`` (text, or chat messages) and may have ``tests`` (assert statements), ``setup`` (code run
before the tests) and ``entry_points`` (function names that shadow builtins). A malformed row fails with its
file and line.
"""

from __future__ import annotations

import os
from pathlib import Path

from utils.config import ConfigError
from utils.jsonrows import read_rows

# Open-ended code-writing prompts (written for this project). Each asks for a program that prints a result,
# so the execution reward's top tier is reachable and meaningful.
BUILTIN_PROMPTS = [
    "Write a Python program that prints the first 10 square numbers.",
    "Write a Python program that prints the prime numbers below 50.",
    "Write a Python program that prints the Fibonacci numbers below 100.",
    "Write a Python program that reverses the string 'reinforcement' and prints it.",
    "Write a Python program that counts the vowels in 'language models write code' and prints the count.",
    "Write a Python program that prints a 5x5 multiplication table.",
    "Write a Python program that prints the factorial of 12.",
    "Write a Python program that sorts the list [5, 3, 9, 1, 7] without using sorted() and prints it.",
    "Write a Python program that checks whether 'racecar' is a palindrome and prints True or False.",
    "Write a Python program that prints the sum of the digits of 987654321.",
    "Write a Python program that prints the greatest common divisor of 84 and 126.",
    "Write a Python program that converts 255 to binary and prints the result.",
    "Write a Python program that prints each word of 'the quick brown fox' with its length.",
    "Write a Python program that prints the second largest number in [4, 8, 15, 16, 23, 42].",
    "Write a Python program that removes duplicates from [1, 2, 2, 3, 3, 3, 4] keeping order and prints it.",
    "Write a Python program that prints the number of days in each month of 2024.",
    "Write a Python program that prints the transpose of the matrix [[1, 2, 3], [4, 5, 6]].",
    "Write a Python program that counts how often each letter occurs in 'mississippi' and prints the counts.",
    "Write a Python program that prints the first 15 numbers of the FizzBuzz sequence.",
    "Write a Python program that prints all permutations of 'abc'.",
    "Write a Python program that merges the sorted lists [1, 4, 9] and [2, 3, 10] into one sorted list.",
    "Write a Python program that prints the mean and median of [3, 1, 4, 1, 5, 9, 2, 6].",
    "Write a Python program that capitalizes the first letter of every word in 'hello world from python'.",
    "Write a Python program that prints the 20th triangular number.",
    "Write a Python program that prints whether each year in [1900, 2000, 2023, 2024] is a leap year.",
    "Write a Python program that finds the longest word in 'a quick experiment with reinforcement learning'.",
    "Write a Python program that prints the running totals of [2, 4, 6, 8, 10].",
    "Write a Python program that prints a right triangle of stars with 5 rows.",
    "Write a Python program that converts 100 degrees Celsius to Fahrenheit and prints it.",
    "Write a Python program that prints the keys of {'b': 2, 'a': 1, 'c': 3} in sorted order.",
    "Write a Python program that flattens [[1, 2], [3, [4, 5]], 6] and prints the flat list.",
    "Write a Python program that prints the number of set bits in 2023.",
    "Write a Python program that rotates the list [1, 2, 3, 4, 5] left by two places and prints it.",
    "Write a Python program that prints the product of all odd numbers from 1 to 15.",
    "Write a Python program that checks whether 'listen' and 'silent' are anagrams and prints the answer.",
    "Write a Python program that prints the Collatz sequence starting at 27 until it reaches 1.",
    "Write a Python program that prints the words of 'one two three four' in reverse order.",
    "Write a Python program that prints the smallest number divisible by every number from 1 to 10.",
    "Write a Python program that prints the ASCII code of each character in 'RL'.",
    "Write a Python program that prints the intersection of {1, 2, 3, 4} and {3, 4, 5, 6}.",
]
SYSTEM_PROMPT = "You write correct, runnable Python. Answer with one ```python code block."
DEMO_PROMPT = "# Write a Python program\n"


def _chat(text: str, system: str | None) -> list[dict]:
    msgs = [{"role": "system", "content": system}] if system else []
    return [*msgs, {"role": "user", "content": text}]


def _validate(row, where: str) -> dict:
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: each row must be a JSON object with a 'prompt'")
    prompt = row.get("prompt")
    if not (isinstance(prompt, str) and prompt.strip()) and not (
        isinstance(prompt, list) and all(isinstance(m, dict) and "content" in m for m in prompt) and prompt
    ):
        raise ConfigError(f"{where}: 'prompt' must be a non-empty string or a list of chat messages")
    tests = row.get("tests")
    if tests is not None and not (isinstance(tests, list) and all(isinstance(t, str) for t in tests)):
        raise ConfigError(f"{where}: 'tests' must be a list of assert statements (strings)")
    if row.get("setup") is not None and not isinstance(row["setup"], str):
        raise ConfigError(f"{where}: 'setup' must be a string of code")
    out = {"prompt": prompt}
    if tests is not None:
        out["tests"] = tests
        out["setup"] = row.get("setup") or ""
        out["entry_points"] = list(row.get("entry_points") or [])
    return out


def load_rows_from_file(path: str) -> list[dict]:
    p = Path(os.path.expanduser(path))
    if not p.is_file():
        raise ConfigError(f"data.source: file not found: {p}")
    return [_validate(row, where) for where, row in read_rows(p, ConfigError)]


def build_rows(data_cfg, offline: bool = False) -> list[dict]:
    """Rows for ``data.source``: builtin | demo | mbpp | a .json/.jsonl file | a Hugging Face dataset id."""
    source = data_cfg.source
    chat = data_cfg.chat_template
    system = data_cfg.system_prompt
    if source == "builtin":
        rows = [{"prompt": _chat(t, system or SYSTEM_PROMPT) if chat else f"{t}\n```python\n"} for t in BUILTIN_PROMPTS]
    elif source == "demo":
        rows = [{"prompt": DEMO_PROMPT}]
    elif source == "mbpp":
        from evaluation import mbpp

        try:
            problems = mbpp.load(data_cfg.path, sanitized=data_cfg.sanitized, split=data_cfg.split)
        except mbpp.DatasetError as exc:
            raise ConfigError(f"data: {exc}") from None
        rows = []
        for p in problems:
            prompt = mbpp.prompt_chat(p) if chat else mbpp.prompt_docstring(p)
            if chat and system:
                prompt = [{"role": "system", "content": system}, *prompt]
            rows.append(
                {"prompt": prompt, "tests": p.tests, "setup": p.check_setup(), "entry_points": sorted(p.entry_points)}
            )
    elif source.endswith((".json", ".jsonl")):
        rows = load_rows_from_file(source)
    else:
        rows = _hub_rows(source, data_cfg, offline)
    if not rows:
        raise ConfigError(f"data.source {source!r} produced no rows")
    return rows


def _hub_rows(name: str, data_cfg, offline: bool) -> list[dict]:
    from datasets import load_dataset

    try:
        ds = load_dataset(name, split=data_cfg.split)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types; all mean "not available"
        from utils.offline import missing_message

        if offline:
            raise ConfigError(missing_message("dataset", name, None, None)) from None
        raise ConfigError(f"data.source: cannot load dataset {name!r}: {str(exc).splitlines()[0]}") from None
    col = data_cfg.prompt_column
    if col not in ds.column_names:
        raise ConfigError(
            f"data.source {name!r} has no column {col!r} (columns: {', '.join(ds.column_names)}); "
            "set data.prompt_column"
        )
    rows = []
    for i, r in enumerate(ds):
        row = dict(r)
        row["prompt"] = row.pop(col)
        rows.append(_validate(row, f"{name}[{i}]"))
    return rows


def build_dataset(data_cfg, offline: bool = False, min_rows: int = 0):
    """A ``datasets.Dataset``; a prompt set smaller than ``min_rows`` (the unique prompts GRPO samples per
    generation batch) is repeated up to it. Longer runs simply take more epochs."""
    from datasets import Dataset

    rows = build_rows(data_cfg, offline)
    if data_cfg.num_samples:
        rows = rows[: data_cfg.num_samples]
    if min_rows and len(rows) < min_rows:
        rows = (rows * (min_rows // len(rows) + 1))[:min_rows]
    return Dataset.from_list(rows)
