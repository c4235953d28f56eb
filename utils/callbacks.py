"""Trainer callbacks shared by every script."""

from __future__ import annotations

import json
import math
import os

from transformers import TrainerCallback


class MetricsJsonlCallback(TrainerCallback):
    """Appends every logged step to ``output_dir/metrics.jsonl`` (one JSON object per line, with ``step``).

    Resumed runs append to the same file, so the curve continues; ``utils.plots`` reads it.
    """

    def __init__(self, output_dir: str, filename: str = "metrics.jsonl"):
        self.path = os.path.join(output_dir, filename)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        row = {"step": state.global_step}
        for k, v in logs.items():
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            if isinstance(v, (int, float, str, bool)) or v is None:
                row[k] = v
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def read_metrics(output_dir: str, filename: str = "metrics.jsonl") -> list[dict]:
    path = os.path.join(output_dir, filename)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
