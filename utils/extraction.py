"""Getting the program out of a completion: fenced blocks, the whole text, or stop sequences."""

from __future__ import annotations

import re

POLICIES = ("first_block", "last_block", "whole", "auto")
# A fenced block: ```python / ```py / ``` ... ```; an unterminated last block runs to the end of the text.
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)

# Where a base model's continuation of a docstring prompt stops being the solution.
DEFAULT_STOPS = ('\n"""', "\nassert ", "\nif __name__", "\nprint(", "\n# Test", "\n# test", "\n```", "\n[DONE]")


def fenced_blocks(text: str) -> list[str]:
    return [m.group(1) for m in _FENCE.finditer(text)]


def has_fenced_block(text: str) -> bool:
    return bool(_FENCE.search(text))


def extract_code(text: str, policy: str = "auto") -> str:
    """``first_block``/``last_block``: that fenced block ('' when there is none); ``whole``: the text;
    ``auto``: code up to a closing fence when the prompt opened the block, else the first fenced block,
    else the whole text."""
    if policy == "whole":
        return text
    blocks = fenced_blocks(text)
    if policy == "first_block":
        return blocks[0] if blocks else ""
    if policy == "last_block":
        return blocks[-1] if blocks else ""
    if policy == "auto":
        head, fence, _ = text.partition("```")
        if fence and head.strip():  # the prompt opened the block: the code runs up to its closing fence
            return head
        return blocks[0] if blocks else text
    raise ValueError(f"unknown code extraction policy {policy!r}; valid: {', '.join(POLICIES)}")


def truncate_at_stops(text: str, stops=DEFAULT_STOPS) -> str:
    cut = len(text)
    for s in stops:
        i = text.find(s)
        if i != -1:
            cut = min(cut, i)
    return text[:cut]
