"""Reading rows from .jsonl / .json files, each with a location for error messages (``file:line``)."""

from __future__ import annotations

import json
from pathlib import Path


def read_rows(
    path: str | Path, error: type[Exception] = ValueError, lines: bool | None = None
) -> list[tuple[str, object]]:
    """``(where, row)`` for every row: one JSON value per line of a ``.jsonl`` file (blank lines skipped), or
    the items of a JSON list in any other file (``lines`` forces either reading). Invalid JSON raises
    ``error`` naming the file and line."""
    p = Path(path)
    if lines or (lines is None and p.suffix == ".jsonl"):
        out = []
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    out.append((f"{p}:{n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise error(f"{p}:{n}: invalid JSON ({exc.msg})") from None
        return out
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise error(f"{p}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise error(f"{p}: expected a JSON list of rows (or one object per line in a .jsonl file)")
    return [(f"{p} (item {i})", row) for i, row in enumerate(data)]
